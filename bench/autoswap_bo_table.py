#!/usr/bin/env python3
"""AutoSwap's bo score against its four fixed scores (doa, aoa, wdoa,
swdoa): the overhead of an iteration and the bytes offloaded per iteration
at three budgets per model, on the sim device, so the table is about the
policy and not the machine's noise.

For each model, `tidepool plan --budget 1MiB --json` names AutoSwap's
smallest workable pool and base's pool; the budgets lie 25 %, 50 % and 75 %
of the way between them (whole MiB). Every row is one `tidepool --batch`
run on `--device sim --profile P`; its iteration time is the median of the
traced iterations after the first (trace.json's iteration spans; the sim
device's clock is virtual, so they agree to the nanosecond), and the
overhead is that less base's (no budget, same profile). bo's weights are
those its start-up search printed ("autoswap bo: weights ..."). The
parameter checksums must agree within a model: the sim device computes no
numbers, so they are the initial parameters, and what offloading could
change is the schedule only.

    build/app/tidepool must exist;
    bench/autoswap_bo_table.py [--models resnet18,vgg16] [--batch 128] [--profile m40] [--keep DIR]
"""
import argparse
import json
import re
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

SCORES = ["doa", "aoa", "wdoa", "swdoa", "bo"]
FRACTIONS = [0.25, 0.5, 0.75]
MIB = 2**20


def iteration_ms(trace_path: Path):
    """Median duration of the traced iterations after the first, ms."""
    data = json.loads(trace_path.read_text())
    events = data["traceEvents"] if isinstance(data, dict) else data
    spans = sorted((e["args"]["iteration"], e["dur"]) for e in events
                   if e.get("ph") == "X" and e.get("cat") == "iteration")
    later = [d for i, d in spans if i >= 1] or [d for _, d in spans]
    return statistics.median(later) / 1000


def pools(args, model):
    """(AutoSwap's smallest workable pool, base's pool), bytes."""
    cmd = [args.tidepool, "plan", "--model", model, "--batch-size", str(args.batch), "--heuristic", args.heuristic,
           "--budget", "1MiB", "--mode", "autoswap,base", "--json"]  # autoswap first: the run's row, in the budget
    print("$ " + " ".join(cmd), file=sys.stderr)
    rows = json.loads(subprocess.run(cmd, check=True, capture_output=True, text=True).stdout)
    mine = {r["mode"]: r for r in rows if r["algo"] == args.algo and r["order"] == "prefetch-first"}
    return mine["autoswap"]["minimum_pool_bytes"], mine["base"]["pool_bytes"]


