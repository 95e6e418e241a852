#!/usr/bin/env python3
"""The SmartPool paper's comparison, reproduced with `tidepool plan`:
footprint and competitive ratio (footprint / peak load) of each heuristic on
the eight CIFAR models at batch 100, no offload, one row per model.

    build/app/tidepool must exist;  bench/pool_table.py [--algo p] [--batch 100]
"""
import argparse
import json
import subprocess
import sys

MODELS = ["resnet18", "resnet34", "resnet50", "resnet101", "vgg11", "vgg13", "vgg16", "vgg19"]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--tidepool", default="build/app/tidepool")
    ap.add_argument("--batch", type=int, default=100)
    ap.add_argument("--algo", default="p")
    ap.add_argument("--mode", default="base")
    ap.add_argument("--heuristics", default="smartpool,cnmem,best-fit,first-fit,high-end")
    args = ap.parse_args()
    heuristics = args.heuristics.split(",")
    print(f"mode {args.mode}, algo {args.algo}, batch {args.batch}; footprint MiB (competitive ratio)")
    print("| model | peak load MiB | " + " | ".join(heuristics) + " |")
    print("|---|---|" + "---|" * len(heuristics))
    worst = {h: 0.0 for h in heuristics}
    for model in MODELS:
        out = subprocess.run([args.tidepool, "plan", "--model", model, "--dataset", "cifar10",
                              "--batch-size", str(args.batch), "--json"],
                             check=True, capture_output=True, text=True).stdout
        rows = [r for r in json.loads(out)
                if r["mode"] == args.mode and r["algo"] == args.algo and r["order"] == "prefetch-first"]
        by = {r["heuristic"]: r for r in rows}
        cells = []
        for h in heuristics:
            r = by[h]
            worst[h] = max(worst[h], r["competitive_ratio"])
            cells.append(f"{r['footprint_bytes'] / 2**20:.1f} ({r['competitive_ratio']:.3f})")
        print(f"| {model} | {rows[0]['peak_load_bytes'] / 2**20:.1f} | " + " | ".join(cells) + " |")
    print("worst ratio: " + ", ".join(f"{h} {w:.3f}" for h, w in worst.items()))
    return 0


if __name__ == "__main__":
    sys.exit(main())
