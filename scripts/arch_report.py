#!/usr/bin/env python3
"""scripts/arch_report.py: the architecture's acceptance figures, measured on the tree.

  - files over 1,000 lines under src/ (a file whose first lines say "generated" is exempt);
  - functions over 150 lines (exempt: a function whose comment just above, or first lines, says
    "state machine");
  - include loops between folders (the folder graph of every #include under src/);
  - pairs of files in different folders that call each other, from the symbols of the built
    objects (nm: a file that defines a symbol another file's object leaves undefined is called
    by it); pairs inside one folder are listed too, as information.

Exit 1 when a rule is broken. Usage: python3 scripts/arch_report.py [--build DIR] [--quiet]
(--build: the CMake build directory whose objects give the call pairs; default build/).
"""
import argparse
import os
import re
import subprocess
import sys
from collections import defaultdict

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
MAX_FILE = 1000
MAX_FUNC = 150


def strip_c(text):
    """Comments, strings and character literals blanked, newlines kept."""
    out, i, n = [], 0, len(text)
    while i < n:
        c = text[i]
        if text.startswith("/*", i):
            j = text.find("*/", i + 2)
            j = n if j < 0 else j + 2
            out.append(re.sub(r"[^\n]", " ", text[i:j]))
            i = j
        elif text.startswith("//", i):
            j = text.find("\n", i)
            j = n if j < 0 else j
            out.append(" " * (j - i))
            i = j
        elif c in "\"'":
            j = i + 1
            while j < n and text[j] != c:
                j += 2 if text[j] == "\\" else 1
            j = min(j + 1, n)
            out.append(c + re.sub(r"[^\n]", " ", text[i + 1:j - 1]) + c)
            i = j
        else:
            out.append(c)
            i += 1
    return "".join(out)


def functions(path):
    """(name, first line, line count) of each function definition at file scope."""
    raw = open(path, encoding="utf-8", errors="replace").read()
    text = strip_c(raw)
    # preprocessor lines (with continuations) blanked
    text = re.sub(r"(?m)^[ \t]*#(?:[^\n]*\\\n)*[^\n]*", lambda m: re.sub(r"[^\n]", " ", m.group(0)),
                  text)
    res, depth, i = [], 0, 0
    head_start = 0
    while i < len(text):
        c = text[i]
        if c == "{":
            if depth == 0:
                head = text[head_start:i]
                m = re.search(r"(\w+)\s*\([^;{}]*\)(?:\s+\w+)*\s*$", head[-2000:])
                is_func = m and not re.search(r"=\s*$|\b(struct|enum|union)\s+\w*\s*$", head[-200:])
                if is_func:
                    start = text.count("\n", 0, head_start + len(head) - len(head.lstrip()))
                    name = m.group(1)
                    j, d = i, 0
                    while j < len(text):
                        if text[j] == "{":
                            d += 1
                        elif text[j] == "}":
                            d -= 1
                            if d == 0:
                                break
                        j += 1
                    first = text.count("\n", 0, i - len(head) + len(head) - len(head.lstrip()))
                    sig_line = text.count("\n", 0, head_start) + 1
                    # the signature starts at the first non-blank line of the head
                    lines = head.split("\n")
                    k = 0
                    while k < len(lines) and not lines[k].strip():
                        k += 1
                    sig_line = text.count("\n", 0, head_start) + 1 + k
                    end_line = text.count("\n", 0, j) + 1
                    res.append((name, sig_line, end_line - sig_line + 1))
                    i = j + 1
                    head_start = i
                    continue
            depth += 1
        elif c == "}":
            depth -= 1
            if depth == 0:
                head_start = i + 1
        elif c == ";" and depth == 0:
            head_start = i + 1
        i += 1
    return res, raw.split("\n")


def exempt_state_machine(lines, first, count):
    window = lines[max(0, first - 8):first - 1 + min(count, 6)]
    return any("state machine" in l.lower() for l in window)


def source_files():
    for folder in sorted(os.listdir(os.path.join(ROOT, "src"))):
        d = os.path.join(ROOT, "src", folder)
        if os.path.isdir(d):
            for name in sorted(os.listdir(d)):
                if name.endswith((".c", ".h")):
                    yield folder, os.path.join("src", folder, name)


