#!/usr/bin/env python3
"""Hand-written mutation testing: does the suite catch a broken feature?

No mutation tool for C++ is packaged in Debian (mull and dextool are not),
so the mutations are listed here by hand: each is one exact piece of a
source file, what replaces it, and the tests that should then fail. They
break what a stub or a careless change would (issue 38): the ranks' guard
emptied, AccUDNN offloading nothing, compression off, the copy engine's
switch dropped; the allocators, parking and the pool search of
engine/memory; the planner, AutoSwap and the budget checks of engine/plan;
and what the direct tests of engine/core and the views' tests hold.

For each mutation: the file is changed, only the test binary (and the
`tidepool` it drives) is rebuilt, the named tests run (ctest -R), and the
mutant is "caught" when any of them fails, "survived" when all pass. The
file is always put back (try/finally; Ctrl-C and SIGTERM included), and
at the end the script checks that every file it touched holds its bytes
again and `git status` is as it was, then rebuilds so the build folder
matches the sources.

    scripts/mutate.py                    # every mutation (about a minute each)
    scripts/mutate.py --list             # what they are
    scripts/mutate.py --only 1,3,15      # some of them
    scripts/mutate.py --markdown out.md  # the table also into a file

Before mutating, the named tests run once on the unchanged tree: a test
that fails there cannot judge a mutant, and the script stops. Builds run
niced with -j 2 (--jobs); the tests with OMP_NUM_THREADS=1, two at a time.
The files it mutates must have no uncommitted changes, and no build of the
same folder may run beside it (it takes <build>/.mutate.lock).
"""

import argparse
import datetime
import os
import re
import signal
import subprocess
import sys
import time
from dataclasses import dataclass, field

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


@dataclass
class Mutation:
    area: str          # what the mutation breaks, in words
    path: str          # relative to the repository root
    original: str      # exact text; must occur exactly once
    replacement: str
    tests: list        # ctest name patterns (regular expressions, anchored on both ends)
    targets: list = field(default_factory=lambda: ["tidepool_tests"])  # builds `tidepool` too


