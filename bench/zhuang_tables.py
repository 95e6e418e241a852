#!/usr/bin/env python3
"""Zhuang et al.'s Tables 2 and 3 (§4.3), measured here: the memory
that offloading every layer's input saves, and the time it costs with
stream copies and with CPU-thread copies, for VGG-16, AlexNet and MobileNet
at batches 16 to 256 in 16 bits, beside the paper's figures.

Table 2 (memory) is a dry run: `tidepool plan` at ImageNet's shapes (the
paper's GTX 1060 could not hold VGG-16 at batch 128, so it trained
ImageNet-sized images), heuristic best-fit, algo p, prefetch-first; the
reduction is 1 - pool(all) / pool(base), the pool being the device memory
the iteration needs (what nvidia-smi would show of it).

Table 3 (time) trains on the cpu device at CIFAR's shapes (ImageNet's take
minutes an iteration on two cores) over a link throttled to --link-gbps:
the median iteration after a warm-up, of mode all with --copy-engine stream
and with --copy-engine threads, over base's. The parameter checksums of the
three runs must agree: offloading never changes the numbers.

    build/app/tidepool must exist;
    bench/zhuang_tables.py [--precision fp16] [--batches 16,32,64,128,256] [--iterations 3]
                           [--link-gbps 0.5] [--memory-only]
"""
import argparse
import json
import subprocess
import sys
import tempfile
from pathlib import Path

from zhuang_transfers import timed_run

MODELS = ["vgg16", "alexnet", "mobilenet"]
BATCHES = [16, 32, 64, 128, 256]
# The paper's Table 2 (memory reduction) and Table 3 (time, threads and
# streams), by model and batch; None where the paper has no figure (the
# run did not fit its GPU).
PAPER_MEMORY = {
    "vgg16": [18.4, 25.0, 29.6, None, None],
    "alexnet": [6.5, 11.7, 20.3, 26.4, 27.5],
    "mobilenet": [65.6, 66.8, 67.9, 68.4, None],
}
PAPER_THREADS = {
    "vgg16": [1.19, 1.23, 1.18, None, None],
    "alexnet": [1.17, 1.25, 1.20, 1.25, 1.26],
    "mobilenet": [1.41, 1.46, 1.35, 1.32, None],
}
PAPER_STREAMS = {
    "vgg16": [1.01, 1.01, 1.04, None, None],
    "alexnet": [1.0, 1.0, 1.02, 1.03, 1.06],
    "mobilenet": [1.21, 1.19, 1.18, 1.14, None],
}


def paper(table, model, batch, fmt):
    values = table[model]
    v = values[BATCHES.index(batch)] if batch in BATCHES else None
    return "–" if v is None else fmt.format(v)


def plan_rows(tidepool, model, batch, precision):
    cmd = [tidepool, "plan", "--model", model, "--dataset", "imagenet", "--batch-size", str(batch),
           "--precision", precision, "--heuristic", "best-fit", "--json"]
    print("$ " + " ".join(cmd), file=sys.stderr)
    done = subprocess.run(cmd, capture_output=True, text=True)
    if done.returncode != 0:
        sys.exit(f"tidepool plan failed:\n{done.stdout}\n{done.stderr}")
    rows = {}
    for r in json.loads(done.stdout):
        if r["algo"] == "p" and r["order"] == "prefetch-first" and r["mode"] in ("base", "all"):
            rows[r["mode"]] = r
    return rows


def memory_table(args):
    precisions = ["fp32", args.precision] if args.precision != "fp32" else ["fp32"]
    print(f"Table 2: memory, `tidepool plan --dataset imagenet --precision {' '.join(precisions)}` "
          "(best-fit, algo p); pool MiB of base → all, and the reduction")
    print("| model | batch | " + " | ".join(f"{p} pool MiB | {p} reduction" for p in precisions) + " | paper |")
    print("|---|---|" + "---|---|" * len(precisions) + "---|")
    for model in MODELS:
        for batch in args.batches:
            cells = []
            for p in precisions:
                rows = plan_rows(args.tidepool, model, batch, p)
                base, every = rows["base"]["pool_bytes"], rows["all"]["pool_bytes"]
                cells.append(f"{base / 2**20:.0f} → {every / 2**20:.0f} | {100 * (1 - every / base):.1f} %")
            print(f"| {model} | {batch} | " + " | ".join(cells) +
                  f" | {paper(PAPER_MEMORY, model, batch, '{:.1f} %')} |")


def time_table(args):
    print(f"Table 3: time, cpu device, CIFAR shapes, --precision {args.precision}, link {args.link_gbps:g} GB/s; "
          f"median of {args.iterations - 1} iterations after a warm-up")
    print("| model | batch | base ms | threads | paper threads | streams | paper streams | stall ms (threads / streams) |")
    print("|---|---|---|---|---|---|---|---|")
    ok = True
    with tempfile.TemporaryDirectory(prefix="zhuang-tables-") as tmp:
        for model in MODELS:
            for batch in args.batches:
                common = ["--precision", args.precision]
                def run(mode, engine):
                    out = Path(tmp) / f"{model}-{batch}-{mode}-{engine}"
                    return timed_run(args.tidepool, out, model, batch, mode, args.link_gbps, args.iterations,
                                     common + ["--copy-engine", engine])
                base, _, base_summary = run("base", "stream")
                threads, threads_stall, threads_summary = run("all", "threads")
                streams, streams_stall, streams_summary = run("all", "stream")
                sums = {s["param_checksum"] for s in (base_summary, threads_summary, streams_summary)}
                ok &= len(sums) == 1
                print(f"| {model} | {batch} | {base:.0f} | {threads / base:.2f}× | "
                      f"{paper(PAPER_THREADS, model, batch, '{:.2f}×')} | {streams / base:.2f}× | "
                      f"{paper(PAPER_STREAMS, model, batch, '{:.2f}×')} | {threads_stall:.0f} / {streams_stall:.0f} |"
                      + ("" if len(sums) == 1 else f" CHECKSUMS DIFFER: {sums}"), flush=True)
    print("parameters: " + ("bit-identical in base, all with threads and all with streams, in every row" if ok
                            else "DIFFER (see the rows marked)"))
    return ok


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--tidepool", default="build/app/tidepool")
    ap.add_argument("--precision", default="fp16", choices=["fp32", "bf16", "fp16"])
    ap.add_argument("--batches", default=",".join(map(str, BATCHES)))
    ap.add_argument("--link-gbps", type=float, default=0.5)
    ap.add_argument("--iterations", type=int, default=3, help="the first is left out (warm-up)")
    ap.add_argument("--memory-only", action="store_true", help="Table 2 alone (a dry run: seconds)")
    args = ap.parse_args()
    args.batches = [int(b) for b in args.batches.split(",")]
    if args.iterations < 2:
        sys.exit("--iterations must be at least 2: the first one is a warm-up")
    if not Path(args.tidepool).exists():
        sys.exit(f"{args.tidepool} not found: build first (cmake --preset default && cmake --build --preset default)")
    memory_table(args)
    if args.memory_only:
        return 0
    print()
    return 0 if time_table(args) else 1


if __name__ == "__main__":
    sys.exit(main())
