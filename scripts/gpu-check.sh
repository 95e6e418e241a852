#!/usr/bin/env bash
# The one command a lent GPU runs first: versions, the gpu tests one suite per
# process, resnet18 trained on the cuda device in every precision and offload
# mode with the parameter checksums compared, `--algo p` twice in separate
# processes, a short run under compute-sanitizer, a measured profile and a
# throughput table beside the sim's. Everything lands in one report folder
# (default gpu-report/), with SUMMARY.txt on top.
#
#   scripts/gpu-check.sh --prebuilt BUNDLE.tar.xz [--report DIR] [--budget-s S]
#       run from binaries built elsewhere (scripts/gpu-bundle.sh makes the
#       bundle: tidepool, tidepool_gpu_tests and the shared libraries they need
#       beyond glibc and CUDA's own); for GPU machines without the build's
#       dependencies
#   scripts/gpu-check.sh [--build DIR]
#       run from a build with the CUDA backend (default build/, the default
#       preset's); where DIR has no build yet, configure and build there only
#       what the check runs, for this GPU's architecture (needs the packages
#       scripts/install-deps.sh installs)
#   scripts/gpu-check.sh --dry-run [--build DIR]
#       check that the build has the CUDA backend and the gpu tests, and
#       print every step without running it (the suite runs this: GpuCheck.DryRun)
#
# Each step has its own timeout and the whole check a budget (default 480 s):
# a step that would start past the budget is skipped and says so.
set -uo pipefail

report=gpu-report
build=build
bundle=""
budget_s=480
dry_run=0
needs_value() { [[ $# -ge 2 && -n "$2" ]] || { echo "gpu-check: $1 needs a value (see --help)" >&2; exit 2; }; }
while [[ $# -gt 0 ]]; do
  case "$1" in
    --prebuilt|--report|--build|--budget-s) needs_value "$@" ;;
  esac
  case "$1" in
    --prebuilt) bundle="$2"; shift 2 ;;
    --report) report="$2"; shift 2 ;;
    --build) build="$2"; shift 2 ;;
    --budget-s) budget_s="$2"; shift 2 ;;
    --dry-run) dry_run=1; shift ;;
    -h|--help) sed -n '2,24p' "$0"; exit 0 ;;
    *) echo "gpu-check: unknown argument '$1' (see --help)" >&2; exit 2 ;;
  esac
done

start=$(date +%s)
repo=$(pwd)
if [[ $dry_run == 0 ]]; then
  mkdir -p "$report"
  report=$(cd "$report" && pwd)
  summary="$report/SUMMARY.txt"
  : > "$summary"
fi
say() { if [[ $dry_run == 1 ]]; then echo "$*"; else echo "$*" | tee -a "$summary"; fi; }
elapsed() { echo $(( $(date +%s) - start )); }

# step NAME TIMEOUT_S COMMAND...: runs COMMAND with its output in NAME.log,
# unless the budget would be passed; records the status in SUMMARY.txt.
step() {
  local name="$1" limit="$2"; shift 2
  if [[ $dry_run == 1 ]]; then echo "[$name, ${limit}s] $*"; return 0; fi
  if (( $(elapsed) >= budget_s )); then say "SKIP  $name (budget: $(elapsed)s used of ${budget_s}s)"; return 0; fi
  local left=$(( budget_s + 45 - $(elapsed) ))
  (( limit > left )) && limit=$left
  local t0=$(date +%s)
  timeout -k 10 "$limit" "$@" > "$report/$name.log" 2>&1
  local rc=$?
  local word=PASS; [[ $rc != 0 ]] && word="FAIL rc=$rc"; [[ $rc == 124 || $rc == 137 ]] && word="TIMEOUT ${limit}s"
  say "$word  $name ($(( $(date +%s) - t0 ))s)"
  return $rc
}

# --- binaries -------------------------------------------------------------------
if [[ -n "$bundle" && $dry_run == 0 ]]; then
  mkdir -p /opt/tidepool && tar -C /opt/tidepool -xJf "$bundle" || { say "FAIL  unpacking $bundle"; exit 1; }
  # Open MPI keeps its plugins and help texts at the paths it was built with.
  [[ -d /opt/tidepool/mpi ]] && cp -a /opt/tidepool/mpi/. / && ln -sf orterun /usr/bin/mpirun
  bin=/opt/tidepool/bin
  export LD_LIBRARY_PATH="/opt/tidepool/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
  tidepool="$bin/tidepool"
  gpu_tests="$bin/tidepool_gpu_tests"
