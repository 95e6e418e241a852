#!/usr/bin/env python3
"""AutoSwap against vDNN's fixed layer choices, by dry run (`tidepool plan`):
for each of vDNN's modes, the pool it needs and the bytes it offloads per
iteration, and what AutoSwap offloads to fit the same pool (and the pool it
then takes). Also AutoSwap's smallest pool, against `all`'s.

    build/app/tidepool must exist;
    bench/autoswap_table.py [--models resnet18,vgg16] [--batch 100] [--algo m] [--heuristic best-fit]
"""
import argparse
import json
import subprocess
import sys


def rows(args, model, budget=None):
    cmd = [args.tidepool, "plan", "--model", model, "--dataset", "cifar10", "--batch-size", str(args.batch),
           "--heuristic", args.heuristic, "--json"]
    if budget:
        # autoswap first: the run's row, planned in the budget; the others show their own pools
        cmd += ["--budget", str(budget), "--mode", "autoswap,base,all,conv,aconv"]
    out = subprocess.run(cmd, check=True, capture_output=True, text=True).stdout
    return {r["mode"]: r for r in json.loads(out) if r["algo"] == args.algo and r["order"] == "prefetch-first"}


def mib(b):
    return f"{b / 2**20:.0f}"


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--tidepool", default="build/app/tidepool")
    ap.add_argument("--models", default="resnet18,vgg16")
    ap.add_argument("--batch", type=int, default=100)
    ap.add_argument("--algo", default="m")
    ap.add_argument("--heuristic", default="best-fit")
    args = ap.parse_args()
    print(f"batch {args.batch}, algo {args.algo}, {args.heuristic}, prefetch-first; MiB")
    print("| model | vDNN mode | its pool | it offloads | AutoSwap in that pool offloads | AutoSwap's pool |")
    print("|---|---|---|---|---|---|")
    for model in args.models.split(","):
        fixed = rows(args, model)
        for mode in ["aconv", "conv", "all"]:
            r = fixed[mode]
            a = rows(args, model, r["pool_bytes"])["autoswap"]
            # A run with --budget gets that pool; what AutoSwap's choice needs is needed_pool_bytes.
            needs = a["needed_pool_bytes"] if a["fits"] else a["minimum_pool_bytes"]
            print(f"| {model} | {mode} | {mib(r['pool_bytes'])} | {mib(r['offloaded_bytes'])} "
                  f"| {mib(a['offloaded_bytes']) if a['fits'] else 'does not fit'} | {mib(needs)} |", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
