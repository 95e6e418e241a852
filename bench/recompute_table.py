#!/usr/bin/env python3
"""Offload, recompute and hybrid at one budget: the predicted and simulated
overhead of every policy against keeping everything, per network, GPU and
budget (issue 36's table; docs/results.md#recomputation-and-hybrid).

For each network at ImageNet shapes and each GPU specification, base's
peak load is planned first; each budget is a share of it. Predicted: the
plan's row (`tidepool plan --json`, AccUDNN's model); simulated: three
iterations on the sim device (`tidepool --batch --device sim`) in the
same budget, images/s.
Overhead is time per iteration against base's, in percent. A policy whose
pool does not fit the budget says so.

    bench/recompute_table.py [--tidepool build/app/tidepool] [--models resnet50,vgg16,resnet152]
                             [--gpus v100,h100] [--shares 70,50,30] [--batch 32]
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile

POLICIES = ["all", "autoswap", "accudnn", "recompute", "recompute-cheap", "hybrid"]


def run(cmd):
    return subprocess.run(cmd, capture_output=True, text=True)


def plan_rows(tidepool, model, gpu, batch, budget, modes):
    cmd = [tidepool, "plan", "--model", model, "--dataset", "imagenet-shapes", "--batch-size", str(batch),
           "--profile", gpu, "--heuristic", "best-fit", "--algo", "p", "--order", "prefetch-first",
           "--mode", ",".join(modes), "--json"]
    if budget:
        cmd += ["--budget", f"{budget}B"]
    r = run(cmd)
    if r.returncode != 0:
        sys.exit(f"{' '.join(cmd)} failed:\n{r.stderr}")
    return {row["mode"]: row for row in json.loads(r.stdout)}


def simulated_ms(tidepool, model, gpu, batch, mode, budget, batch_images):
    with tempfile.TemporaryDirectory() as out:
        cmd = [tidepool, "--batch", "--device", "sim", "--profile", gpu, "--model", model, "--dataset",
               "imagenet-shapes", "--batch-size", str(batch), "--iterations", "3", "--mode", mode,
               "--heuristic", "best-fit", "--out", os.path.join(out, "run")]
        if budget:
            cmd += ["--budget", f"{budget}B"]
        r = run(cmd)
        if r.returncode != 0:
            return None
        with open(os.path.join(out, "run", "summary.json")) as f:
            return 1e3 * batch_images / json.load(f)["images_per_second"]


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--tidepool", default="build/app/tidepool")
    ap.add_argument("--models", default="resnet50,vgg16,resnet152")
    ap.add_argument("--gpus", default="v100,h100")
    ap.add_argument("--shares", default="70,50,30")
    ap.add_argument("--batch", type=int, default=32)
    a = ap.parse_args()
    print("| network | GPU | budget | " + " | ".join(POLICIES) + " |")
    print("|---|---|---|" + "---|" * len(POLICIES))
    for model in a.models.split(","):
        for gpu in a.gpus.split(","):
            base = plan_rows(a.tidepool, model, gpu, a.batch, 0, ["base"])["base"]
            base_pred = base["predicted_iteration_us"] / 1e3
            base_sim = simulated_ms(a.tidepool, model, gpu, a.batch, "base", 0, a.batch)
            for share in (int(s) for s in a.shares.split(",")):
                budget = base["peak_load_bytes"] * share // 100
                rows = plan_rows(a.tidepool, model, gpu, a.batch, budget, POLICIES)
                cells = []
                for mode in POLICIES:
                    row = rows.get(mode)
                    fits = row and row.get("fits") and row.get("fits_budget", True)
                    if not fits:
                        cells.append("does not fit")
                        continue
                    pred = row["predicted_iteration_us"] / 1e3
                    sim = simulated_ms(a.tidepool, model, gpu, a.batch, mode, budget, a.batch)
                    sim_text = f"{100 * (sim / base_sim - 1):+.0f} %" if sim and base_sim else "refused"
                    cells.append(f"{100 * (pred / base_pred - 1):+.0f} % / {sim_text}")
                print(f"| {model} | {gpu} | {share} % ({budget / 2**30:.2f} GiB) | " + " | ".join(cells) + " |",
                      flush=True)


if __name__ == "__main__":
    main()
