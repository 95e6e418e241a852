#!/usr/bin/env python3
"""vDNN++'s pinned-memory table, measured: for each model and offload mode,
what the offloaded tensors of one iteration take on the host zero-value
compressed (`--compress`) against as offloaded, the pinned memory each run
reserves for them, the training speed with and without compression, and a
check that the parameters are bit-identical.

    build/app/tidepool must exist;
    bench/compression.py [--models alexnet,vgg16,resnet18] [--modes all,conv] [--batch 128] [--iterations 3]

The densities are those of the first iterations of a fresh network on the
generated dataset; vDNN++ measured trained networks (AlexNet(128) all: 36%
saved on average, VGG-16(16): 67%).
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile


def run(args, model, mode, compress, out):
    cmd = [args.tidepool, "--batch", "--model", model, "--dataset", "generated", "--batch-size", str(args.batch),
           "--iterations", str(args.iterations), "--mode", mode, "--algo", args.algo, "--seed", "1",
           "--trace-iterations", "0", "--quiet", "--out", out]
    if compress:
        cmd.append("--compress")
    subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    with open(os.path.join(out, "summary.json")) as f:
        return json.load(f)


def mib(b):
    return f"{b / 2**20:.1f}"


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--tidepool", default="build/app/tidepool")
    ap.add_argument("--models", default="alexnet,vgg16,resnet18")
    ap.add_argument("--modes", default="all,conv")
    ap.add_argument("--batch", type=int, default=128)
    ap.add_argument("--iterations", type=int, default=3)
    ap.add_argument("--algo", default="m")
    args = ap.parse_args()
    print(f"batch {args.batch}, algo {args.algo}, {args.iterations} iterations; the last iteration's offloads")
    print("| model | mode | offloaded MiB | compressed MiB | saved | pinned MiB (plain → compressed) "
          "| images/s (plain → compressed) | same parameters |")
    print("|---|---|---|---|---|---|---|---|")
    ok = True
    with tempfile.TemporaryDirectory() as tmp:
        for model in args.models.split(","):
            for mode in args.modes.split(","):
                plain = run(args, model, mode, False, os.path.join(tmp, f"{model}-{mode}-plain"))
                packed = run(args, model, mode, True, os.path.join(tmp, f"{model}-{mode}-zvc"))
                same = plain["param_checksum"] == packed["param_checksum"]
                ok &= same
                src, dst = packed["compressed_from_bytes"], packed["compressed_to_bytes"]
                print(f"| {model} | {mode} | {mib(src)} | {mib(dst)} | {100 * (1 - dst / src):.0f}% "
                      f"| {mib(plain['pinned_host_bytes'])} → {mib(packed['pinned_host_bytes'])} "
                      f"| {plain['images_per_second']:.0f} → {packed['images_per_second']:.0f} "
                      f"| {'yes' if same else 'NO'} |", flush=True)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
