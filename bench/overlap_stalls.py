#!/usr/bin/env python3
"""The overlap scenario's figures: how long the compute stream stalls on
transfers per iteration, split into forward and backward, for

  1. sync transfers (vDNN) in the least pool,
  2. async transfers (vDNN++) in the least pool, where the block an offload
     frees is reused at once and that reuse waits for the copy,
  3. async transfers in each larger pool the previous run names as parking
     more of those blocks (its "with --budget X more are parked" line),
     until every one stays parked until needed.

Each row is one `tidepool --batch` run of vDNN++'s constructed network with
every layer's input offloaded over a throttled cpu link; the stalls are the
compute stream's wait spans in its trace.json (a span before the iteration's
first backward span counts as forward). The parameter checksums must agree:
transfers and parking never change the numbers.

    build/app/tidepool must exist;  bench/overlap_stalls.py [--link-gbps 1] [--iterations 3]
"""
import argparse
import json
import re
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path


def stalls(trace_path: Path, skip: int):
    """(forward ms, backward ms) per iteration from iteration `skip` on."""
    data = json.loads(trace_path.read_text())
    events = data["traceEvents"] if isinstance(data, dict) else data
    by_iteration = {}
    for e in events:
        if e.get("ph") == "X":
            by_iteration.setdefault(e.get("args", {}).get("iteration", -1), []).append(e)
    rows = []
    for it in sorted(i for i in by_iteration if i >= skip):
        spans = by_iteration[it]
        first_backward = min((e["ts"] for e in spans if e.get("cat") == "backward"), default=float("inf"))
        waits = [e for e in spans if e.get("cat") == "wait" and e.get("tid") == 1]  # tid 1: compute
        forward = sum(e["dur"] for e in waits if e["ts"] < first_backward) / 1000
        backward = sum(e["dur"] for e in waits if e["ts"] >= first_backward) / 1000
        rows.append((forward, backward))
    return rows


def run(args, out: Path, transfer: str, budget: str | None):
    cmd = [args.tidepool, "--batch", "--model", "vdnn_constructed", "--batch-size", "32", "--mode", "all",
           "--lookahead", "2", "--link-gbps", str(args.link_gbps), "--iterations", str(args.iterations),
           "--transfer", transfer, "--out", str(out)]
    if budget:
        cmd += ["--budget", budget]
    print("$ " + " ".join(cmd), file=sys.stderr)
    done = subprocess.run(cmd, capture_output=True, text=True)
    if done.returncode != 0:
        sys.exit(f"tidepool failed:\n{done.stdout}\n{done.stderr}")
    pool = re.search(r"memory: pool ([0-9.]+ \w+)", done.stdout)
    hint = re.search(r"with --budget (\S+) more are parked", done.stdout)
    summary = json.loads((out / "summary.json").read_text())
    return {"pool": pool.group(1) if pool else "?", "parking_budget": hint.group(1) if hint else None,
            "horizon": summary.get("park_horizon", 0), "checksum": summary["param_checksum"],
            "stalls": stalls(out / "trace.json", skip=1)}


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--tidepool", default="build/app/tidepool")
    ap.add_argument("--link-gbps", type=float, default=1.0)
    ap.add_argument("--iterations", type=int, default=3, help="the first is left out (warm-up)")
    args = ap.parse_args()
    if args.iterations < 2:
        sys.exit("--iterations must be at least 2: the first one is a warm-up")
    with tempfile.TemporaryDirectory(prefix="overlap-stalls-") as tmp:
        tmp = Path(tmp)
        rows = [("sync", run(args, tmp / "sync", "sync", None))]
        row = run(args, tmp / "async", "async", None)
        rows.append(("async", row))
        while row["parking_budget"] and len(rows) < 6:
            row = run(args, tmp / f"async-{len(rows)}", "async", row["parking_budget"])
            rows.append(("async", row))
    print(f"vdnn_constructed, batch 32, mode all, lookahead 2, link {args.link_gbps:g} GB/s; "
          f"stall per iteration (median of {args.iterations - 1}, ms)")
    print("| transfers | pool | freed blocks parked | forward | backward |")
    print("|---|---|---|---|---|")
    for transfer, r in rows:
        h = r["horizon"]
        # tidepool's words for the park horizon (engine/plan/memory_facts.h)
        blocks = "-" if transfer == "sync" else "none" if h == 0 else "all" if h < 0 else f"up to {h}"
        forward = statistics.median(f for f, _ in r["stalls"])
        backward = statistics.median(b for _, b in r["stalls"])
        print(f"| {transfer} | {r['pool']} | {blocks} | {forward:.1f} | {backward:.1f} |")
    checksums = {r["checksum"] for _, r in rows}
    print("parameters: " + ("bit-identical in every row" if len(checksums) == 1 else f"DIFFER: {checksums}"))
    return 0 if len(checksums) == 1 else 1


if __name__ == "__main__":
    sys.exit(main())
