#!/usr/bin/env bash
# Installs the Debian packages Tidepool builds against, skipping those
# already present (so it is quick on a machine that has them).
set -euo pipefail

packages=(
  build-essential cmake ninja-build pkg-config
  python3                     # the layering and docs checks, the fuzz seeds, examples/make_snapshots.py
  libdnnl-dev                 # oneDNN: the cpu device's kernels
  ocl-icd-opencl-dev          # dnnl-config.cmake looks for OpenCL (a recommends we do not get otherwise)
  libopencv-dev               # JPEG decoding (ImageNet) and the --batch pictures
  zlib1g-dev                  # gzipped IDX files (Fashion-MNIST)
  dataset-fashion-mnist       # the real dataset --dataset fashion-mnist reads by default
  clang libclang-rt-14-dev    # libFuzzer (fuzz/): clang and its runtime, which holds libFuzzer
  libcli11-dev nlohmann-json3-dev
  libeigen3-dev libnlopt-dev libnlopt-cxx-dev   # Gaussian processes and fits (AccUDNN, AutoSwap's Bayesian mix)
  coinor-libcbc-dev           # COIN-OR CBC: plan --optimal's integer programme
  libgtest-dev libgmock-dev libbenchmark-dev
  libopenmpi-dev openmpi-bin           # data-parallel training across processes (mpirun)
  libimgui-dev libglfw3-dev libgl-dev   # the window (Dear ImGui on GLFW, OpenGL 3)
  xvfb xauth libgl1-mesa-dri            # the window headless: screenshots and the gui tests
)

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if ((${#missing[@]})); then
  echo "tidepool: installing ${missing[*]}"
  sudo=""
  [ "$(id -u)" -ne 0 ] && sudo="sudo"
  $sudo apt-get update -q
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -q --no-install-recommends "${missing[@]}"
fi
