#!/usr/bin/env python3
"""Tidepool's cpu device against PyTorch's CPU build: training images/s of
each zoo model at CIFAR shapes, and where a Tidepool step's time goes.

Both sides train the same network (the zoo's definitions in models/*.cpp,
rebuilt below in torch.nn layer for layer) with SGD (momentum 0.9, weight
decay 5e-4) and softmax cross-entropy at --batch images, on --threads
threads (OMP_NUM_THREADS for Tidepool, torch.set_num_threads for PyTorch),
in fp32 and in bf16 (Tidepool: --precision bf16; PyTorch: its bf16 autocast,
torch.autocast("cpu", dtype=torch.bfloat16)).

Tidepool's side is one `tidepool --batch` run per cell on the generated
dataset; its time is read from the run's trace.json: the iteration spans
after the first --warmup iterations (oneDNN builds its primitives in the
first). PyTorch's side runs in a child process of this script on random
tensors, --warmup untimed steps, then --iterations timed ones. Each cell
takes the median step time of a run; --repeats rounds interleave the two
sides (each round starting with the other one), so that a change in the
machine's load hits both, and the table shows the median over the rounds.

--layers N prints, per model and precision, the N layers (forward or
backward) that take the most of a Tidepool step, by kind of layer too, and
the time between kernels: the iteration's span minus the compute spans in it
(the executor's dispatch, the input upload and the loss readback). The
time of a layer span is all of it: the reorders between plain and blocked
layouts inside a convolution and the 16-bit conversions of bf16 run inside
the span of the layer they serve.

PyTorch is an optional peer, not part of the set-up: on Debian,
`apt-get install python3-torch`. Without it the script prints Tidepool's
side only (and says so).

    build/app/tidepool must exist;
    bench/vs_pytorch.py [--models resnet20,resnet56,...] [--precision fp32,bf16] [--batch 128] [--fuse none,relu]
                        [--threads 2] [--iterations 10] [--warmup 2] [--repeats 3] [--layers N]
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

MODELS = ["resnet20", "resnet56", "resnet18", "vgg16", "mobilenet", "alexnet"]


# ---------------------------------------------------------------- PyTorch side

def torch_model(name: str, classes: int = 10):
    """The zoo's CIFAR variant of `name` (models/*.cpp) in torch.nn."""
    import torch.nn as nn

    def conv_bn(c_in, c_out, k, stride, pad, groups=1, relu=True):
        layers = [nn.Conv2d(c_in, c_out, k, stride, pad, groups=groups, bias=False), nn.BatchNorm2d(c_out)]
        return layers + ([nn.ReLU(inplace=False)] if relu else [])

    class Basic(nn.Module):
        # models/resnet.cpp basic_block: 3x3 -> 3x3, option-B projection shortcut.
        def __init__(self, c_in, planes, stride):
            super().__init__()
            self.branch = nn.Sequential(*conv_bn(c_in, planes, 3, stride, 1), *conv_bn(planes, planes, 3, 1, 1, relu=False))
            self.shortcut = (nn.Sequential(*conv_bn(c_in, planes, 1, stride, 0, relu=False))
                             if stride != 1 or c_in != planes else nn.Identity())
            self.relu = nn.ReLU()

        def forward(self, x):
            return self.relu(self.branch(x) + self.shortcut(x))

    def resnet(stem, stages):
        layers, c = list(conv_bn(3, stem, 3, 1, 1)), stem
        for planes, blocks, stride in stages:
            for i in range(blocks):
                layers.append(Basic(c, planes, stride if i == 0 else 1))
                c = planes
        return nn.Sequential(*layers, nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(c, classes))

    if name.startswith("resnet") and int(name[6:]) in (20, 32, 44, 56, 110):
        n = (int(name[6:]) - 2) // 6
        return resnet(16, [(16, n, 1), (32, n, 2), (64, n, 2)])
    if name in ("resnet18", "resnet34"):
        blocks = {"resnet18": [2, 2, 2, 2], "resnet34": [3, 4, 6, 3]}[name]
        return resnet(64, list(zip([64, 128, 256, 512], blocks, [1, 2, 2, 2])))
    if name.startswith("vgg"):
        sizes = {"vgg11": [1, 1, 2, 2, 2], "vgg13": [2] * 5, "vgg16": [2, 2, 3, 3, 3], "vgg19": [2, 2, 4, 4, 4]}[name]
        layers, c = [], 3
        for width, count in zip([64, 128, 256, 512, 512], sizes):
            for _ in range(count):
                layers += conv_bn(c, width, 3, 1, 1)
                c = width
            layers.append(nn.MaxPool2d(2, 2))
        return nn.Sequential(*layers, nn.Flatten(), nn.Linear(512, classes))
    if name == "mobilenet":
        # models/mobilenet.cpp: stride-1 stem on CIFAR, 13 separable blocks.
        blocks = [(64, 1), (128, 2), (128, 1), (256, 2), (256, 1), (512, 2)] + [(512, 1)] * 5 + [(1024, 2), (1024, 1)]
        layers, c = list(conv_bn(3, 32, 3, 1, 1)), 32
        for out, stride in blocks:
            layers += conv_bn(c, c, 3, stride, 1, groups=c) + conv_bn(c, out, 1, 1, 0)
            c = out
        return nn.Sequential(*layers, nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(c, classes))
    if name == "alexnet":
        # models/alexnet.cpp, CIFAR: 3x3 stem, 2x2 pools, torchvision's classifier.
        return nn.Sequential(
            nn.Conv2d(3, 64, 3, 1, 1), nn.ReLU(), nn.MaxPool2d(2, 2),
            nn.Conv2d(64, 192, 5, 1, 2), nn.ReLU(), nn.MaxPool2d(2, 2),
            nn.Conv2d(192, 384, 3, 1, 1), nn.ReLU(), nn.Conv2d(384, 256, 3, 1, 1), nn.ReLU(),
            nn.Conv2d(256, 256, 3, 1, 1), nn.ReLU(), nn.MaxPool2d(2, 2), nn.Flatten(),
            nn.Dropout(0.5), nn.Linear(256 * 4 * 4, 4096), nn.ReLU(),
            nn.Dropout(0.5), nn.Linear(4096, 4096), nn.ReLU(), nn.Linear(4096, classes))
    raise SystemExit(f"vs_pytorch: no PyTorch definition of '{name}' here")


