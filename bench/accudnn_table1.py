#!/usr/bin/env python3
"""AccUDNN's Table 1 in shape: on a GPU profile (default: the M40 derived
from its specification, profiles/m40.json) and a 12 GiB budget, for each
model at ImageNet shapes, the largest batch that trains without offload
and its predicted images/s, the efficiency-optimal batch k* (Algorithm 2
over mode accudnn) and its predicted images/s, beside the paper's figures
(Caffe's largest batch and throughput, AccUDNN's k* and throughput).

Each row is one `tidepool tune --json` (pure planning on the performance
model: no device runs anything).

    build/app/tidepool must exist;  bench/accudnn_table1.py [--profile m40] [--budget 12GiB]
"""
import argparse
import json
import subprocess
import sys
import time
from pathlib import Path

# Table 1 of the AccUDNN paper (docs/references.md): Caffe's max trainable batch and
# its images/s, AccUDNN's efficiency-optimal batch and its images/s, on an
# M40 with a 12 GB budget.
PAPER = {
    "alexnet": (848, 865, 1032, 853),
    "vgg16": (80, 51, 192, 50),
    "resnet34": (91, 99, 276, 99),
    "resnet50": (33, 66, 112, 66),
    "resnet101": (20, 29, 74, 34),
    "resnet152": (13, 19, 54, 24),
}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--profile", default="m40")
    ap.add_argument("--budget", default="12GiB")
    ap.add_argument("--binary", default=str(Path(__file__).resolve().parent.parent / "build/app/tidepool"))
    ap.add_argument("models", nargs="*", default=list(PAPER))
    args = ap.parse_args()
    print(f"profile {args.profile}, budget {args.budget}, ImageNet shapes, algo p, best-fit; "
          "ours predicted by the performance model, the paper's measured with Caffe on an M40")
    print("| model | largest batch without offload (paper: Caffe) | images/s (paper) | k* (paper) | "
          "images/s at k* (paper) | offloaded at k* | tune s |")
    print("|---|---|---|---|---|---|---|")
    for model in args.models:
        start = time.time()
        out = subprocess.run([args.binary, "--quiet", "tune", "--model", model, "--dataset", "imagenet",
                              "--budget", args.budget, "--profile", args.profile, "--json"],
                             capture_output=True, text=True)
        if out.returncode != 0:
            print(f"| {model} | tune failed: {out.stderr.strip()} |")
            continue
        t = json.loads(out.stdout)
        caffe_k, caffe_ips, acc_k, acc_ips = PAPER.get(model, ("?", "?", "?", "?"))
        k = t.get("efficiency_optimal_batch", "none")
        ips = t.get("images_per_second", 0.0)
        off = t.get("offloaded_bytes", 0) / 2**30
        print(f"| {model} | {t['largest_batch_without_offload']} ({caffe_k}) | "
              f"{t['images_per_second_without_offload']:.0f} ({caffe_ips}) | {k} ({acc_k}) | {ips:.0f} ({acc_ips}) | "
              f"{off:.2f} GiB | {time.time() - start:.1f} |")
        sys.stdout.flush()
    return 0


if __name__ == "__main__":
    sys.exit(main())
