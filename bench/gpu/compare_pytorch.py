#!/usr/bin/env python3
"""Tidepool's cuda device against PyTorch eager on the same GPU, one table.

Run by bench/gpu/run.sh after it has built Tidepool with CUDA and the copy
bandwidth probe; it can also be run by hand:

    python3 bench/gpu/compare_pytorch.py --tidepool build-gpu/app/tidepool \
        --copy-bandwidth build-gpu/copy_bandwidth --out runs/bench-gpu

What it measures, for ResNet-18 and VGG-16 on CIFAR-sized inputs, batch 128,
fp32 (no TF32 on either side: Tidepool's cuDNN convolutions run with
CUDNN_FMA_MATH, and PyTorch gets allow_tf32 = False for cuDNN and cuBLAS):

  1. Training images/s: Tidepool `--mode base` against PyTorch eager with
     torch.backends.cudnn.benchmark = True and cudnn.deterministic = True
     (timed choice among deterministic algorithms, as Tidepool's `--algo p`:
     without it PyTorch may time in the atomics-based weight-gradient
     kernels Tidepool never allows). Both synchronise once per step
     (Tidepool's executor ends every iteration with a device synchronize;
     the PyTorch loop calls torch.cuda.synchronize()). Tidepool's step time
     is the median iteration span of its trace (device events, from the
     first kernel enqueue to the host seeing the iteration done); PyTorch's
     the median wall time of a step. Warm-up iterations are left out of both.
  2. About half the activation bytes offloaded: Tidepool's `conv` or `aconv`
     mode, whichever offloads closer to half of what `all` offloads per
     iteration (measured from the traces), with `--transfer async`, against
     its own base; PyTorch with torch.autograd.graph.save_on_cpu(
     pin_memory=True) around the same convolutions (every conv for `conv`,
     every other one in forward order for `aconv`), against its own eager.
     save_on_cpu moves what autograd saves for a conv: its input and, unlike
     Tidepool, its weight.
  3. Host<->device throughput during Tidepool's offloading run (bytes over
     the offload and prefetch spans of the trace) against plain pinned
     cudaMemcpyAsync measured by copy_bandwidth in the same run.
  4. Peak device memory: Tidepool's pool (summary.json pool_bytes: every
     tensor of the run; the CUDA context, cuDNN/cuBLAS handles and their
     small scratch come on top) against PyTorch's
     torch.cuda.max_memory_reserved() (its caching allocator's peak, which
     includes cuDNN workspaces but not the context either).

The table goes to stdout; results.json and results.md go to --out.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
BATCH = 128
CLASSES = 10


# --------------------------------------------------------------------- Tidepool


def load_trace(path: Path) -> list[dict]:
    """The events of a Chrome trace written by Tidepool's ChromeTraceWriter."""
    text = path.read_text()
    try:
        data = json.loads(text)
    except json.JSONDecodeError:
        # A run that died mid-write leaves the array open; close it.
        data = json.loads(text.rstrip().rstrip(",") + "\n]}")
    return data["traceEvents"] if isinstance(data, dict) else data


def analyse_trace(events: list[dict], warmup: int) -> dict:
    """Steady-state step time and transfer figures from one run's trace."""
    steps, spans = {}, []
    for e in events:
        if e.get("ph") != "X":
            continue
        args = e.get("args", {})
        it = args.get("iteration", -1)
        if it < warmup:
            continue
        if e.get("cat") == "iteration":
            steps[it] = float(e["dur"])
        elif e.get("cat") in ("offload", "prefetch"):
            spans.append((e["cat"], it, float(e["dur"]), float(args.get("bytes", 0))))
    if not steps:
        raise RuntimeError("the trace has no iterations after the warm-up; raise --iterations")
    out = {"step_ms": statistics.median(steps.values()) / 1000.0, "iterations": len(steps)}
    for kind, key in (("offload", "d2h"), ("prefetch", "h2d")):
        chosen = [s for s in spans if s[0] == kind]
        total_bytes = sum(s[3] for s in chosen)
        total_us = sum(s[2] for s in chosen)
        out[f"{key}_bytes_per_iteration"] = total_bytes / len(steps)
        # bytes per microsecond / 1e3 = GB/s
        out[f"{key}_gbps"] = total_bytes / total_us / 1e3 if total_us > 0 else None
    return out