def torch_worker(model: str, precision: str, batch: int, threads: int, warmup: int, iterations: int):
    """Runs in a child process: prints the step times in ms as JSON."""
    import time
    import torch
    import torch.nn.functional as F

    torch.set_num_threads(threads)
    torch.manual_seed(1)
    net = torch_model(model).train()
    opt = torch.optim.SGD(net.parameters(), lr=0.01, momentum=0.9, weight_decay=5e-4)
    x = torch.randn(batch, 3, 32, 32)
    y = torch.randint(0, 10, (batch,))
    times = []
    for i in range(warmup + iterations):
        start = time.perf_counter()
        opt.zero_grad(set_to_none=True)
        with torch.autocast("cpu", dtype=torch.bfloat16, enabled=precision == "bf16"):
            loss = F.cross_entropy(net(x), y)
        loss.backward()
        opt.step()
        if i >= warmup:
            times.append((time.perf_counter() - start) * 1e3)
    print(json.dumps({"ms": times, "torch": torch.__version__}))


def torch_python(given: str):
    """An interpreter that can import torch: --torch-python, this one, or Debian's
    /usr/bin/python3 (python3-torch installs there, which a pyenv or venv python
    on PATH does not see). None when none can."""
    for exe in ([given] if given else [sys.executable, "/usr/bin/python3"]):
        if exe and Path(exe).exists() and subprocess.run([exe, "-c", "import torch"], capture_output=True).returncode == 0:
            return exe
    return None


def run_torch(args, model, precision):
    cmd = [args.torch_python, __file__, "--torch-worker", model, "--precision", precision, "--batch", str(args.batch),
           "--threads", str(args.threads), "--warmup", str(args.warmup), "--iterations", str(args.iterations)]
    env = dict(os.environ, OMP_NUM_THREADS=str(args.threads))
    print("$ " + " ".join(cmd), file=sys.stderr, flush=True)
    done = subprocess.run(cmd, capture_output=True, text=True, env=env)
    if done.returncode != 0:
        sys.exit(f"the PyTorch run failed:\n{done.stdout}\n{done.stderr}")
    out = json.loads(done.stdout.strip().splitlines()[-1])
    return {"ms": statistics.median(out["ms"]), "version": out["torch"]}


# ---------------------------------------------------------------- Tidepool side

def read_trace(path: Path, warmup: int):
    """Per iteration from `warmup` on: its ms and {(layer, 'fwd'|'bwd'|kind): ms}, and the gap ms."""
    data = json.loads(path.read_text())
    events = data["traceEvents"] if isinstance(data, dict) else data
    its, spans = {}, {}
    for e in events:
        if e.get("ph") != "X":
            continue
        i = e.get("args", {}).get("iteration", -1)
        if i < warmup:
            continue
        if e.get("cat") == "iteration":
            its[i] = e["dur"] / 1e3
        elif e.get("tid") == 1:  # the compute stream
            spans.setdefault(i, []).append(e)
    rows = []
    for i in sorted(its):
        layers = {}
        for e in spans.get(i, []):
            cat = e["cat"]
            name = e["args"].get("layer") or e["name"].rsplit(" ", 1)[0]
            key = (name, {"forward": "fwd", "backward": "bwd"}.get(cat, cat))
            layers[key] = layers.get(key, 0) + e["dur"] / 1e3
        rows.append({"ms": its[i], "layers": layers, "gap": its[i] - sum(layers.values())})
    return rows