MUTATIONS = [
    # ---- the holes of issue 38 ----
    Mutation("ranks' guard emptied (check_ranks_agree)", "app/session.cpp",
             "  if (!comm_) return;\n  // With --sync-bn",
             "  return;  // mutant: no rank is ever compared\n  // With --sync-bn",
             [r"Session\.RanksWhoseParametersDifferStopTheRunNamingTheRank",
              r"Mpirun\.ARankWhoseParametersDifferStopsTheRunNamingIt"]),
    Mutation("AccUDNN offloads nothing (every map kept)", "engine/plan/accudnn_schedule.cpp",
             "(choice.pinned.empty() || !choice.pinned[m] ? out.offloaded : out.pinned).push_back(a.map_tensor[m]);",
             "out.pinned.push_back(a.map_tensor[m]);",
             [r"AccudnnMode\..*"]),
    Mutation("compression switched off in the executor", "engine/run/executor.cpp",
             "const bool compressed = to_host ? s.settings.memory.compress && s.tensors[t].offloaded",
             "const bool compressed = to_host ? false && s.tensors[t].offloaded",
             [r"Compression\..*"]),
    Mutation("copy-engine switch dropped (apply keeps the old engine)", "engine/run/trainer.cpp",
             "  settings.sync_bn = plan_.settings.sync_bn;\n",
             "  settings.sync_bn = plan_.settings.sync_bn;\n  settings.copy_engine = plan_.settings.copy_engine;  // mutant\n",
             [r"ZhuangTransfers\.ARunKeepsItsHostMemoryButChangesItsCopyEngine"]),
    Mutation("copy threads never used (streams copy whatever the engine)", "engine/run/executor.cpp",
             "if (s.settings.memory.copy_engine == CopyEngine::threads) {",
             "if (false && s.settings.memory.copy_engine == CopyEngine::threads) {",
             [r"ZhuangTransfers\..*", r"CopyThreads\..*"]),
    Mutation("a budget is ignored (the pool is always what the plan needs)", "engine/plan/memory_plan.cpp",
             "p.pool_bytes = settings.budget_bytes ? settings.budget_bytes : p.needed_pool_bytes;",
             "p.pool_bytes = p.needed_pool_bytes;",
             [r"Offload\.BudgetBelowTheMinimumNamesTheMinimumAndTheMinimumWorks"]),
    # ---- engine/memory ----
    Mutation("free list never merges a freed block with the next", "engine/memory/allocators/free_list.cpp",
             "const bool merge_next = next != blocks_.end() &&",
             "const bool merge_next = false && next != blocks_.end() &&",
             [r"(FreeList|Allocator|BestFit|FirstFit|HighEnd|SmartPool|Cnmem|Exact)\..*",
              r"Allocators/EveryAllocator\..*"]),
    Mutation("best-fit breaks ties towards the higher block", "engine/memory/allocators/free_list.cpp",
             "blocks_[i].bytes < blocks_[best].bytes)",
             "blocks_[i].bytes <= blocks_[best].bytes)",
             [r"(FreeList|Allocator|BestFit|FirstFit|HighEnd|SmartPool|Cnmem|Exact)\..*",
              r"Allocators/EveryAllocator\..*"]),
    Mutation("parking keeps one block fewer than its horizon", "engine/memory/parking.cpp",
             "while (parked_.size() > static_cast<std::size_t>(std::max(horizon_, 0)))",
             "while (parked_.size() >= static_cast<std::size_t>(std::max(horizon_, 0)))",
             [r"Parking\..*", r"Offload\.(AsyncForwardWaitsForNoCopyWhenThePoolHasRoom|.*Park.*)", r"Session\.TheParkingPool.*"]),
    Mutation("parked blocks counted as load", "engine/memory/parking.cpp",
             "  s.load_bytes -= std::min(s.load_bytes, parked_bytes_);\n",
             "",
             [r"Parking\..*", r"Offload\.(AsyncForwardWaitsForNoCopyWhenThePoolHasRoom|.*Park.*)", r"Session\.TheParkingPool.*", r"DevicePool\..*"]),
    Mutation("pool search overshoots by a granule per restart", "engine/memory/pool_search.cpp",
             "    pool += grow;\n",
             "    pool += grow + kAllocGranularity;\n",
             [r"PoolSearch\..*", r"DryRun\..*"]),
    # ---- engine/plan ----
    Mutation("AutoSwap keeps swaps it does not need (no pruning)", "engine/plan/autoswap.cpp",
             "for (std::size_t k = chosen.size(); k-- > 0;) {",
             "for (std::size_t k = chosen.size(); false && k-- > 0;) {",
             [r"AutoSwap\..*"]),
    Mutation("the minimum pool forgets the eval schedule", "engine/plan/memory_plan.cpp",
             "p.minimum_pool_bytes = std::max(least_train ? least_train : train_pool, eval_pool);",
             "p.minimum_pool_bytes = least_train ? least_train : train_pool;",
             [r"Planner\..*", r"Offload\..*", r"AccudnnMode\..*", r"DryRun\..*"]),
    Mutation("compressed offloads get one staging slot, not two", "engine/plan/planner.cpp",
             "s_.pinned_bytes = 2 * s_.staging_bytes;",
             "s_.pinned_bytes = s_.staging_bytes;",
             [r"Compression\..*", r"Planner\..*"]),
    # ---- engine/core: param_init, json_file (direct tests, issue 38 item 3) ----
    Mutation("uniform init bounded by fan_out instead of fan_in", "engine/core/param_init.cpp",
             "const double bound = 1.0 / std::sqrt(static_cast<double>(spec.fan_in));",
             "const double bound = 1.0 / std::sqrt(static_cast<double>(spec.fan_out));",
             [r"ParamInit\..*"]),
    Mutation("every parameter tensor drawn from the same stream", "engine/run/trainer.cpp",
             "      ++ordinal;\n",
             "",
             [r"ParamInit\..*"]),
    Mutation("JSON written in place, not renamed over", "engine/core/json_file.cpp",
             'const std::string tmp = path + ".tmp";',
             "const std::string tmp = path;",
             [r"JsonFile\..*"]),
    # ---- ui: what the views draw (issue 38 item 3) ----
    Mutation("timeline legend: backward in forward's colour", "ui/paint/timeline_picture.cpp",
             '{"backward", span_colour(SpanKind::backward)},',
             '{"backward", span_colour(SpanKind::forward)},',
             [r"Headless\..*", r"Paint\..*", r"Png\..*"]),
    Mutation("memory load: the peak label shows the highest extent", "ui/paint/memory_load_picture.cpp",
             'const std::string label = "peak " + format_bytes(scene.peak_load_bytes);',
             'const std::string label = "peak " + format_bytes(scene.max_extent_bytes);',
             [r"Headless\..*", r"Paint\..*", r"Png\..*"]),
    Mutation("address map view: a live block is never under the pointer", "ui/views/address_map_view.cpp",
             "if (layout.life_box(b).contains(mouse) || layout.parked_box(b).contains(mouse)) hovered = &b;",
             "if (layout.parked_box(b).contains(mouse)) hovered = &b;",
             [r"Headless\..*"]),
    Mutation("timeline view: the wheel zooms by 0.9, not 0.8", "ui/views/timeline_view.cpp",
             "std::pow(0.8, io.MouseWheel)",
             "std::pow(0.9, io.MouseWheel)",
             [r"Headless\..*"]),
]


