#!/usr/bin/env bash
# Builds Tidepool and runs the whole default test suite (tests labelled
# `long` or `gpu`-only work skip themselves or are excluded; see README).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh
cmake --preset default
cmake --build --preset default
ctest --preset default "$@"