else
  if [[ ! -f "$build/CMakeCache.txt" && $dry_run == 0 ]]; then
    # Only what the check runs, for this GPU's architecture alone: no window,
    # no benchmarks (scripts/install-deps.sh installs what it needs).
    arch=$(nvidia-smi --query-gpu=compute_cap --format=csv,noheader 2>/dev/null | head -1 | tr -d '.')
    say "building tidepool and tidepool_gpu_tests in $build for architecture ${arch:-(the default)}"
    cmake -S "$repo" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release -DTIDEPOOL_GUI=OFF -DTIDEPOOL_BENCH=OFF -DTIDEPOOL_FUZZ=OFF \
      ${arch:+-DCMAKE_CUDA_ARCHITECTURES=$arch} > "$report/configure.log" 2>&1 &&
      cmake --build "$build" --target tidepool tidepool_gpu_tests > "$report/build.log" 2>&1 ||
      { say "FAIL  building (see $report/configure.log and build.log)"; exit 1; }
  fi
  [[ -d "$build" ]] || { echo "gpu-check: no build folder '$build' (see --help)" >&2; exit 1; }
  build=$(cd "$build" && pwd)
  if ! grep -qiE '^TIDEPOOL_CUDA:BOOL=(ON|1|TRUE|YES|Y)$' "$build/CMakeCache.txt" 2>/dev/null; then
    echo "gpu-check: $build is not configured with the CUDA backend (TIDEPOOL_CUDA=ON needs nvcc and cuDNN)" >&2
    exit 1
  fi
  tidepool="$build/app/tidepool"
  gpu_tests="$build/tests/tidepool_gpu_tests"
  for f in "$tidepool" "$gpu_tests"; do
    [[ -x $f ]] || { echo "gpu-check: $f is not built: cmake --build $build" >&2; exit 1; }
  done
fi
# The tests start the binary at the path it was built at.
built_at=$(strings "$gpu_tests" 2>/dev/null | grep -m1 -E '^/.*/app/tidepool$' || true)
if [[ -n "$built_at" && ! -x "$built_at" && $dry_run == 0 ]]; then mkdir -p "$(dirname "$built_at")" && cp "$tidepool" "$built_at"; fi

# CUDA's libraries from the toolkit or from pip's nvidia-* wheels (cuDNN 9
# loads its sub-libraries from the folder libcudnn.so.9 is in).
[[ $dry_run == 1 ]] || for lib in libcudart.so.13 libcublas.so.13 libcudnn.so.9 libnccl.so.2; do
  found=$(ldconfig -p | grep -m1 "$lib" | awk '{print $NF}')
  [[ -z "$found" ]] && found=$(find / -xdev -name "$lib" -not -path "*/proc/*" 2>/dev/null | head -1)
  [[ -n "$found" ]] && export LD_LIBRARY_PATH="${LD_LIBRARY_PATH:-}${LD_LIBRARY_PATH:+:}$(dirname "$found")"
done

# --- versions -----------------------------------------------------------------------
step versions 60 bash -c "nvidia-smi; nvidia-smi --query-gpu=name,compute_cap,driver_version,memory.total --format=csv; \
  nvcc --version 2>/dev/null | tail -2; echo LD_LIBRARY_PATH=\${LD_LIBRARY_PATH:-}; ldd '$gpu_tests' | grep -E 'cud|nccl|cublas|not found'; \
  ldd '$tidepool' | grep 'not found'; uname -a; nproc; free -g; \
  echo host ISA: \$(grep -o -w -E 'avx2|avx512f|avx512_bf16|amx_bf16' /proc/cpuinfo | sort -u | tr '\\n' ' ')"

# --- gpu tests, one suite per process -------------------------------------------
suites=$("$gpu_tests" --gtest_list_tests 2>/dev/null | grep -E '^[A-Za-z][A-Za-z0-9_/]*\.$' | sed 's/\.$//' | grep -v '^GpuMpirun$')
[[ $dry_run == 1 ]] && suites=${suites:-"<each suite of tidepool_gpu_tests>"}
for suite in $suites GpuMpirun; do
  step "test-${suite//\//_}" 180 "$gpu_tests" --gtest_filter="$suite.*" --gtest_output="xml:$report/test-${suite//\//_}.xml"
  [[ $dry_run == 0 && -f "$report/test-${suite//\//_}.log" ]] && grep -E '^\[ +(FAILED|SKIPPED|OK) +\] [A-Za-z]' "$report/test-${suite//\//_}.log" | sed 's/^/      /' >> "$summary"
done

# --- resnet18 on the cuda device: every precision and offload mode, same bits ---
checksum() { python3 -c "import json,sys; print(json.load(open(sys.argv[1])).get('param_checksum'))" "$report/runs/$1/summary.json" 2>/dev/null; }
train() {  # NAME ARGS...: one short run; its checksum and throughput in the summary
  local name="$1"; shift
  [[ $dry_run == 1 ]] || rm -rf "$report/runs/$name"
  local iterations=(--iterations 3); [[ " $* " == *" --iterations "* ]] && iterations=()
  # Timed kernel choices are kept per machine (app/kernel_choices_file.h):
  # each run gets a cache of its own unless the caller shares one ($cache).
  step "train-$name" 120 env XDG_CACHE_HOME="${cache:-$report/cache/$name}" \
    "$tidepool" --batch --device cuda "${iterations[@]}" --seed 1 --out "$report/runs/$name" "$@"
  [[ $dry_run == 0 && -f "$report/runs/$name/summary.json" ]] &&
    say "      $name: $(python3 -c "import json,sys; s=json.load(open(sys.argv[1])); print(s.get('param_checksum'), round(s.get('images_per_second',0),1), 'images/s')" "$report/runs/$name/summary.json")"
}
same() {  # WHAT NAME...: whether the runs ended with the same parameters
  local what="$1" first; shift
  [[ $dry_run == 1 ]] && return 0
  first=$(checksum "$1")
  for run in "$@"; do
    [[ -f "$report/runs/$run/summary.json" ]] || { say "NOT RUN  $what: $run has no summary"; return 1; }
    if [[ -z "$first" || "$(checksum "$run")" != "$first" ]]; then say "DIFFERENT  $what: $*"; return 1; fi
  done
  say "SAME  $what ($first)"
}
[[ $dry_run == 1 ]] || mkdir -p "$report/runs"
r18=(--model resnet18 --batch-size 32)
# m: chosen by workspace sizes alone, the same in every process.
for precision in fp32 bf16 fp16; do
  for mode in base all conv; do train "r18-$precision-$mode-m" "${r18[@]}" --precision "$precision" --mode "$mode" --algo m; done
  same "$precision, algo m: base, all and conv" "r18-$precision-base-m" "r18-$precision-all-m" "r18-$precision-conv-m"