def run_tidepool(args, model, precision, fuse, out: Path):
    total = args.warmup + args.iterations
    cmd = [args.tidepool, "--batch", "--quiet", "--model", model, "--batch-size", str(args.batch),
           "--iterations", str(total), "--trace-iterations", str(total), "--precision", precision,
           "--fuse", fuse, "--seed", "1", "--out", str(out)]
    env = dict(os.environ, OMP_NUM_THREADS=str(args.threads))
    print("$ OMP_NUM_THREADS=%d " % args.threads + " ".join(cmd), file=sys.stderr, flush=True)
    done = subprocess.run(cmd, capture_output=True, text=True, env=env)
    if done.returncode != 0:
        sys.exit(f"tidepool failed:\n{done.stdout}\n{done.stderr}")
    rows = read_trace(out / "trace.json", args.warmup)
    if not rows:
        sys.exit(f"tidepool: no iterations after the warm-up in {out / 'trace.json'}")
    return {"ms": statistics.median(r["ms"] for r in rows), "rows": rows}


def layer_kind(name: str) -> str:
    """The kind of a zoo layer, from its name (models/*.cpp name them as torchvision does)."""
    last = name.rsplit(".", 1)[-1]
    if name.endswith("downsample.0"):
        return "conv"
    if name.endswith("downsample.1"):
        return "batchnorm"
    for part, kind in (("dw_conv", "conv (depthwise)"), ("conv", "conv"), ("bn", "batchnorm"), ("relu", "relu"),
                       ("pool", "pooling"), ("add", "add"), ("fc", "linear"), ("drop", "dropout"),
                       ("flatten", "flatten"), ("loss", "loss")):
        if part in last:
            return kind
    return last


def print_layers(model, precision, rows, top: int):
    """The top layers of a Tidepool step (medians over the timed iterations)."""
    keys = {k for r in rows for k in r["layers"]}
    med = {k: statistics.median(r["layers"].get(k, 0.0) for r in rows) for k in keys}
    step = statistics.median(r["ms"] for r in rows)
    gap = statistics.median(r["gap"] for r in rows)
    by_kind = {}
    for (name, direction), ms in med.items():
        # Gradient accumulation, the SGD update and waits are steps of their own.
        k = (layer_kind(name), direction) if direction in ("fwd", "bwd") else (direction, "")
        by_kind[k] = by_kind.get(k, 0.0) + ms
    print(f"\n{model} {precision}: a step takes {step:.1f} ms (median); between kernels {gap:.1f} ms "
          f"({100 * gap / step:.1f} %)")
    print("| kind | pass | ms | share |")
    print("|---|---|---|---|")
    for (k, d), ms in sorted(by_kind.items(), key=lambda kv: -kv[1]):
        print(f"| {k} | {d} | {ms:.1f} | {100 * ms / step:.1f} % |")
    print(f"| (between kernels) | | {gap:.1f} | {100 * gap / step:.1f} % |")
    print(f"\ntop {top} layers:")
    print("| layer | pass | ms | share |")
    print("|---|---|---|---|")
    for (name, d), ms in sorted(med.items(), key=lambda kv: -kv[1])[:top]:
        print(f"| {name} | {d} | {ms:.2f} | {100 * ms / step:.1f} % |")


# ---------------------------------------------------------------- main

