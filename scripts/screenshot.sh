#!/usr/bin/env bash
# The README's picture of the window: resnet20 on the embedded dataset,
# offloading everything (vDNN's mode all) so the timeline shows the copies
# and the address map the blocks leaving and coming back, drawn headless
# under Xvfb at 1600x900 after a few iterations.
#
#   scripts/screenshot.sh [build dir]   # writes docs/images/window.png
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:-build}
command -v xvfb-run >/dev/null || { echo "screenshot: xvfb-run is missing (scripts/install-deps.sh installs it)" >&2; exit 1; }
mkdir -p docs/images
xvfb-run -a -s "-screen 0 1600x900x24" "$build/app/tidepool" --model resnet20 --batch-size 64 --mode all \
  --screenshot docs/images/window.png --frames 60 >/dev/null
echo "screenshot: docs/images/window.png"
