#!/usr/bin/env bash
# Packs what scripts/gpu-check.sh --prebuilt needs on a GPU machine that lacks
# the build's dependencies (oneDNN, OpenCV, Open MPI, ...): the tidepool binary
# and tidepool_gpu_tests from a build with the CUDA backend, every shared library
# they load except glibc's and CUDA's own (the GPU machine brings those), and
# Open MPI's launcher, plugins and help texts for the mpirun test.
#
#   scripts/gpu-bundle.sh [BUILD_DIR] [OUT.tar.xz]     defaults: build .gpu/bundle.tar.xz
#
# The GPU machine's glibc must be at least this machine's (Debian 12: 2.36).
set -euo pipefail
build=${1:-build}
out=${2:-.gpu/bundle.tar.xz}
for f in "$build/app/tidepool" "$build/tests/tidepool_gpu_tests"; do
  [[ -x $f ]] || { echo "gpu-bundle: $f is missing: build with -DTIDEPOOL_CUDA=ON first" >&2; exit 1; }
done

stage=$(mktemp -d)
trap 'rm -rf "$stage"' EXIT
mkdir -p "$stage/bin" "$stage/lib" "$stage/mpi/usr/bin" "$stage/mpi/usr/lib/x86_64-linux-gnu" "$stage/mpi/usr/share" "$stage/mpi/etc"
cp "$build/app/tidepool" "$build/tests/tidepool_gpu_tests" "$stage/bin/"

# Open MPI: the network transports a single machine does not use stay behind
# (their libraries are large and their plugins fail to load quietly).
mpi_plugins=()
if [[ -x /usr/bin/orterun ]]; then
  cp -a /usr/lib/x86_64-linux-gnu/openmpi "$stage/mpi/usr/lib/x86_64-linux-gnu/"
  [[ -d /usr/lib/x86_64-linux-gnu/pmix2 ]] && cp -a /usr/lib/x86_64-linux-gnu/pmix2 "$stage/mpi/usr/lib/x86_64-linux-gnu/"
  # Static archives and headers are for building against MPI, not for running it.
  find "$stage/mpi" \( -name '*.a' -o -name '*.la' -o -name include \) -prune -exec rm -rf {} +
  find "$stage/mpi" -name '*.so*' | grep -E 'ofi|ucx|psm|verbs|openib|ucc|hcoll|fca|mxm|portals' | xargs -r rm -f
  cp -a /usr/share/openmpi "$stage/mpi/usr/share/"
  [[ -d /usr/share/pmix ]] && cp -a /usr/share/pmix "$stage/mpi/usr/share/"
  [[ -d /etc/openmpi ]] && cp -a /etc/openmpi "$stage/mpi/etc/"
  cp -L /usr/bin/orterun /usr/bin/orted "$stage/mpi/usr/bin/"
  mapfile -t mpi_plugins < <(find "$stage/mpi" -name '*.so*' -type f)
fi

# The libraries they load, less glibc's (the GPU machine's own must be used) and
# CUDA's (the GPU machine's driver decides which runtime fits).
ldd "$stage/bin/tidepool" "$stage/bin/tidepool_gpu_tests" "$stage/mpi/usr/bin/"* "${mpi_plugins[@]}" 2>/dev/null |
  awk '/=> \//{print $3}' | sort -u |
  grep -v -E '/(libc|libm|libstdc\+\+|libgcc_s|libpthread|libdl|librt|ld-linux[^/]*)\.so' |
  grep -v -E '/(libcud|libcublas|libnccl|libcuda)' |
  xargs -r -I{} cp -L {} "$stage/lib/"

mkdir -p "$(dirname "$out")"
echo "gpu-bundle: packing $(du -sh "$stage" | cut -f1) into $out (xz, a minute or two)"
tar -C "$stage" -cf - . | xz -T0 -6 > "$out"
echo "gpu-bundle: $out, $(du -h "$out" | cut -f1)"