def run_tidepool(binary: Path, model: str, mode: str, iterations: int, warmup: int, out: Path,
                 log) -> dict:
    folder = out / f"tidepool-{model}-{mode}"
    cmd = [str(binary), "--batch", "--quiet", "--device", "cuda", "--model", model,
           "--dataset", "generated", "--batch-size", str(BATCH), "--iterations", str(iterations),
           "--mode", mode, "--transfer", "async", "--algo", "p", "--lr-schedule", "constant",
           "--trace-iterations", str(iterations), "--out", str(folder)]
    log(" ".join(cmd))
    with open(out / f"tidepool-{model}-{mode}.log", "w") as f:
        result = subprocess.run(cmd, cwd=REPO, stdout=f, stderr=subprocess.STDOUT)
    if result.returncode != 0:
        tail = (out / f"tidepool-{model}-{mode}.log").read_text()[-2000:]
        raise RuntimeError(f"tidepool failed ({' '.join(cmd)}):\n{tail}")
    summary = json.loads((folder / "summary.json").read_text())
    figures = analyse_trace(load_trace(folder / "trace.json"), warmup)
    figures["images_per_second"] = BATCH / (figures["step_ms"] / 1000.0)
    figures["summary_images_per_second"] = summary["images_per_second"]
    figures["pool_bytes"] = summary["pool_bytes"]
    figures["pinned_host_bytes"] = summary["pinned_host_bytes"]
    # Async offloads in the least pool: how many freed blocks stay parked
    # (forward does not reuse them while their copies run); 0 where the pool
    # is too tight, -1 for every one until needed.
    figures["park_horizon"] = summary.get("park_horizon", 0)
    figures["device"] = summary.get("device", "?")
    return figures


# ---------------------------------------------------------------------- PyTorch


def build_models(torch, nn):
    """The CIFAR ResNet-18 and VGG-16 exactly as models/resnet.cpp and
    models/vgg.cpp define them (layer for layer, same order of calls)."""

    class BasicBlock(nn.Module):
        # 3x3 -> 3x3, plus the shortcut (identity, or a strided 1x1 conv +
        # batchnorm where the shape changes: option B), then ReLU.
        def __init__(self, cin, planes, stride):
            super().__init__()
            self.conv1 = nn.Conv2d(cin, planes, 3, stride, 1, bias=False)
            self.bn1 = nn.BatchNorm2d(planes)
            self.conv2 = nn.Conv2d(planes, planes, 3, 1, 1, bias=False)
            self.bn2 = nn.BatchNorm2d(planes)
            self.downsample = None
            if stride != 1 or cin != planes:
                self.downsample = nn.Sequential(nn.Conv2d(cin, planes, 1, stride, 0, bias=False),
                                                nn.BatchNorm2d(planes))

        def forward(self, x):
            y = torch.relu(self.bn1(self.conv1(x)))
            y = self.bn2(self.conv2(y))
            s = x if self.downsample is None else self.downsample(x)
            return torch.relu(y + s)

    class ResNet18Cifar(nn.Module):
        # A 3x3 stem at full resolution (no 7x7/2 conv, no max-pool), four
        # stages of two basic blocks, global average pooling, one linear.
        def __init__(self, classes):
            super().__init__()
            self.conv1 = nn.Conv2d(3, 64, 3, 1, 1, bias=False)
            self.bn1 = nn.BatchNorm2d(64)
            blocks, cin = [], 64
            for planes, stride in ((64, 1), (128, 2), (256, 2), (512, 2)):
                blocks += [BasicBlock(cin, planes, stride), BasicBlock(planes, planes, 1)]
                cin = planes
            self.layers = nn.Sequential(*blocks)
            self.fc = nn.Linear(512, classes)

        def forward(self, x):
            x = torch.relu(self.bn1(self.conv1(x)))
            x = self.layers(x)
            x = torch.flatten(nn.functional.adaptive_avg_pool2d(x, 1), 1)
            return self.fc(x)

    def vgg16_cifar(classes):
        # Five groups of conv3x3-bn-relu (2, 2, 3, 3, 3 convs; convs without
        # bias since batchnorm follows), each closed by a 2x2 max-pool; the
        # 512 x 1 x 1 result goes to one linear layer.
        layers, cin = [], 3
        for channels, count in ((64, 2), (128, 2), (256, 3), (512, 3), (512, 3)):
            for _ in range(count):
                layers += [nn.Conv2d(cin, channels, 3, 1, 1, bias=False), nn.BatchNorm2d(channels),
                           nn.ReLU()]
                cin = channels
            layers.append(nn.MaxPool2d(2, 2))
        return nn.Sequential(*layers, nn.Flatten(), nn.Linear(512, classes))

    return {"resnet18": lambda: ResNet18Cifar(CLASSES), "vgg16": lambda: vgg16_cifar(CLASSES)}


