#!/usr/bin/env bash
# Tidepool's cuda device against PyTorch on one GPU, in one run:
#
#   bash bench/gpu/run.sh                          # from the repository root
#   bash bench/gpu/run.sh --iterations 100 --models resnet18
#
# 1. checks the machine: a GPU, nvcc, CMake >= 3.25, Python with a CUDA
#    build of PyTorch;
# 2. finds cuDNN (and cuBLAS): the CUDA toolkit's, the system's, or else the
#    ones PyTorch's pip packages bring (nvidia.cudnn, nvidia.cublas), which
#    are then passed to CMake and put on LD_LIBRARY_PATH;
# 3. builds Tidepool with -DTIDEPOOL_CUDA=ON for this GPU's architecture
#    (build-gpu/, Release, no tests, no GUI) and the pinned-copy probe
#    bench/gpu/copy_bandwidth.cu;
# 4. runs bench/gpu/compare_pytorch.py, which trains ResNet-18 and VGG-16
#    (CIFAR inputs, batch 128, fp32) with Tidepool and PyTorch and prints
#    one table (also written to runs/bench-gpu-<time>/results.md).
#
# Environment: PYTHON (default python3), BUILD (default build-gpu), OUT
# (default runs/bench-gpu-<time>), CUDA_HOME (default: nvcc's folder), and
# CUDNN_ROOT / CUBLAS_ROOT to force a cuDNN or cuBLAS. Any other arguments
# go to compare_pytorch.py (see its --help).
set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/../.."
ROOT=$(pwd)
PYTHON=${PYTHON:-python3}
BUILD=${BUILD:-$ROOT/build-gpu}
OUT=${OUT:-$ROOT/runs/bench-gpu-$(date +%Y%m%d-%H%M%S)}

log() { printf '[bench/gpu] %s\n' "$*" >&2; }
die() { printf '[bench/gpu] error: %s\n' "$*" >&2; exit 1; }

# ---------------------------------------------------------------- the machine
if ! command -v nvcc >/dev/null 2>&1; then
  for candidate in "${CUDA_HOME:-}" /usr/local/cuda /usr/local/cuda-*; do
    if [[ -n "$candidate" && -x "$candidate/bin/nvcc" ]]; then
      export PATH="$candidate/bin:$PATH"
      break
    fi
  done
fi
command -v nvcc >/dev/null 2>&1 || die "nvcc not found: install the CUDA toolkit or set CUDA_HOME"
CUDA_HOME=${CUDA_HOME:-$(cd "$(dirname "$(command -v nvcc)")/.." && pwd)}
NVCC_VERSION=$(nvcc --version | sed -n 's/.*release \([0-9][0-9]*\.[0-9][0-9]*\).*/\1/p')
log "nvcc $NVCC_VERSION in $CUDA_HOME"

if command -v nvidia-smi >/dev/null 2>&1; then
  nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader >&2 || true
  CC=$(nvidia-smi --query-gpu=compute_cap --format=csv,noheader 2>/dev/null | head -n1 | tr -d ' .' || true)
else
  log "nvidia-smi not found; assuming an H100/H200 (sm_90)"
  CC=""
fi
[[ "$CC" =~ ^[0-9]+$ ]] || CC=90

command -v cmake >/dev/null 2>&1 || die "cmake not found (3.25 or newer is needed)"
CMAKE_VERSION=$(cmake --version | head -n1 | sed 's/[^0-9.]*\([0-9.]*\).*/\1/')
if ! printf '%s\n3.25\n' "$CMAKE_VERSION" | sort -V -C -r 2>/dev/null; then
  die "cmake $CMAKE_VERSION is older than 3.25 (e.g. '$PYTHON -m pip install --user cmake')"
fi
GENERATOR=()
command -v ninja >/dev/null 2>&1 && GENERATOR=(-G Ninja)

"$PYTHON" - <<'EOF' || die "Python needs PyTorch with CUDA (and a visible GPU): $PYTHON -c 'import torch'"
import sys, torch
if not torch.cuda.is_available():
    sys.exit("torch.cuda.is_available() is False")
print(f"[bench/gpu] PyTorch {torch.__version__}, CUDA {torch.version.cuda}, "
      f"cuDNN {torch.backends.cudnn.version()}, GPU {torch.cuda.get_device_name(0)}", file=sys.stderr)
EOF
TORCH_CUDA=$("$PYTHON" -c 'import torch; print(torch.version.cuda or "")')

# -------------------------------------------------------------- cuDNN, cuBLAS
# A library is "found" where its header and a loadable .so sit together.
has_cudnn() { [[ -f "$1/include/cudnn.h" ]] && compgen -G "$1/lib*/libcudnn.so*" >/dev/null; }
pip_package_dir() {  # nvidia.cudnn / nvidia.cublas are namespace packages: use __path__
  "$PYTHON" -c "import importlib, sys; m = importlib.import_module('$1'); print(list(m.__path__)[0])" 2>/dev/null || true
}

