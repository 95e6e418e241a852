#!/usr/bin/env python3
"""AccUDNN §3.4's claim on the cpu device: under a budget between `all`'s
smallest pool and `base`'s, mode accudnn trains at base's speed (within 5 %)
while vDNN's `all` stalls on the transfers, with the same parameters.

1. `tidepool profile` measures the cpu device with the link throttled to
   --link-gbps (unless --profile names a profile already measured so).
2. `tidepool plan --profile ... --json` gives every mode's pool and the
   model's predicted iteration and stall; the budget is the midpoint of
   all's smallest pool and base's needed pool, in whole MiB (or --budget).
3. `tidepool --batch` on the cpu device with the same link: base, all in its
   own pool, all in the budget, accudnn in the budget; --repeats rounds of
   them, interleaved (each round starting one mode later), so that a change
   in the machine's load hits every mode.
   Each row's figures are medians over the traced iterations after the
   first of each run (trace.json's iteration spans; the stall is the
   compute stream's wait spans on feature maps, without the input batch's,
   which the model leaves out). The same four on the sim device running the
   profile (`--device sim`) give the executor's schedule in virtual time.

The parameter checksums of the cpu runs must agree.

    build/app/tidepool must exist;
    bench/accudnn_stalls.py [--model resnet20] [--batch 128] [--link-gbps 0.5] [--threads 1] [--iterations 6]
                            [--repeats 3] [--profile FILE] [--budget MIB] [--keep DIR]
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

MIB = 2**20
INPUTS = {"data", "labels"}


def trace_figures(trace_path: Path):
    """Per traced iteration after the first: (iteration ms, map stall ms, input wait ms)."""
    data = json.loads(trace_path.read_text())
    events = data["traceEvents"] if isinstance(data, dict) else data
    its, maps, inputs = {}, {}, {}
    for e in events:
        if e.get("ph") != "X":
            continue
        i = e.get("args", {}).get("iteration", -1)
        if e.get("cat") == "iteration":
            its[i] = e["dur"] / 1000
        elif e.get("cat") == "wait" and e.get("tid") == 1:  # tid 1: the compute stream
            into = inputs if e["args"].get("tensor") in INPUTS else maps
            into[i] = into.get(i, 0) + e["dur"] / 1000
    return [(its[i], maps.get(i, 0), inputs.get(i, 0)) for i in sorted(its) if i >= 1]


def tidepool(args, cmd):
    cmd = [args.tidepool] + cmd
    print("$ " + " ".join(cmd), file=sys.stderr, flush=True)
    env = dict(os.environ, OMP_NUM_THREADS=str(args.threads)) if args.threads else None
    done = subprocess.run(cmd, capture_output=True, text=True, env=env)
    if done.returncode != 0:
        sys.exit(f"tidepool failed:\n{done.stdout}\n{done.stderr}")
    return done.stdout


def plan(args, profile, budget_mib=None):
    cmd = ["plan", "--model", args.model, "--batch-size", str(args.batch), "--heuristic", args.heuristic,
           "--profile", str(profile), "--json"]
    if budget_mib:
        # AccUDNN's and AutoSwap's rows plan in the budget; the run's row
        # (the first mode) does too, so it is accudnn's: the others show
        # the pool they need.
        cmd += ["--budget", f"{budget_mib}MiB", "--mode", "accudnn,autoswap,base,all,conv,aconv"]
    rows = json.loads(tidepool(args, cmd))
    return {r["mode"]: r for r in rows if r["algo"] == args.algo and r["order"] == "prefetch-first"}


def train(args, out: Path, device, mode, budget_mib, profile):
    cmd = ["--batch", "--quiet", "--device", device, "--model", args.model, "--batch-size", str(args.batch),
           "--iterations", str(args.iterations), "--trace-iterations", str(args.iterations), "--seed", "1",
           "--algo", args.algo, "--heuristic", args.heuristic, "--mode", mode, "--out", str(out)]
    if device == "cpu":
        cmd += ["--link-gbps", str(args.link_gbps)]
    if device == "sim" or mode == "accudnn":
        cmd += ["--profile", str(profile)]
    if budget_mib:
        cmd += ["--budget", f"{budget_mib}MiB"]
    tidepool(args, cmd)
    summary = json.loads((out / "summary.json").read_text())
    return {"pool": summary["pool_bytes"], "offloaded": summary["offloaded_bytes"],
            "checksum": summary["param_checksum"], "iterations": trace_figures(out / "trace.json")}


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--tidepool", default="build/app/tidepool")
    ap.add_argument("--model", default="resnet20", help="at CIFAR shapes (the generated dataset)")
    ap.add_argument("--batch", type=int, default=128)
    ap.add_argument("--link-gbps", type=float, default=0.5)
    ap.add_argument("--algo", default="m")
    ap.add_argument("--heuristic", default="best-fit")
    ap.add_argument("--threads", type=int, default=1,
                    help="OMP_NUM_THREADS of the profile and the runs (0: as the environment says); one thread "
                         "keeps its pace on a machine shared with other work, where two wait for each other")
    ap.add_argument("--iterations", type=int, default=6, help="per run; the first is left out (warm-up)")
    ap.add_argument("--repeats", type=int, default=3, help="interleaved rounds of the cpu runs")
    ap.add_argument("--profile", help="a profile measured with the same link (default: measure one)")
    ap.add_argument("--profile-iterations", type=int, default=3)
    ap.add_argument("--budget", type=int, help="MiB (default: the midpoint of all's smallest and base's pool)")
    ap.add_argument("--keep", help="keep the profile and the run folders under this folder")
    args = ap.parse_args()
    if args.iterations < 2:
        sys.exit("--iterations must be at least 2: the first one is a warm-up")

    tmp = None
    if args.keep:
        root = Path(args.keep)
        root.mkdir(parents=True, exist_ok=True)
    else:
        tmp = tempfile.TemporaryDirectory(prefix="accudnn-stalls-")
        root = Path(tmp.name)

    profile = Path(args.profile) if args.profile else root / "profile.json"
    if not args.profile:
        tidepool(args, ["profile", "--model", args.model, "--batch-size", str(args.batch), "--link-gbps",
                        str(args.link_gbps), "--algo", args.algo, "--iterations", str(args.profile_iterations), "-o", str(profile)])

    free = plan(args, profile)
    least_all, base_pool = free["all"]["minimum_pool_bytes"], free["base"]["needed_pool_bytes"]
    budget = args.budget or round((least_all + base_pool) / 2 / MIB)
    at = plan(args, profile, budget)
    # (label, mode, budget MiB, the plan row that predicts it: None where plan has none)
    rows = [("base", "base", None, free["base"]), ("all", "all", None, free["all"]),
            ("all", "all", budget, None), ("accudnn", "accudnn", budget, at["accudnn"])]

    cpu = {i: [] for i in range(len(rows))}
    for r in range(args.repeats):
        for k in range(len(rows)):  # each round starts one mode later, so no mode is always first
            i = (k + r) % len(rows)
            label, mode, b, _ = rows[i]
            cpu[i].append(train(args, root / f"cpu-{label}-{b or 'own'}-{r}", "cpu", mode, b, profile))
    sim = [train(args, root / f"sim-{label}-{b or 'own'}", "sim", mode, b, profile)
           for label, mode, b, _ in rows]

    def median(runs, k):
        return statistics.median(it[k] for run in runs for it in run["iterations"])

    base_ms = median(cpu[0], 0)
    checksums = {run["checksum"] for runs in cpu.values() for run in runs}
    print(f"{args.model}, batch {args.batch}, cpu device with the link at {args.link_gbps:g} GB/s, algo {args.algo}, "
          f"{args.heuristic}, async, prefetch-first, {args.threads or 'OMP_NUM_THREADS'} "
          f"{'thread' if args.threads == 1 else 'threads'}; all's smallest pool {least_all / MIB:.1f} MiB, base's "
          f"{base_pool / MIB:.1f} MiB; measured: median of {args.repeats} x {args.iterations - 1} iterations; "
          f"predicted: plan --profile; sim: --device sim on the same profile")
    print("| mode | budget | pool MiB | offloaded MiB | measured ms/iter | measured stall ms | predicted ms | "
          "predicted stall ms | sim ms | sim stall ms | time vs base | checksum |")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|")
    for i, (label, mode, b, predicted) in enumerate(rows):
        runs = cpu[i]
        ms, stall = median(runs, 0), median(runs, 1)
        p_ms = f"{predicted['predicted_iteration_us'] / 1e3:.1f}" if predicted else "-"
        p_stall = f"{predicted['predicted_stall_us'] / 1e3:.1f}" if predicted else "-"
        offloaded = {run["offloaded"] for run in runs}
        print(f"| {label} | {f'{b} MiB' if b else '-'} | {runs[0]['pool'] / MIB:.1f} "
              f"| {'/'.join(f'{o / MIB:.1f}' for o in sorted(offloaded))} | {ms:.1f} | {stall:.1f} | {p_ms} "
              f"| {p_stall} | {median([sim[i]], 0):.1f} | {median([sim[i]], 1):.1f} "
              f"| {100 * (ms / base_ms - 1):+.1f} % | {runs[0]['checksum']} |")
    inputs = median([run for runs in cpu.values() for run in runs], 2)
    print(f"stall: the compute stream's waits on feature maps; it also waits {inputs:.1f} ms per iteration (median) "
          f"for the input batch's upload, in every mode")
    print("parameters: " + ("bit-identical in every row" if len(checksums) == 1 else f"DIFFER: {checksums}"))
    # Each run's iteration medians, for judging the noise.
    for i, (label, mode, b, _) in enumerate(rows):
        spread = ", ".join(f"{statistics.median(it[0] for it in run['iterations']):.1f}" for run in cpu[i])
        print(f"  {label} {f'{b} MiB' if b else '(own pool)'}: ms/iter per run {spread}", file=sys.stderr)
    if tmp:
        tmp.cleanup()
    return 0 if len(checksums) == 1 else 1


if __name__ == "__main__":
    sys.exit(main())