def offload_convs(torch, nn, model, mode: str):
    """Wraps the convolutions Tidepool's `mode` offloads in save_on_cpu."""

    class SaveOnCpu(nn.Module):
        def __init__(self, conv):
            super().__init__()
            self.conv = conv

        def forward(self, x):
            with torch.autograd.graph.save_on_cpu(pin_memory=True):
                return self.conv(x)

    # Forward call order, which is Tidepool's node order for these models.
    order, hooks = [], []
    names = {m: n for n, m in model.named_modules()}
    for m in model.modules():
        if isinstance(m, nn.Conv2d):
            hooks.append(m.register_forward_pre_hook(lambda mod, inp: order.append(names[mod])))
    with torch.no_grad():
        model(torch.zeros(2, 3, 32, 32, device="cuda"))
    for h in hooks:
        h.remove()
    chosen = order if mode == "conv" else order[0::2]
    for name in chosen:
        parent_name, _, attr = name.rpartition(".")
        parent = model.get_submodule(parent_name) if parent_name else model
        setattr(parent, attr, SaveOnCpu(getattr(parent, attr)))
    return len(chosen), len(order)


def run_pytorch(model_name: str, offload_mode: str | None, iterations: int, warmup: int) -> dict:
    import torch
    import torch.nn as nn
    import torch.nn.functional as F

    torch.backends.cudnn.benchmark = True
    torch.backends.cudnn.deterministic = True  # as Tidepool: deterministic algorithms only
    torch.backends.cudnn.allow_tf32 = False
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.manual_seed(0)
    model = build_models(torch, nn)[model_name]().cuda()
    wrapped = None
    if offload_mode:
        wrapped = offload_convs(torch, nn, model, offload_mode)
    opt = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9, weight_decay=5e-4)
    # Like Tidepool's loader, the batch waits in pinned host memory and is
    # copied to the device every step.
    images = torch.randn(BATCH, 3, 32, 32).pin_memory()
    labels = torch.randint(0, CLASSES, (BATCH,)).pin_memory()
    torch.cuda.synchronize()
    torch.cuda.empty_cache()
    torch.cuda.reset_peak_memory_stats()

    def step():
        x = images.cuda(non_blocking=True)
        y = labels.cuda(non_blocking=True)
        loss = F.cross_entropy(model(x), y)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()

    for _ in range(warmup):
        step()
    torch.cuda.synchronize()
    times = []
    for _ in range(iterations):
        start = time.perf_counter()
        step()
        torch.cuda.synchronize()
        times.append(time.perf_counter() - start)
    step_ms = statistics.median(times) * 1000.0
    out = {"step_ms": step_ms, "images_per_second": BATCH / (step_ms / 1000.0),
           "max_memory_reserved": torch.cuda.max_memory_reserved(),
           "max_memory_allocated": torch.cuda.max_memory_allocated(),
           "torch": torch.__version__, "cudnn": torch.backends.cudnn.version()}
    if wrapped:
        out["offloaded_convs"] = f"{wrapped[0]} of {wrapped[1]}"
    del model, opt, images, labels
    torch.cuda.empty_cache()
    return out


# ------------------------------------------------------------------------ table


def gib(b):
    return f"{b / 2**30:.2f} GiB" if b is not None else "n/a"


def fmt(v, unit="", digits=1):
    return "n/a" if v is None else f"{v:,.{digits}f}{unit}"


def parking(horizon: int) -> str:
    """What Tidepool's run did with the blocks its async offloads freed."""
    # tidepool's words for the park horizon (engine/plan/memory_facts.h)
    return "freed blocks parked: " + ("none" if horizon == 0 else "all" if horizon < 0 else f"up to {horizon}")


def make_rows(results: dict, copy: dict | None) -> list[tuple[str, str, str, str]]:
    rows = []
    for model, r in results.items():
        tb, tp = r["tidepool"]["base"], r["pytorch"]["base"]
        mode = r["offload_mode"]
        to, po = r["tidepool"][mode], r["pytorch"]["offload"]
        rows.append((f"{model}: training images/s (base / eager)",
                     fmt(tb["images_per_second"], digits=0), fmt(tp["images_per_second"], digits=0),
                     f"Tidepool {tb['images_per_second'] / tp['images_per_second']:.2f}x PyTorch"))
        rows.append((f"{model}: step time, base / eager",
                     fmt(tb["step_ms"], " ms", 2), fmt(tp["step_ms"], " ms", 2),
                     "median of steady-state steps"))
        rows.append((f"{model}: step time, ~half offloaded",
                     fmt(to["step_ms"], " ms", 2), fmt(po["step_ms"], " ms", 2),
                     f"Tidepool --mode {mode} --transfer async ({r['offload_fraction'] * 100:.0f}% of "
                     f"`all`'s bytes; {parking(to.get('park_horizon', 0))}); "
                     f"PyTorch save_on_cpu on {po.get('offloaded_convs', '?')} convs"))
        rows.append((f"{model}: offload slowdown vs own base",
                     f"{(to['step_ms'] / tb['step_ms'] - 1) * 100:+.1f}%",
                     f"{(po['step_ms'] / tp['step_ms'] - 1) * 100:+.1f}%", ""))
        peak_h2d = copy.get("h2d_gbps") if copy else None
        peak_d2h = copy.get("d2h_gbps") if copy else None
        rows.append((f"{model}: D2H GB/s while training (offload)",
                     fmt(to.get("d2h_gbps"), digits=1), "n/a",
                     f"plain pinned cudaMemcpyAsync: {fmt(peak_d2h, digits=1)} GB/s"))
        rows.append((f"{model}: H2D GB/s while training (prefetch)",
                     fmt(to.get("h2d_gbps"), digits=1), "n/a",
                     f"plain pinned cudaMemcpyAsync: {fmt(peak_h2d, digits=1)} GB/s"))
        rows.append((f"{model}: peak device memory, base",
                     gib(tb["pool_bytes"]), gib(tp["max_memory_reserved"]),
                     "Tidepool pool_bytes; PyTorch max_memory_reserved"))
        rows.append((f"{model}: peak device memory, ~half offloaded",
                     gib(to["pool_bytes"]), gib(po["max_memory_reserved"]),
                     f"pinned host: Tidepool {gib(to['pinned_host_bytes'])}"))
    return rows


