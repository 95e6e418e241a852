#!/usr/bin/env python3
"""Finds the two calibrated efficiencies of each shipped GPU profile.

engine/perf/spec_profiles.cpp derives a GPU's profile from its data sheet
and two figures no data sheet gives: the share of its peak that dense work
reaches (dense_efficiency: of the FP32 peak in f32, of the f16 tensor peak
in 16 bits) and the share of the memory bandwidth memory-bound layers reach
(bandwidth_efficiency). This script finds, for each GPU, the values at
which the sim device trains ResNet-50 (ImageNet shapes, batch 128) at the
published rates the spec cites (GpuSpec::reference), and prints them for
spec_profiles.cpp.

How: an iteration's simulated time is dense time / dense share + memory-
bound time / bandwidth share + launches. Three sim runs per precision
(the profile as it is, its dense classes made a million times faster, its
memory-bound classes made a million times faster) split the time into the
three parts, and the published rates then give the two shares by solving
a linear system: on the V100 from its f32 and mixed figures together;
elsewhere, with one figure, the V100's bandwidth share and the dense share
from that figure. A last run checks each result.

    bench/calibrate_gpu_profiles.py [build/app/tidepool]

The sim's clock is virtual, so the figures repeat on every machine.
"""
import json
import os
import re
import subprocess
import sys
import tempfile

TIDEPOOL = sys.argv[1] if len(sys.argv) > 1 else "build/app/tidepool"
BATCH = 128
DENSE = ("conv.forward", "conv.backward", "linear.forward", "linear.backward")
# key: (fp32 images/s or 0, mixed-precision images/s or 0), as spec_profiles.cpp cites them.
TARGETS = {"v100": (356, 1156), "m40": (100, 0), "a100": (0, 2470), "h100": (0, 2616)}


def spec(key, folder):
    path = os.path.join(folder, key + ".json")
    subprocess.run([TIDEPOOL, "profile", "--spec", key, "-o", path], check=True, capture_output=True)
    with open(path) as f:
        p = json.load(f)
    e = float(re.search(r"conv/linear at ([\d.]+) %", p["notes"]).group(1)) / 100
    b = float(re.search(r"memory-bound layers at ([\d.]+) % of the bandwidth", p["notes"]).group(1)) / 100
    fp32 = float(re.search(r"not measured: ([\d.]+) TFLOP/s FP32", p["notes"]).group(1))
    tensor = re.search(r"([\d.]+) TFLOP/s f16 on tensor cores", p["notes"])
    # The dense share is one for both peaks: 16-bit dense work runs tensor/fp32 times faster.
    p["dense_16bit_speedup"] = float(tensor.group(1)) / fp32 if tensor else 1.0
    return p, e, b


def iteration_s(profile, precision, folder):
    path = os.path.join(folder, "p.json")
    with open(path, "w") as f:
        json.dump(profile, f)
    out = os.path.join(folder, "run")
    subprocess.run(["rm", "-rf", out], check=True)
    subprocess.run([TIDEPOOL, "--batch", "--device", "sim", "--profile", path, "--model", "resnet50", "--dataset",
                    "imagenet-shapes", "--batch-size", str(BATCH), "--iterations", "3", "--precision", precision,
                    "--checkpoint-every", "0", "--out", out], check=True, capture_output=True)
    with open(os.path.join(out, "summary.json")) as f:
        return BATCH / json.load(f)["images_per_second"]


def faster(profile, dense, memory):
    p = json.loads(json.dumps(profile))
    for name, fit in p["compute"].items():
        k = dense if name in DENSE else memory
        fit["peak_gflops"] *= k
        fit["saturation_flops"] *= k
    return p


def parts(profile, precision, folder):
    """(dense, memory-bound, launches) seconds of an iteration at the profile's shares."""
    t = iteration_s(profile, precision, folder)
    dense = t - iteration_s(faster(profile, 1e6, 1), precision, folder)
    memory = t - iteration_s(faster(profile, 1, 1e6), precision, folder)
    return dense, memory, t - dense - memory


def main():
    with tempfile.TemporaryDirectory() as folder:
        v100_bandwidth = None
        for key in ("v100", "m40", "a100", "h100"):
            profile, e0, b0 = spec(key, folder)
            fp32_target, mixed_target = TARGETS[key]
            # The split is exact only to first order (below saturation a class's time is not
            # proportional to 1/share): solve again from the first answer.
            for _ in range(2):
                e0, b0, profile = solve(key, profile, e0, b0, fp32_target, mixed_target, v100_bandwidth, folder)
            e, b = e0, b0
            if key == "v100":
                v100_bandwidth = b
            fp32 = BATCH / iteration_s(profile, "fp32", folder)
            fp16 = BATCH / iteration_s(profile, "fp16", folder)
            print(f"{key}: dense_efficiency {e:.3f}, bandwidth_efficiency {b:.3f} (sim: fp32 {fp32:.0f} images/s, "
                  f"fp16 {fp16:.0f}; published {fp32_target or '-'}, {mixed_target or '-'})", flush=True)


def solve(key, profile, e0, b0, fp32_target, mixed_target, v100_bandwidth, folder):
    """The shares (and the profile at them) that meet the targets, to first order from the profile's (e0, b0)."""
    rows = []  # (dense s, memory s, launches s, target s) at the profile's shares
    for precision, target in (("fp32", fp32_target), ("fp16", mixed_target)):
        if target:
            rows.append(parts(profile, precision, folder) + (BATCH / target,))
    # time = dense * e0/e + memory * b0/b + launches: linear in x = e0/e, y = b0/b.
    if len(rows) == 2:
        (d1, m1, l1, t1), (d2, m2, l2, t2) = rows
        det = d1 * m2 - d2 * m1
        x = ((t1 - l1) * m2 - (t2 - l2) * m1) / det
        y = (d1 * (t2 - l2) - d2 * (t1 - l1)) / det
    else:
        (d, m, l, t), = rows
        y = b0 / v100_bandwidth
        x = (t - l - m * y) / d
    e, b = e0 / x, b0 / y
    return e, b, faster(profile, e / e0, b / b0)


if __name__ == "__main__":
    main()
