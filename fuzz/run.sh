#!/usr/bin/env bash
# Runs one fuzzer on its seed corpus from a fresh work folder, so that a run
# never depends on what an earlier one found:
#   fuzz/run.sh FUZZER SEED_DIR WORK_DIR [libFuzzer options...]
# New inputs go to WORK_DIR/corpus (the seeds are never written to), a
# crashing input to WORK_DIR/artifacts/. The exit status is libFuzzer's:
# 0 when nothing was found. The test suite runs each fuzzer this way with
# -seed=1 -runs=N (CMakeLists.txt); scripts/fuzz.sh with a time limit.
set -euo pipefail
fuzzer=$1 seeds=$2 work=$3
shift 3
rm -rf "$work"
mkdir -p "$work/corpus" "$work/artifacts"
exec "$fuzzer" -artifact_prefix="$work/artifacts/" -timeout=10 -rss_limit_mb=2048 -print_final_stats=1 "$@" \
  "$work/corpus" "$seeds"
