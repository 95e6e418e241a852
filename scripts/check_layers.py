#!/usr/bin/env python3
"""Checks the engine's layering: each folder of engine/ includes only itself
and the folders it declares as its dependencies.

The declarations are engine/CMakeLists.txt's tidepool_engine_layer() calls,
the one place the layers are written; configuring writes them out, one
folder a line, in declaration order, as <build>/engine/layers.txt:

    core:
    device: core comm
    device/cpu: core device

Every engine file (*.h, *.cpp, *.cu, *.cuh) belongs to the longest declared
folder its path starts with (engine/device/cpu/x.cpp: device/cpu;
engine/observe/sinks/x.h: observe). The check fails, naming each file and
line, on
  - an #include "engine/<folder>/..." of a folder that is not the file's own
    nor among its declared dependencies (a folder declared later, above it,
    is called out as an upward include);
  - a file, or an include, in no declared folder;
  - an engine file that includes app/, ui/, models/, datasets/ or tests/;
  - a dependency that is not declared before the folder that names it
    (CMake refuses that too, so the table is acyclic).

    scripts/check_layers.py <build>/engine/layers.txt [<source root>]
    ctest -R Layers   # the same, as a test
"""

import re
import sys
from pathlib import Path

EXTENSIONS = {".h", ".cpp", ".cu", ".cuh"}
INCLUDE = re.compile(r'^\s*#\s*include\s*[<"]([^>"]+)[>"]')
OUTSIDE_ENGINE = ("app/", "ui/", "models/", "datasets/", "tests/", "bench/", "fuzz/")


def read_table(path):
    """[(folder, [dependencies])] in declaration order, and the problems."""
    layers, problems, seen = [], [], set()
    for n, line in enumerate(Path(path).read_text().splitlines(), 1):
        line = line.split("#", 1)[0].strip()
        if not line:
            continue
        folder, sep, deps = line.partition(":")
        folder, deps = folder.strip(), deps.split()
        if not sep or not folder:
            problems.append(f"{path}:{n}: expected '<folder>: <dependencies>', got '{line}'")
            continue
        if folder in seen:
            problems.append(f"{path}:{n}: {folder} is declared twice")
        for d in deps:
            if d not in seen:
                problems.append(f"{path}:{n}: {folder} depends on {d}, which is not declared before it")
        seen.add(folder)
        layers.append((folder, deps))
    return layers, problems


def folder_of(relative, folders):
    """The longest declared folder `relative` (a path under engine/) is in."""
    best = None
    for f in folders:
        if relative == f or relative.startswith(f + "/"):
            if best is None or len(f) > len(best):
                best = f
    return best


def check(table_path, root):
    layers, problems = read_table(table_path)
    order = {f: i for i, (f, _) in enumerate(layers)}
    allowed = {f: set(deps) for f, deps in layers}
    engine = Path(root) / "engine"
    files = sorted(p for p in engine.rglob("*") if p.is_file() and p.suffix in EXTENSIONS)
    if not files:
        problems.append(f"no engine sources under {engine}")
    for path in files:
        relative = path.relative_to(engine).as_posix()
        own = folder_of(relative, order)
        shown = f"engine/{relative}"
        if own is None:
            problems.append(f"{shown}: in no declared layer (add its folder to engine/CMakeLists.txt)")
            continue
        for n, line in enumerate(path.read_text(errors="replace").splitlines(), 1):
            m = INCLUDE.match(line)
            if not m:
                continue
            included = m.group(1)
            if included.startswith(OUTSIDE_ENGINE):
                problems.append(f"{shown}:{n}: includes {included}: the engine includes nothing outside engine/")
                continue
            if not included.startswith("engine/"):
                continue
            target = folder_of(included[len("engine/"):], order)
            if target is None:
                problems.append(f"{shown}:{n}: includes {included}, which is in no declared layer")
            elif target != own and target not in allowed[own]:
                where = "a layer above it" if order[target] > order[own] else "not among its dependencies"
                deps = " ".join(layers[order[own]][1]) or "none"
                problems.append(f"{shown}:{n}: includes {included}: {target} is {where} "
                                f"({own} may include: {deps})")
    return problems, len(files), len(layers)


def main(argv):
    if len(argv) not in (2, 3):
        print(__doc__, file=sys.stderr)
        return 2
    root = argv[2] if len(argv) == 3 else Path(__file__).resolve().parent.parent
    problems, files, layers = check(argv[1], root)
    for p in problems:
        print(p)
    if problems:
        print(f"check_layers: {len(problems)} problem(s) with the layering of {layers} engine folders")
        return 1
    print(f"check_layers: {files} engine files include only their own folder and its declared dependencies "
          f"({layers} folders)")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
