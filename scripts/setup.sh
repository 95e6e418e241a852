#!/usr/bin/env bash
# One command from a fresh Debian machine to a trained network: installs the
# packages, builds, and trains resnet20 for one epoch on the embedded
# generated dataset (written to data/generated on first use). The run folder
# lands in runs/.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh
cmake --preset default
cmake --build --preset default
build/app/tidepool --batch --model resnet20 --dataset generated --epochs 1 "$@"