done
# p: timed. Two processes that time on their own may still differ (a near
# tie; informational). Runs that share the machine's record of choices, and
# a run resumed from a checkpoint, must not.
train r18-fp32-base-p "${r18[@]}"
train r18-fp32-base-p-alone "${r18[@]}"
same "fp32, algo p, two processes timing on their own (a near tie may differ)" r18-fp32-base-p r18-fp32-base-p-alone
cache="$report/cache/shared"
train r18-fp32-all-p "${r18[@]}" --mode all
train r18-fp32-base-p-shared "${r18[@]}"
train r18-fp32-aconv-p "${r18[@]}" --mode aconv
train r18-fp32-base-p-stopped "${r18[@]}" --stop-after 2
unset cache
same "fp32, algo p, the machine's record shared: all, base, aconv" r18-fp32-all-p r18-fp32-base-p-shared r18-fp32-aconv-p
step resume-r18-fp32-base-p-stopped 120 env XDG_CACHE_HOME="$report/cache/resumed" \
  "$tidepool" --batch --resume "$report/runs/r18-fp32-base-p-stopped"
same "fp32, algo p: stopped after 2 of 3, resumed with the checkpoint's choices alone, vs uninterrupted" \
  r18-fp32-all-p r18-fp32-base-p-stopped
for precision in bf16 fp16; do
  cache="$report/cache/$precision"
  for mode in base all; do train "r18-$precision-$mode-p" "${r18[@]}" --precision "$precision" --mode "$mode"; done
  unset cache
  same "$precision, algo p, the machine's record shared: base and all" "r18-$precision-base-p" "r18-$precision-all-p"
done

# --- throughput against the sim's h100 ----------------------------------------------
# The same runs on the sim device with the h100 specification profile
# (docs/gpu-profiles.md): how far the simulation is from this GPU.
for precision in fp32 fp16; do
  r50=(--model resnet50 --dataset imagenet-shapes --batch-size 128 --iterations 12 --lr 0.001 --lr-schedule constant --precision "$precision")
  train "resnet50-imagenet-$precision" "${r50[@]}"
  step "sim-h100-resnet50-imagenet-$precision" 60 "$tidepool" --batch --device sim --profile h100 --seed 1 \
    --out "$report/runs/sim-h100-resnet50-imagenet-$precision" "${r50[@]}"
  [[ $dry_run == 0 ]] && say "      sim h100 $precision: $(python3 -c "import json,sys; print(round(json.load(open(sys.argv[1]))['images_per_second'],1), 'images/s')" "$report/runs/sim-h100-resnet50-imagenet-$precision/summary.json" 2>/dev/null)"
done

# --- a measured profile ---------------------------------------------------------------
step profile-resnet50 150 "$tidepool" profile --device cuda --model resnet50 --dataset imagenet --batch-size 64 -o "$report/profile-resnet50-imagenet.json"

# --- compute-sanitizer on our own kernels ----------------------------------------
if command -v compute-sanitizer > /dev/null || [[ $dry_run == 1 ]]; then
  step sanitizer-memcheck 120 compute-sanitizer --tool memcheck --error-exitcode 9 \
    "$tidepool" --batch --device cuda --model resnet20 --iterations 1 --batch-size 8 --mode all --out "$report/runs/memcheck"
  # Our own kernels only (their names hold "tidepool"): cuDNN's under
  # racecheck took over two minutes for one iteration of resnet20.
  step sanitizer-racecheck 120 compute-sanitizer --tool racecheck --kernel-name kns=tidepool --error-exitcode 9 \
    "$tidepool" --batch --device cuda --model resnet20 --iterations 1 --batch-size 8 --out "$report/runs/racecheck"
fi

# Keep the report small enough to bring back: the run folders' large files go.
if [[ $dry_run == 0 ]]; then
  find "$report/runs" \( -name "*.bin" -o -name "*.ckpt" -o -name "*.png" -o -name "trace.json" \) -delete 2>/dev/null
  say "done in $(elapsed)s"
fi
