#!/usr/bin/env python3
"""scripts/check_layers.py: the layer graph of docs/architecture.md held against the code.

Fails (exit 1, naming each offence) when
  - the graph in docs/architecture.md (the block after "<!-- layer graph -->") and the libraries
    CMakeLists.txt declares (roofline_library(NAME DEPS ...)) differ, or the graph has a cycle;
  - a folder under src/ is neither a library of the graph nor src/cli;
  - a file includes a project header of a library its own library does not reach in the graph
    (upward or sideways), includes with "..", or names a same-folder header that is not there.
The build already refuses such an include (each library sees only the include roots of the
libraries it links); this check keeps the document true as well. CI runs it (scripts/test.sh).

Usage: python3 scripts/check_layers.py [--root DIR] [--print]
  --print   also prints the graph and each library's reach.
"""
import argparse
import os
import re
import sys

# include/roofline/ headers and the library that owns each.
PUBLIC_HEADERS = {"roofline/status.h": "util", "roofline/engine.h": "engine"}
INCLUDE_RX = re.compile(r'^\s*#\s*include\s+"([^"]+)"', re.M)


def parse_doc_graph(path):
    text = open(path, encoding="utf-8").read()
    m = re.search(r"<!-- layer graph -->\s*```[a-z]*\n(.*?)```", text, re.S)
    if not m:
        raise SystemExit(f"{path}: no block after '<!-- layer graph -->'")
    graph = {}
    for n, line in enumerate(m.group(1).splitlines(), 1):
        line = line.split("#", 1)[0].strip()
        if not line:
            continue
        name, sep, deps = line.partition(":")
        if not sep:
            raise SystemExit(f"{path}: layer graph line {n}: expected 'lib: dep dep ...': {line!r}")
        graph[name.strip()] = sorted(deps.split())
    return graph


def parse_cmake_graph(path):
    text = open(path, encoding="utf-8").read()
    graph = {}
    for m in re.finditer(r"^roofline_library\(\s*(\w+)(.*?)\)\s*$", text, re.M | re.S):
        args = m.group(2).split()
        deps, mode = [], None
        for a in args:
            if a in ("DEPS", "EXTERNAL", "PUBLIC_HEADERS"):
                mode = a
            elif mode == "DEPS":
                deps.append(a)
        graph[m.group(1)] = sorted(deps)
    return graph


def reach(graph):
    out = {}

    def visit(lib, stack):
        if lib in out:
            return out[lib]
        if lib in stack:
            raise SystemExit("layer graph has a cycle: " + " -> ".join(stack + [lib]))
        r = set()
        for d in graph.get(lib, []):
            if d not in graph:
                raise SystemExit(f"layer graph: {lib} depends on {d}, which is not a library")
            r |= {d} | visit(d, stack + [lib])
        out[lib] = r
        return r

    for lib in graph:
        visit(lib, [])
    return out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--root", default=os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    ap.add_argument("--print", action="store_true")
    args = ap.parse_args()
    root = args.root
    errors = []
    doc = parse_doc_graph(os.path.join(root, "docs", "architecture.md"))
    cmake = parse_cmake_graph(os.path.join(root, "CMakeLists.txt"))
    for lib in sorted(set(doc) | set(cmake)):
        if doc.get(lib) != cmake.get(lib):
            errors.append(f"library {lib}: docs/architecture.md says {doc.get(lib)}, "
                          f"CMakeLists.txt says {cmake.get(lib)}")
    reaches = reach(doc)
    src = os.path.join(root, "src")
    libs = set(doc)
    for folder in sorted(os.listdir(src)):
        if os.path.isdir(os.path.join(src, folder)) and folder not in libs and folder != "cli":
            errors.append(f"src/{folder}: a folder that is no library of the layer graph")
    checked = 0
    for folder in sorted(os.listdir(src)):
        fdir = os.path.join(src, folder)
        if not os.path.isdir(fdir):
            continue
        allowed = set(libs) if folder == "cli" else reaches.get(folder, set()) | {folder}
        for name in sorted(os.listdir(fdir)):
            if not name.endswith((".c", ".h")):
                continue
            path = os.path.join(fdir, name)
            text = open(path, encoding="utf-8", errors="replace").read()
            for m in INCLUDE_RX.finditer(text):
                inc = m.group(1)
                line = text.count("\n", 0, m.start()) + 1
                where = f"src/{folder}/{name}:{line}"
                checked += 1
                if ".." in inc.split("/"):
                    errors.append(f"{where}: includes \"{inc}\": a path with '..' goes around "
                                  "the layer graph")
                    continue
                if "/" not in inc:
                    if not os.path.exists(os.path.join(fdir, inc)):
                        errors.append(f"{where}: includes \"{inc}\", not a file of src/{folder}")
                    continue
                owner = PUBLIC_HEADERS.get(inc, inc.split("/", 1)[0])
                if owner not in libs:
                    errors.append(f"{where}: includes \"{inc}\": {owner} is no library")
                elif owner not in allowed:
                    errors.append(f"{where}: includes \"{inc}\": {folder} may not include "
                                  f"{owner} (it reaches {sorted(allowed - {folder})})")
    if args.print:
        for lib in doc:
            print(f"{lib:9s} links {' '.join(doc[lib]) or '-':40s} reaches "
                  f"{' '.join(sorted(reaches[lib])) or '-'}")
    for e in errors:
        print("check_layers: " + e, file=sys.stderr)
    if errors:
        print(f"check_layers: {len(errors)} offence(s)", file=sys.stderr)
        return 1
    print(f"check_layers: {len(doc)} libraries, {checked} project includes, all within the graph")
    return 0


if __name__ == "__main__":
    sys.exit(main())