class Interrupted(Exception):
    pass


def on_signal(signum, frame):
    raise Interrupted(f"signal {signum}")


def run(cmd, **kw):
    return subprocess.run(cmd, cwd=ROOT, text=True, capture_output=True, **kw)


def git(*args):
    return run(["git", *args]).stdout


def regex_of(patterns):
    return "^(" + "|".join(patterns) + ")$"


def build(build_dir, targets, jobs):
    cmd = ["nice", "-n", "10", "cmake", "--build", build_dir, "-j", str(jobs)]
    for t in targets:
        cmd += ["--target", t]
    r = run(cmd)
    return r.returncode == 0, r.stdout + r.stderr


FAILED_LINE = re.compile(r"^\s*\d+ - (\S+) \(([^)]*)\)", re.M)


def first_failure(output):
    """One line: the first googletest failure's message, or ctest's reason."""
    lines = output.splitlines()
    for i, line in enumerate(lines):
        if re.search(r": Failure$", line) or "Failure" == line.strip():
            what = []
            for nxt in lines[i + 1:i + 8]:
                if not nxt.strip() or nxt.startswith("[  FAILED") or nxt.startswith("["):
                    break
                what.append(nxt.strip())
            text = " ".join(what)
            return (text[:157] + "...") if len(text) > 160 else text
    for line in lines:
        if "Exception" in line or "Timeout" in line or "SEGFAULT" in line or "Child aborted" in line:
            return line.strip()[:160]
    return ""