def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--tidepool", default="build/app/tidepool")
    ap.add_argument("--models", default=",".join(MODELS), help="comma-separated zoo models (CIFAR shapes)")
    ap.add_argument("--precision", default="fp32,bf16", help="comma-separated: fp32, bf16")
    ap.add_argument("--batch", type=int, default=128)
    ap.add_argument("--fuse", default="none,relu",
                    help="comma-separated Tidepool --fuse values, each its own column (default none,relu)")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--iterations", type=int, default=10, help="timed steps per run")
    ap.add_argument("--warmup", type=int, default=2, help="untimed steps first, on both sides")
    ap.add_argument("--repeats", type=int, default=3, help="interleaved rounds; the table shows medians")
    ap.add_argument("--layers", type=int, default=0, help="print the N layers taking most of a Tidepool step")
    ap.add_argument("--no-torch", action="store_true", help="Tidepool's side only")
    ap.add_argument("--torch-python", help="the python that has torch (default: this one, else /usr/bin/python3)")
    ap.add_argument("--keep", help="keep Tidepool's run folders under this folder")
    ap.add_argument("--torch-worker", help=argparse.SUPPRESS)
    args = ap.parse_args()

    if args.torch_worker:
        torch_worker(args.torch_worker, args.precision, args.batch, args.threads, args.warmup, args.iterations)
        return 0
    if args.iterations < 1 or args.warmup < 1:
        sys.exit("--iterations and --warmup must be at least 1 (the first step builds the primitives)")
    if not Path(args.tidepool).exists():
        sys.exit(f"{args.tidepool} does not exist: build first (cmake --build --preset default)")
    args.torch_python = None if args.no_torch else torch_python(args.torch_python)
    with_torch = args.torch_python is not None
    if not args.no_torch and not with_torch:
        print("PyTorch is not installed, so only Tidepool's side is measured. It is an optional peer of this "
              "benchmark: on Debian, `apt-get install python3-torch` (1.13).", file=sys.stderr)
    models = args.models.split(",")
    precisions = args.precision.split(",")
    for p in precisions:
        if p not in ("fp32", "bf16"):
            sys.exit(f"--precision: '{p}' is not fp32 or bf16")

    fuses = args.fuse.split(",")
    for f in fuses:
        if f not in ("none", "relu"):
            sys.exit(f"--fuse: '{f}' is not none or relu")

    cells = [(m, p) for m in models for p in precisions]
    tp = {(m, p, f): [] for m, p in cells for f in fuses}
    pt = {c: [] for c in cells}
    rows = {k: [] for k in tp}
    version = ""
    tmp = None
    if args.keep:
        root = Path(args.keep)
        root.mkdir(parents=True, exist_ok=True)
    else:
        tmp = tempfile.TemporaryDirectory(prefix="vs-pytorch-")
        root = Path(tmp.name)
    for r in range(args.repeats):
        for m, p in cells:
            # Each round starts with the next side, so that no side always
            # runs first (or right after another) while the load drifts.
            sides = [("tidepool", f) for f in fuses] + [("torch", None)]
            sides = sides[r % len(sides):] + sides[:r % len(sides)]
            for side, f in sides:
                if side == "tidepool":
                    got = run_tidepool(args, m, p, f, root / f"{m}-{p}-{f}-{r}")
                    tp[(m, p, f)].append(got["ms"])
                    print(f"  round {r}: Tidepool --fuse {f} {m} {p}: {args.batch / (got['ms'] / 1e3):.0f} images/s",
                          file=sys.stderr, flush=True)
                    rows[(m, p, f)] += got["rows"]
                elif with_torch:
                    got = run_torch(args, m, p)
                    pt[(m, p)].append(got["ms"])
                    print(f"  round {r}: PyTorch {m} {p}: {args.batch / (got['ms'] / 1e3):.0f} images/s",
                          file=sys.stderr, flush=True)
                    version = got["version"]

    def ips(ms_list):
        return args.batch / (statistics.median(ms_list) / 1e3)

    cpu = "this machine"
    try:
        for line in subprocess.run(["lscpu"], capture_output=True, text=True).stdout.splitlines():
            if line.startswith("Model name:"):
                cpu = line.split(":", 1)[1].strip()
    except OSError:
        pass
    print(f"{cpu}, {args.threads} threads, batch {args.batch}, CIFAR shapes; medians of {args.repeats} interleaved "
          f"rounds of {args.iterations} timed steps after {args.warmup} warm-up"
          + (f"; PyTorch {version}" if with_torch else "; PyTorch not installed"))
    header = "| model | precision | " + " | ".join(f"Tidepool --fuse {f} images/s" for f in fuses)
    header += " | PyTorch images/s | " + " | ".join(f"ratio (--fuse {f})" for f in fuses) + " |"
    print(header)
    print("|---" * (3 + 2 * len(fuses)) + "|")
    for m, p in cells:
        ours = [ips(tp[(m, p, f)]) for f in fuses]
        q = ips(pt[(m, p)]) if with_torch else None
        cells_text = [f"{t:.0f}" for t in ours] + [f"{q:.0f}" if q else "-"]
        cells_text += [f"{t / q:.2f}x" if q else "-" for t in ours]
        print(f"| {m} | {p} | " + " | ".join(cells_text) + " |")
    for m, p in cells:
        for f in fuses:
            spread = ", ".join(f"{args.batch / (ms / 1e3):.0f}" for ms in tp[(m, p, f)])
            print(f"  {m} {p}: Tidepool --fuse {f} images/s per round {spread}", file=sys.stderr)
        if with_torch:
            print(f"  {m} {p}: PyTorch images/s per round " +
                  ", ".join(f"{args.batch / (ms / 1e3):.0f}" for ms in pt[(m, p)]), file=sys.stderr)
    if args.layers:
        for m, p in cells:
            for f in fuses:
                print_layers(f"{m} --fuse {f}", p, rows[(m, p, f)], args.layers)
    if tmp:
        tmp.cleanup()
    return 0


if __name__ == "__main__":
    sys.exit(main())
