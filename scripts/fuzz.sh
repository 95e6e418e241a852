#!/usr/bin/env bash
# Builds the libFuzzer targets (fuzz/) and runs each for SECONDS (default
# 60), one after another, then says what each found:
#
#   scripts/fuzz.sh [SECONDS] [TARGET...]     # e.g. scripts/fuzz.sh 300 idx checkpoint
#
# Targets are named after fuzz/<name>_fuzzer.cpp. Each run starts from its
# seed corpus (fuzz/corpus/<name>/) in a fresh build/fuzz-work/<name>/; a
# crashing input is left in build/fuzz-work/<name>/artifacts/ and the exit
# status is 1. Add it to fuzz/corpus/<name>/ as regress_<what> with the fix,
# so every test run replays it.
set -euo pipefail
cd "$(dirname "$0")/.."
seconds=${1:-60}
shift || true
cmake --preset default >/dev/null
cmake --build --preset default --target tidepool_fuzzers >/dev/null

targets=("$@")
if ((${#targets[@]} == 0)); then
  for f in fuzz/*_fuzzer.cpp; do
    f=${f#fuzz/}
    targets+=("${f%_fuzzer.cpp}")
  done
fi

mkdir -p build/fuzz-work
found=0
printf '%-16s %10s %9s %8s  %s\n' target inputs inputs/s corpus result
for t in "${targets[@]}"; do
  work=build/fuzz-work/$t
  status=0
  fuzz/run.sh "build/fuzz/${t}_fuzzer" "fuzz/corpus/$t" "$work" -max_total_time="$seconds" >"$work.log" 2>&1 ||
    status=$?
  runs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$work.log" | tail -1)
  rate=$(sed -n 's/^stat::average_exec_per_sec: *//p' "$work.log" | tail -1)
  corpus=$(find "$work/corpus" -type f | wc -l)
  artifact=$(find "$work/artifacts" -type f | head -1)
  if ((status == 0)); then
    result="nothing found"
  else
    found=1
    result="FOUND (status $status): ${artifact:-see $work.log}; $(grep -m1 -E 'ERROR|runtime error|terminate' "$work.log" || true)"
  fi
  printf '%-16s %10s %9s %8s  %s\n' "$t" "${runs:-?}" "${rate:-?}" "$corpus" "$result"
done
exit $found