def run_tests(build_dir, patterns, jobs):
    """(ran, failed tests, first failure message, seconds)."""
    start = time.time()
    env = dict(os.environ, OMP_NUM_THREADS="1")
    r = run(["ctest", "--test-dir", build_dir, "-R", regex_of(patterns), "-j", str(jobs), "--timeout", "900",
             "--output-on-failure"], env=env)
    out = r.stdout + r.stderr
    m = re.search(r"tests passed, (\d+) tests failed out of (\d+)", out)
    ran = int(m.group(2)) if m else 0
    failed = [name for name, _ in FAILED_LINE.findall(out.split("The following tests FAILED:")[-1])] \
        if "The following tests FAILED:" in out else []
    return ran, failed, first_failure(out), time.time() - start, out


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--build", default="build", help="the configured build folder (default: build)")
    parser.add_argument("--jobs", type=int, default=2)
    parser.add_argument("--only", help="comma-separated mutation numbers (1-based)")
    parser.add_argument("--list", action="store_true", help="list the mutations and exit")
    parser.add_argument("--markdown", help="also write the table to this file")
    parser.add_argument("--skip-baseline", action="store_true", help="do not run the tests on the unchanged tree first")
    parser.add_argument("--allow-dirty", action="store_true", help="mutate files that have uncommitted changes")
    args = parser.parse_args()

    chosen = list(enumerate(MUTATIONS, 1))
    if args.only:
        wanted = {int(x) for x in args.only.split(",")}
        chosen = [(i, m) for i, m in chosen if i in wanted]
    if args.list:
        for i, m in chosen:
            with open(os.path.join(ROOT, m.path)) as f:
                count = f.read().count(m.original)
            print(f"{i:2}. {m.area}\n    {m.path}: {m.original.strip()!r} -> {m.replacement.strip()!r}"
                  + ("" if count == 1 else f"  (OCCURS {count} TIMES: will not apply)") +
                  f"\n    tests: {regex_of(m.tests)}")
        return 0

    build_dir = args.build if os.path.isabs(args.build) else os.path.join(ROOT, args.build)
    # Every mutation must apply to the tree as it is, exactly once.
    originals = {}
    for i, m in chosen:
        path = os.path.join(ROOT, m.path)
        with open(path, "rb") as f:
            text = f.read()
        originals.setdefault(m.path, text)
        count = text.decode().count(m.original)
        if count != 1:
            sys.exit(f"mutation {i} ({m.area}): its text occurs {count} times in {m.path}, not once")
        if not args.allow_dirty and run(["git", "diff", "--quiet", "HEAD", "--", m.path]).returncode != 0:
            sys.exit(f"{m.path} has uncommitted changes: commit them, or --allow-dirty")

    lock = os.path.join(build_dir, ".mutate.lock")
    try:
        fd = os.open(lock, os.O_CREAT | os.O_EXCL | os.O_WRONLY)
        os.write(fd, str(os.getpid()).encode())
        os.close(fd)
    except FileExistsError:
        sys.exit(f"{lock} exists: another mutate.py runs on this build (or one was killed: remove the file)")

    status_before = git("status", "--porcelain")
    for s in (signal.SIGTERM, signal.SIGHUP):
        signal.signal(s, on_signal)
    rows = []
    interrupted = False
    mutated = False  # some mutant was built: the build folder must be rebuilt at the end
    try:
        ok, log = build(build_dir, ["tidepool_tests"], args.jobs)
        if not ok:
            sys.exit("the unchanged tree does not build:\n" + log[-3000:])
        if not args.skip_baseline:
            patterns = sorted({p for _, m in chosen for p in m.tests})
            ran, failed, message, secs, out = run_tests(build_dir, patterns, args.jobs)
            print(f"baseline: {ran} tests, {len(failed)} failed ({secs:.0f} s)", flush=True)
            if failed or ran == 0:
                sys.exit("the named tests must pass on the unchanged tree; failed: " + ", ".join(failed) +
                         "\n" + out[-3000:])
        for i, m in chosen:
            path = os.path.join(ROOT, m.path)
            original = originals[m.path]
            try:
                with open(path, "wb") as f:
                    f.write(original.replace(m.original.encode(), m.replacement.encode(), 1))
                mutated = True
                ok, log = build(build_dir, m.targets, args.jobs)
                if not ok:
                    rows.append((i, m, "not built", [], "the mutant does not compile", 0))
                else:
                    ran, failed, message, secs, _ = run_tests(build_dir, m.tests, args.jobs)
                    if ran == 0:
                        result = "no tests"
                    else:
                        result = "caught" if failed else "survived"
                    rows.append((i, m, result, failed, message, ran))
            finally:
                with open(path, "wb") as f:
                    f.write(original)
            r = rows[-1]
            print(f"{i:2}. {r[2]:9} {m.area}" + (f"  [{', '.join(r[3])}]" if r[3] else ""), flush=True)
    except (KeyboardInterrupt, Interrupted) as e:
        interrupted = True
        print(f"\ninterrupted ({e or 'Ctrl-C'}): every file is being put back", file=sys.stderr)
    finally:
        for rel, text in originals.items():
            with open(os.path.join(ROOT, rel), "wb") as f:
                f.write(text)
        clean = all(open(os.path.join(ROOT, rel), "rb").read() == text for rel, text in originals.items())
        clean = clean and git("status", "--porcelain") == status_before
        os.unlink(lock)
        print(f"tree as it was: {'yes' if clean else 'NO'} (git status --porcelain unchanged, every touched file"
              f" byte for byte)", file=sys.stderr)
        if mutated and not interrupted:
            ok, _ = build(build_dir, ["tidepool_tests"], args.jobs)
            print(f"rebuilt the unchanged tree: {'yes' if ok else 'FAILED'}", file=sys.stderr)
        elif mutated:
            print(f"{args.build} may hold a mutant's objects: rebuild before trusting it", file=sys.stderr)

    commit = git("rev-parse", "--short", "HEAD").strip()
    table = [f"Mutations at {commit}, {datetime.date.today().isoformat()}: "
             f"{sum(r[2] == 'caught' for r in rows)} caught of {len(rows)}.", "",
             "| # | What the mutation breaks | File | Tests run | Result | Failed tests: first message |",
             "|---|---|---|---|---|---|"]
    for i, m, result, failed, message, ran in rows:
        cell = (", ".join(f"`{t}`" for t in failed) + (": " + message.replace("|", "\\|") if message else "")) \
            if failed else ""
        table.append(f"| {i} | {m.area} | `{m.path}` | {ran} | **{result}** | {cell} |")
    text = "\n".join(table) + "\n"
    print("\n" + text)
    if args.markdown:
        with open(args.markdown, "w") as f:
            f.write(text)
    return 1 if interrupted or not clean else 0


if __name__ == "__main__":
    sys.exit(main())
