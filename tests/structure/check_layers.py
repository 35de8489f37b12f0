#!/usr/bin/env python3
"""Checks that every #include of a fabricbench header follows the layer map.

Each layer (include/fabricbench/<layer>/..., src/<layer>/...) may include
its own headers and those of the layers ALLOWED names for it, never another
layer's detail/ folder. Two branches stand on the records: measuring (comm,
transport, topology, engine) and reading a result (model, analysis, output),
so `report` and every printer compile against nothing that measures; only
the app joins them. Inside transport, the seam (transport/*.hpp) knows none
of its backends, cuda/ knows only the seam, nccl/ the seam and cuda/, mpi/
only the seam. kernels/*.cu belong to transport/cuda; src/main.cpp to app.
Private headers have one place: include/fabricbench/<layer>/detail/; src/
holds sources only, and a source includes every fabricbench header by its
full name (never "beside_me.hpp"; a generated header in the build tree is
not a fabricbench header).

Usage: check_layers.py ROOT   (prints one line per bad include, exits 1 if any)
"""
import pathlib
import re
import sys

# Which layers each layer may include, besides itself.
ALLOWED = {
    "core": set(),
    "records": {"core"},
    "comm": {"core"},
    "transport": {"core", "records", "comm"},
    "topology": {"core", "records", "comm", "transport"},
    "engine": {"core", "records", "comm", "transport"},
    "results": {"core", "records"},
    "analysis": {"core", "records", "results"},
    "output": {"core", "records", "results", "analysis"},
    "app": {"core", "records", "comm", "transport", "topology", "engine", "results", "analysis", "output"},
}
# Within transport: which parts each part may include.
TRANSPORT_PARTS = {"": {""}, "cuda": {"", "cuda"}, "nccl": {"", "cuda", "nccl"}, "mpi": {"", "mpi"}}
INCLUDE = re.compile(r'^\s*#\s*include\s*[<"](fabricbench/[^">]+)[">]')
LOCAL_INCLUDE = re.compile(r'^\s*#\s*include\s*"(?!fabricbench/)([^"]+)"')
HEADERS = (".hpp", ".h", ".cuh")
SOURCES = ("*.hpp", "*.cpp", "*.h", "*.cu", "*.cuh", "*.in")


def place(parts):
    """(layer, transport part) of a path below include/fabricbench or src, or None."""
    if len(parts) < 2 or parts[0] not in ALLOWED:
        return None
    part = ""
    if parts[0] == "transport" and len(parts) > 2 and parts[1] in TRANSPORT_PARTS:
        part = parts[1]
    return parts[0], part


def owner(root, path):
    rel = path.relative_to(root).parts
    if rel[:2] == ("include", "fabricbench"):
        return place(rel[2:])
    if rel[0] == "src":
        if rel[1:] == ("main.cpp",):
            return "app", ""
        return place(rel[1:])
    if rel[0] == "kernels":
        return "transport", "cuda"
    return None


def check(root):
    problems = []
    files = []
    for top in ("include", "src", "kernels"):
        for pattern in SOURCES:
            files.extend((root / top).rglob(pattern))
    for path in sorted(set(files)):
        who = owner(root, path)
        rel = path.relative_to(root).as_posix()
        if who is None:
            problems.append(f"{rel}: is in no layer (expected include/fabricbench/<layer>/ or src/<layer>/)")
            continue
        layer, part = who
        if rel.startswith("src/") and path.suffix in HEADERS:
            problems.append(f"{rel}: a header in src/ (private headers go in include/fabricbench/{layer}/detail/)")
        for number, line in enumerate(path.read_text(errors="replace").splitlines(), 1):
            local = LOCAL_INCLUDE.match(line)
            if local and not rel.startswith("include/") and (path.parent / local.group(1)).exists():
                problems.append(f"{rel}:{number}: includes \"{local.group(1)}\" by a relative name "
                                f"(include it as fabricbench/<layer>/...)")
                continue
            match = INCLUDE.match(line)
            if not match:
                continue
            header = match.group(1)
            target = place(header.split("/")[1:])
            where = f"{rel}:{number}: includes {header}"
            if target is None:
                problems.append(f"{where}: a header in no layer")
                continue
            to_layer, to_part = target
            if to_layer != layer and to_layer not in ALLOWED[layer]:
                problems.append(f"{where}: {layer} may not include {to_layer}")
            elif to_layer != layer and "/detail/" in header:
                problems.append(f"{where}: reaches into the detail/ of {to_layer} from {layer}")
            elif to_layer == "transport" == layer and to_part not in TRANSPORT_PARTS[part]:
                problems.append(f"{where}: transport/{part or '(seam)'} may not include transport/{to_part or '(seam)'}")
    return problems


def main():
    if len(sys.argv) != 2:
        print(__doc__.strip().splitlines()[-1], file=sys.stderr)
        return 2
    root = pathlib.Path(sys.argv[1]).resolve()
    problems = check(root)
    for problem in problems:
        print(problem)
    if problems:
        print(f"{len(problems)} include(s) break the layers", file=sys.stderr)
        return 1
    print("every include respects the layers")
    return 0


if __name__ == "__main__":
    sys.exit(main())