def run(args, out: Path, model, mode, score=None, budget_mib=None):
    cmd = [args.tidepool, "--batch", "--quiet", "--device", "sim", "--profile", args.profile, "--model", model,
           "--batch-size", str(args.batch), "--iterations", str(args.iterations), "--trace-iterations",
           str(args.iterations), "--algo", args.algo, "--heuristic", args.heuristic, "--seed", "1", "--mode", mode,
           "--out", str(out)]
    if score:
        cmd += ["--swap-score", score]
    if budget_mib:
        cmd += ["--budget", f"{budget_mib}MiB"]
    print("$ " + " ".join(cmd), file=sys.stderr)
    done = subprocess.run(cmd, capture_output=True, text=True)
    if done.returncode != 0:
        sys.exit(f"tidepool failed:\n{done.stdout}\n{done.stderr}")
    summary = json.loads((out / "summary.json").read_text())
    r = {"ms": iteration_ms(out / "trace.json"), "offloaded": summary["offloaded_bytes"],
         "limit": summary.get("load_limit_bytes", 0), "checksum": summary["param_checksum"]}
    bo = re.search(r"autoswap bo: weights aoa (\S+) doa (\S+) wdoa (\S+) swdoa (\S+), overhead (\S+) ms per "
                   r"iteration \(best single score (\S+) ms\)", done.stdout)
    if bo:
        r["weights"] = tuple(float(bo.group(i)) for i in range(1, 5))
        r["search_ms"], r["search_single_ms"] = float(bo.group(5)), float(bo.group(6))
    elif score == "bo":
        sys.exit(f"no 'autoswap bo:' line in the output of the bo run:\n{done.stdout}")
    return r


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--tidepool", default="build/app/tidepool")
    ap.add_argument("--models", default="resnet18,vgg16", help="at CIFAR shapes (the generated dataset)")
    ap.add_argument("--batch", type=int, default=128)
    ap.add_argument("--profile", default="m40", help="the sim device's performance profile")
    ap.add_argument("--algo", default="p")
    ap.add_argument("--heuristic", default="best-fit")
    ap.add_argument("--iterations", type=int, default=3, help="the first is left out")
    ap.add_argument("--keep", help="keep the run folders under this folder")
    args = ap.parse_args()

    tmp = None
    if args.keep:
        root = Path(args.keep)
        root.mkdir(parents=True, exist_ok=True)
    else:
        tmp = tempfile.TemporaryDirectory(prefix="autoswap-bo-")
        root = Path(tmp.name)

    table, weights, failed = [], [], False
    for model in args.models.split(","):
        least, whole = pools(args, model)
        base = run(args, root / f"{model}-base", model, "base")
        checksums = {base["checksum"]}
        for f in FRACTIONS:
            budget = round((least + f * (whole - least)) / MIB)
            rows = {s: run(args, root / f"{model}-{budget}-{s}", model, "autoswap", s, budget) for s in SCORES}
            checksums |= {r["checksum"] for r in rows.values()}
            table.append((model, f, budget, base, rows))
            bo = rows["bo"]
            weights.append((model, budget, bo))
            best_fixed = min(rows[s]["ms"] for s in SCORES[:-1])
            if bo["ms"] > best_fixed + 1e-6:
                print(f"note: {model} at {budget} MiB: bo's {bo['ms'] - base['ms']:.2f} ms overhead is above the "
                      f"best fixed score's {best_fixed - base['ms']:.2f}", file=sys.stderr)
        if len(checksums) != 1:
            failed = True
            print(f"{model}: parameter checksums DIFFER: {checksums}", file=sys.stderr)
        print(f"{model}: base {base['ms']:.2f} ms/iteration in {whole / MIB:.0f} MiB; AutoSwap's smallest pool "
              f"{least / MIB:.0f} MiB; parameters {'bit-identical in every row' if len(checksums) == 1 else 'DIFFER'}",
              file=sys.stderr)

    print(f"sim device, profile {args.profile}, batch {args.batch}, algo {args.algo}, {args.heuristic}, async, "
          f"prefetch-first; overhead: ms per iteration over base's; offloaded: MiB per iteration")
    print("| model | budget MiB (of the way) | " + " | ".join(SCORES) + " |")
    print("|---|---|" + "---|" * len(SCORES))
    for model, f, budget, base, rows in table:
        cells = [f"{rows[s]['ms'] - base['ms']:.2f} ms, {rows[s]['offloaded'] / MIB:.0f}" for s in SCORES]
        print(f"| {model} | {budget} ({f:.0%}) | " + " | ".join(cells) + " |")
    print()
    print("bo's weights (each score divided by its largest value over the candidates) and its search's own figures")
    print("| model | budget MiB | aoa | doa | wdoa | swdoa | search: best overhead ms | search: best single score ms |")
    print("|---|---|---|---|---|---|---|---|")
    for model, budget, bo in weights:
        a, d, w, s = bo["weights"]
        print(f"| {model} | {budget} | {a:.3f} | {d:.3f} | {w:.3f} | {s:.3f} | {bo['search_ms']:.2f} "
              f"| {bo['search_single_ms']:.2f} |")
    if tmp:
        tmp.cleanup()
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