def render(rows, header=("measure", "Tidepool", "PyTorch", "note")) -> str:
    widths = [max(len(str(r[i])) for r in [header, *rows]) for i in range(4)]
    line = lambda r: "| " + " | ".join(str(c).ljust(w) for c, w in zip(r, widths)) + " |"
    sep = "|" + "|".join("-" * (w + 2) for w in widths) + "|"
    return "\n".join([line(header), sep, *(line(r) for r in rows)])


# ------------------------------------------------------------------------- main


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--tidepool", type=Path, default=REPO / "build-gpu" / "app" / "tidepool")
    ap.add_argument("--copy-bandwidth", type=Path, default=REPO / "build-gpu" / "copy_bandwidth")
    ap.add_argument("--out", type=Path, default=REPO / "runs" / "bench-gpu")
    ap.add_argument("--models", nargs="+", default=["resnet18", "vgg16"], choices=["resnet18", "vgg16"])
    ap.add_argument("--iterations", type=int, default=60, help="measured steps per run (after warm-up)")
    ap.add_argument("--warmup", type=int, default=10)
    args = ap.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    log = lambda msg: print(f"[compare] {msg}", file=sys.stderr, flush=True)

    copy = None
    if args.copy_bandwidth.exists():
        log(f"{args.copy_bandwidth}")
        p = subprocess.run([str(args.copy_bandwidth)], capture_output=True, text=True)
        sys.stderr.write(p.stderr)
        if p.returncode == 0 and p.stdout.strip():
            copy = json.loads(p.stdout.strip().splitlines()[-1])
    else:
        log(f"no copy-bandwidth probe at {args.copy_bandwidth}; that column stays empty")

    total = args.iterations + args.warmup
    results = {}
    for model in args.models:
        r = {"tidepool": {}, "pytorch": {}}
        # Tidepool first, each run its own process, then PyTorch in this one:
        # never two users of the GPU at once.
        for mode in ("base", "all", "conv", "aconv"):
            r["tidepool"][mode] = run_tidepool(args.tidepool, model, mode, total, args.warmup, args.out, log)
        all_bytes = r["tidepool"]["all"]["d2h_bytes_per_iteration"]
        fractions = {m: r["tidepool"][m]["d2h_bytes_per_iteration"] / all_bytes for m in ("conv", "aconv")}
        mode = min(fractions, key=lambda m: abs(fractions[m] - 0.5))
        r["offload_mode"], r["offload_fraction"], r["fractions"] = mode, fractions[mode], fractions
        log(f"{model}: offloaded per iteration vs `all`: conv {fractions['conv']:.0%}, "
            f"aconv {fractions['aconv']:.0%}; using {mode}")
        log(f"{model}: PyTorch eager")
        r["pytorch"]["base"] = run_pytorch(model, None, args.iterations, args.warmup)
        log(f"{model}: PyTorch save_on_cpu ({mode})")
        r["pytorch"]["offload"] = run_pytorch(model, mode, args.iterations, args.warmup)
        results[model] = r

    rows = make_rows(results, copy)
    first = next(iter(results.values()))
    device = first["tidepool"]["base"]["device"]
    title = (f"Tidepool vs PyTorch {first['pytorch']['base']['torch']} (cuDNN "
             f"{first['pytorch']['base']['cudnn']}) on {device}; CIFAR inputs, batch {BATCH}, fp32 "
             f"(no TF32)")
    table = render(rows)
    print(title)
    print(table)
    (args.out / "results.json").write_text(json.dumps({"copy_bandwidth": copy, "models": results}, indent=2))
    (args.out / "results.md").write_text(f"{title}\n\n{table}\n")
    log(f"wrote {args.out / 'results.json'} and {args.out / 'results.md'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
