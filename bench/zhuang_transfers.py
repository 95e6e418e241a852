#!/usr/bin/env python3
"""Zhuang et al.'s transfer choices (§4) on the cpu device: the
iteration time and the compute stream's stall for pinned or pageable host
memory (--host-memory) and stream or thread copies (--copy-engine), with
every layer's input offloaded (mode all) over a throttled link.

Each cell is one `tidepool --batch` run of a fresh network on the generated
data at batch 128; the times are the medians over its traced iterations
after the first (a warm-up), read from trace.json: an iteration lasts from
its first span's start to its last span's end, and its stall is the sum of
the compute lane's wait spans (the compute stream waiting for a copy, or
with thread copies, the host waiting for a copy thread while the compute
stream ran dry). The parameter checksums must agree: where the offloads
wait and who copies them never changes the numbers.

    build/app/tidepool must exist;
    bench/zhuang_transfers.py [--models resnet20,vgg16] [--link-gbps 0.5] [--iterations 4]
"""
import argparse
import json
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

CELLS = [("pinned", "stream"), ("pinned", "threads"), ("pageable", "stream"), ("pageable", "threads")]


def iterations(trace_path: Path, skip: int):
    """(iteration ms, stall ms) per traced iteration from iteration `skip` on."""
    data = json.loads(trace_path.read_text())
    events = data["traceEvents"] if isinstance(data, dict) else data
    by_iteration = {}
    for e in events:
        if e.get("ph") == "X":
            by_iteration.setdefault(e.get("args", {}).get("iteration", -1), []).append(e)
    rows = []
    for it in sorted(i for i in by_iteration if i >= skip):
        spans = by_iteration[it]
        start = min(e["ts"] for e in spans)
        end = max(e["ts"] + e["dur"] for e in spans)
        stall = sum(e["dur"] for e in spans if e.get("cat") == "wait" and e.get("tid") == 1)  # tid 1: compute
        rows.append(((end - start) / 1000, stall / 1000))
    return rows


def timed_run(tidepool: str, out: Path, model: str, batch: int, mode: str, link_gbps: float, count: int,
              extra=()):
    """One `tidepool --batch` run: its median iteration and stall (ms) over the iterations after the first,
    and its summary.json."""
    cmd = [tidepool, "--batch", "--quiet", "--model", model, "--batch-size", str(batch), "--mode", mode,
           "--link-gbps", str(link_gbps), "--iterations", str(count), "--trace-iterations", str(count),
           "--seed", "1", "--out", str(out), *extra]
    print("$ " + " ".join(cmd), file=sys.stderr)
    done = subprocess.run(cmd, capture_output=True, text=True)
    if done.returncode != 0:
        sys.exit(f"tidepool failed:\n{done.stdout}\n{done.stderr}")
    summary = json.loads((out / "summary.json").read_text())
    rows = iterations(out / "trace.json", skip=1)
    return statistics.median(t for t, _ in rows), statistics.median(s for _, s in rows), summary


def run(args, model: str, host: str, engine: str, out: Path):
    iteration, stall, summary = timed_run(args.tidepool, out, model, args.batch_size, "all", args.link_gbps,
                                          args.iterations, ["--host-memory", host, "--copy-engine", engine])
    return {"iteration": iteration, "stall": stall,
            "checksum": summary["param_checksum"], "pinned": summary["pinned_host_bytes"],
            "pageable": summary.get("pageable_host_bytes", 0), "offloaded": summary["offloaded_bytes"]}


def mib(b):
    return f"{b / 2**20:.1f}"


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--tidepool", default="build/app/tidepool")
    ap.add_argument("--models", default="resnet20", help="comma-separated, e.g. resnet20,vgg16")
    ap.add_argument("--batch-size", type=int, default=128)
    ap.add_argument("--link-gbps", type=float, default=0.5)
    ap.add_argument("--iterations", type=int, default=4, help="the first is left out (warm-up)")
    args = ap.parse_args()
    if args.iterations < 2:
        sys.exit("--iterations must be at least 2: the first one is a warm-up")
    results = {}
    with tempfile.TemporaryDirectory(prefix="zhuang-transfers-") as tmp:
        for model in args.models.split(","):
            for host, engine in CELLS:
                results[(model, host, engine)] = run(args, model, host, engine, Path(tmp) / f"{model}-{host}-{engine}")
    print(f"cpu device, batch {args.batch_size}, mode all, link {args.link_gbps:g} GB/s; "
          f"median of {args.iterations - 1} iterations after a warm-up")
    print("| model | host memory | copies | iteration ms | stall ms | × pinned+stream | offloaded MiB | "
          "pinned MiB | pageable MiB | param_checksum |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    ok = True
    for model in args.models.split(","):
        reference = results[(model, "pinned", "stream")]
        for host, engine in CELLS:
            r = results[(model, host, engine)]
            print(f"| {model} | {host} | {engine} | {r['iteration']:.0f} | {r['stall']:.0f} | "
                  f"{r['iteration'] / reference['iteration']:.2f}× | {mib(r['offloaded'])} | {mib(r['pinned'])} | "
                  f"{mib(r['pageable'])} | {r['checksum']} |")
        same = {results[(model, h, e)]["checksum"] for h, e in CELLS}
        print(f"{model} parameters: " + ("bit-identical in every row" if len(same) == 1 else f"DIFFER: {same}"))
        ok &= len(same) == 1
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