def folder_loops():
    graph = defaultdict(set)
    for folder, rel in source_files():
        text = open(os.path.join(ROOT, rel), encoding="utf-8", errors="replace").read()
        for inc in re.findall(r'^\s*#\s*include\s+"(\w+)/', text, re.M):
            lib = {"roofline": None}.get(inc, inc)
            if lib and lib != folder:
                graph[folder].add(lib)
    # roofline/*.h belong to util and engine: no loop through them is possible upward
    loops, state, stack = [], {}, []

    def dfs(v):
        state[v] = 1
        stack.append(v)
        for w in sorted(graph[v]):
            if state.get(w) == 1:
                loops.append(stack[stack.index(w):] + [w])
            elif not state.get(w):
                dfs(w)
        stack.pop()
        state[v] = 2

    for v in sorted(graph):
        if not state.get(v):
            dfs(v)
    return loops


def call_pairs(build):
    objs = []
    for dp, _, fs in os.walk(build):
        for f in fs:
            if f.endswith(".c.o") and "/src/" in dp + "/" and "_fuzz.dir" not in dp:
                objs.append(os.path.join(dp, f))
    defined, undefined = {}, defaultdict(set)
    for o in objs:
        rel = o.split(".dir/", 1)[1][:-2]  # src/<lib>/<file>.c
        if not os.path.exists(os.path.join(ROOT, rel)):
            continue  # an object left from a file since moved or removed
        folder = rel.split("/")[1]
        target = os.path.basename(o.split(".dir/", 1)[0])
        if target != ("roofline" if folder == "cli" else "roofline_" + folder):
            continue  # an object of a target the build no longer has (an older layout)
        out = subprocess.run(["nm", "--defined-only", "-g", o], capture_output=True, text=True).stdout
        for line in out.splitlines():
            parts = line.split()
            if len(parts) == 3:
                defined[parts[2]] = rel
        out = subprocess.run(["nm", "-u", o], capture_output=True, text=True).stdout
        for line in out.splitlines():
            parts = line.split()
            if parts:
                undefined[rel].add(parts[-1])
    calls = defaultdict(set)
    for f, syms in undefined.items():
        for s in syms:
            g = defined.get(s)
            if g and g != f:
                calls[f].add(g)
    pairs = set()
    for f, gs in calls.items():
        for g in gs:
            if f in calls.get(g, ()):
                pairs.add(tuple(sorted((f, g))))
    return sorted(pairs), len(objs)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--build", default=os.path.join(ROOT, "build"))
    ap.add_argument("--quiet", action="store_true")
    args = ap.parse_args()
    bad = 0
    big_files, long_funcs, exempt = [], [], []
    nfiles = nfuncs = 0
    for folder, rel in source_files():
        path = os.path.join(ROOT, rel)
        nfiles += 1
        lines = open(path, encoding="utf-8", errors="replace").read().split("\n")
        n = len(lines) - (1 if lines and lines[-1] == "" else 0)
        if n > MAX_FILE and not any("generated" in l.lower() for l in lines[:5]):
            big_files.append((rel, n))
        if rel.endswith(".c"):
            fs, raw = functions(path)
            nfuncs += len(fs)
            for name, first, count in fs:
                if count > MAX_FUNC:
                    if exempt_state_machine(raw, first, count):
                        exempt.append((rel, name, first, count))
                    else:
                        long_funcs.append((rel, name, first, count))
    print(f"files under src/: {nfiles}; functions: {nfuncs}")
    print(f"files over {MAX_FILE} lines: {len(big_files)}")
    for rel, n in big_files:
        print(f"  {rel}: {n}")
    print(f"functions over {MAX_FUNC} lines: {len(long_funcs)}"
          f" (state machines exempt by their comment: {len(exempt)})")
    for rel, name, first, count in long_funcs:
        print(f"  {rel}:{first} {name}: {count}")
    for rel, name, first, count in exempt:
        print(f"  exempt: {rel}:{first} {name}: {count} (state machine)")
    loops = folder_loops()
    print(f"include loops between folders: {len(loops)}")
    for l in loops:
        print("  " + " -> ".join(l))
    bad += len(big_files) + len(long_funcs) + len(loops)
    if os.path.isdir(args.build):
        pairs, nobj = call_pairs(args.build)
        cross = [p for p in pairs if p[0].split("/")[1] != p[1].split("/")[1]]
        inside = [p for p in pairs if p not in cross]
        print(f"file pairs that call each other ({nobj} objects of {args.build}): "
              f"across folders {len(cross)}, inside one folder {len(inside)}")
        for a, b in cross:
            print(f"  across: {a} <-> {b}")
        if not args.quiet:
            for a, b in inside:
                print(f"  inside: {a} <-> {b}")
        bad += len(cross)
    else:
        print(f"no build directory {args.build}: call pairs not measured")
    print("arch_report: " + ("ok" if not bad else f"{bad} rule(s) broken"))
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