CMAKE_ARGS=()
LIB_DIRS=()
if [[ -n "${CUDNN_ROOT:-}" ]]; then
  has_cudnn "$CUDNN_ROOT" || die "CUDNN_ROOT=$CUDNN_ROOT has no include/cudnn.h and lib*/libcudnn.so*"
elif has_cudnn "$CUDA_HOME" || has_cudnn "$CUDA_HOME/targets/x86_64-linux" || [[ -f /usr/include/cudnn.h ]] ||
     compgen -G "/usr/include/*/cudnn.h" >/dev/null; then
  log "cuDNN: the system's"
else
  CUDNN_ROOT=$(pip_package_dir nvidia.cudnn)
  if [[ -z "$CUDNN_ROOT" ]] || ! has_cudnn "$CUDNN_ROOT"; then
    die "no cuDNN: install it, or 'pip install nvidia-cudnn-cu${NVCC_VERSION%%.*}', or set CUDNN_ROOT"
  fi
  log "cuDNN: PyTorch's pip package in $CUDNN_ROOT"
fi
if [[ -n "${CUDNN_ROOT:-}" ]]; then
  CMAKE_ARGS+=(-DCUDNN_ROOT="$CUDNN_ROOT")
  for d in "$CUDNN_ROOT"/lib*; do LIB_DIRS+=("$d"); done
  # The pip cuDNN is built for one CUDA major version; warn when it is not nvcc's.
  if [[ -n "$TORCH_CUDA" && "${TORCH_CUDA%%.*}" != "${NVCC_VERSION%%.*}" ]]; then
    log "warning: cuDNN from pip is for CUDA $TORCH_CUDA but nvcc is $NVCC_VERSION; if Tidepool cannot" \
        "load it, install the CUDA ${TORCH_CUDA%%.*} toolkit or a cuDNN for CUDA ${NVCC_VERSION%%.*}"
  fi
fi
if ! compgen -G "$CUDA_HOME/lib*/libcublas.so*" >/dev/null &&
   ! compgen -G "$CUDA_HOME/targets/x86_64-linux/lib/libcublas.so*" >/dev/null; then
  CUBLAS_ROOT=${CUBLAS_ROOT:-$(pip_package_dir nvidia.cublas)}
  [[ -n "$CUBLAS_ROOT" ]] || die "no cuBLAS in $CUDA_HOME and no nvidia.cublas pip package"
  log "cuBLAS: PyTorch's pip package in $CUBLAS_ROOT"
  CMAKE_ARGS+=(-DCUBLAS_ROOT="$CUBLAS_ROOT")
  for d in "$CUBLAS_ROOT"/lib*; do LIB_DIRS+=("$d"); done
fi
if ((${#LIB_DIRS[@]})); then
  LD_LIBRARY_PATH="$(IFS=:; echo "${LIB_DIRS[*]}")${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
  export LD_LIBRARY_PATH
  log "LD_LIBRARY_PATH=$LD_LIBRARY_PATH"
fi

# --------------------------------------------------------------------- build
log "building Tidepool with CUDA for sm_$CC in $BUILD"
if ! cmake -S "$ROOT" -B "$BUILD" ${GENERATOR[@]+"${GENERATOR[@]}"} -DCMAKE_BUILD_TYPE=Release \
      -DCMAKE_CUDA_COMPILER="$(command -v nvcc)" -DCMAKE_CUDA_ARCHITECTURES="$CC" \
      -DTIDEPOOL_CUDA=ON -DTIDEPOOL_TESTS=OFF -DTIDEPOOL_BENCH=OFF -DTIDEPOOL_GUI=OFF \
      ${CMAKE_ARGS[@]+"${CMAKE_ARGS[@]}"} >"$BUILD.configure.log" 2>&1; then
  tail -n 30 "$BUILD.configure.log" >&2
  die "configuring failed (log: $BUILD.configure.log); scripts/install-deps.sh installs the other dependencies"
fi
grep -E "CUDA backend" "$BUILD.configure.log" >&2 || true
cmake --build "$BUILD" --target tidepool -j "$(nproc)" >"$BUILD.build.log" 2>&1 ||
  { tail -n 40 "$BUILD.build.log" >&2; die "building failed (log: $BUILD.build.log)"; }
nvcc -O2 -arch="sm_$CC" -o "$BUILD/copy_bandwidth" "$ROOT/bench/gpu/copy_bandwidth.cu"
"$BUILD/app/tidepool" models >/dev/null || die "the freshly built tidepool does not start"

# ------------------------------------------------------------------ measure
mkdir -p "$OUT"
log "results go to $OUT"
"$PYTHON" "$ROOT/bench/gpu/compare_pytorch.py" --tidepool "$BUILD/app/tidepool" \
  --copy-bandwidth "$BUILD/copy_bandwidth" --out "$OUT" "$@"
