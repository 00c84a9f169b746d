#!/usr/bin/env python3
"""scripts/arch_acceptance.py: the acceptance checks of the architecture step (docs/architecture.md).

  1. the layer graph: scripts/check_layers.py (the doc, CMakeLists.txt and every #include agree);
  2. the build enforces it: a file that includes "engine/prefix.h" is compiled with the flags
     the build gives src/model/sampler.c (from build/compile_commands.json); it must fail with
     "No such file or directory", and the same file including a header model reaches
     ("format/gguf.h") must compile;
  3. sizes and loops: scripts/arch_report.py (files over 1,000 lines, functions over 150 lines,
     include loops between folders, files in different folders that call each other);
  4. with --base-run DIR --new-run DIR: two `roofline bench` run directories of the main job
     (before and after a change) give the same scoreboard sections and the same accuracy figures
     (summary.json);
  5. with --speed-base-bin PATH [--rounds N]: `roofline speed` (pp512, tg128, batched B=1 and
     B=16, -r 3) of the base binary and build/roofline, interleaved (base, new, base, new, ...),
     each pair beside a `roofline membw` sample; the new/base ratio of each pair and their medians;
  6. with --base-bin PATH [--rounds N]: tools/peers/engine_vs_llama.py run N times each for the
     base binary and build/roofline, interleaved (base, new, base, new, ...), and the decode and
     prefill ratios against llama-bench of each run printed side by side.

Usage: python3 scripts/arch_acceptance.py [--build DIR] [--base-run DIR --new-run DIR]
           [--speed-base-bin PATH] [--base-bin PATH] [--rounds N] [-m MODEL ...]
Exit 1 when a check fails.
"""
import argparse
import json
import os
import shlex
import statistics
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def say(title):
    print(f"\n== {title}", flush=True)


def layer_graph():
    say("layer graph (scripts/check_layers.py)")
    return subprocess.run([sys.executable, os.path.join(ROOT, "scripts", "check_layers.py")]).returncode == 0


def compile_as_model(build, include):
    """Compiles a one-line file including `include` with sampler.c's flags: (ok, compiler output)."""
    db = json.load(open(os.path.join(build, "compile_commands.json")))
    entry = next(e for e in db if e["file"].endswith("/src/model/sampler.c"))
    args = entry.get("arguments") or shlex.split(entry["command"])
    with tempfile.TemporaryDirectory() as d:
        src = os.path.join(d, "upward.c")
        with open(src, "w") as f:
            f.write(f'#include "{include}"\nint upward_probe(void);\nint upward_probe(void) {{ return 0; }}\n')
        out = []
        skip = False
        for a in args:
            if skip:
                skip = False
                continue
            if a == "-o":
                skip = True
                continue
            if a.endswith("sampler.c"):
                continue
            if a == "-c":
                continue
            out.append(a)
        cmd = out + ["-fsyntax-only", src]
        p = subprocess.run(cmd, cwd=entry["directory"], capture_output=True, text=True)
        return p.returncode == 0, (p.stderr or p.stdout).strip()


def enforced(build):
    say("the build enforces the graph (a model file including an engine header)")
    ok_up, msg_up = compile_as_model(build, "engine/prefix.h")
    print(f'#include "engine/prefix.h" in src/model: {"COMPILED (bad)" if ok_up else "refused"}')
    if msg_up:
        print("  " + msg_up.splitlines()[0])
    ok_down, msg_down = compile_as_model(build, "format/gguf.h")
    print(f'#include "format/gguf.h" in src/model: {"compiled" if ok_down else "REFUSED (bad)"}')
    if not ok_down and msg_down:
        print("  " + msg_down.splitlines()[0])
    return (not ok_up) and ok_down


def sizes(build):
    say("sizes, loops and call pairs (scripts/arch_report.py)")
    return subprocess.run([sys.executable, os.path.join(ROOT, "scripts", "arch_report.py"),
                           "--build", build, "--quiet"]).returncode == 0


def scoreboard(base_run, new_run):
    say(f"main job: {base_run} against {new_run}")
    a = json.load(open(os.path.join(base_run, "summary.json")))
    b = json.load(open(os.path.join(new_run, "summary.json")))
    ok = True
    ka, kb = sorted(a), sorted(b)
    print(f"summary sections: base {ka}\n                  new  {kb}")
    if ka != kb:
        ok = False
        print("  the sections differ")

    def accuracy(s):
        out = {}
        for row in s.get("accuracy", []) if isinstance(s.get("accuracy"), list) else []:
            key = row.get("backend")
            out[key] = {k: v for k, v in row.items() if k in ("correct", "total", "accuracy", "n")}
        return out

    acc_a, acc_b = accuracy(a), accuracy(b)
    for k in sorted(set(acc_a) | set(acc_b)):
        same = acc_a.get(k) == acc_b.get(k)
        ok &= same
        print(f"  accuracy {k}: base {acc_a.get(k)} new {acc_b.get(k)} {'same' if same else 'DIFFERENT'}")
    for name in ("scoreboard.txt", "report.md"):
        pa, pb = os.path.join(base_run, name), os.path.join(new_run, name)
        if os.path.exists(pa) and os.path.exists(pb):
            ha = [l for l in open(pa) if l.startswith("#")]
            hb = [l for l in open(pb) if l.startswith("#")]
            same = ha == hb
            ok &= same
            print(f"  {name} headings: {len(ha)} and {len(hb)}, {'same' if same else 'DIFFERENT'}")
    return ok


def peers(base_bin, rounds, models):
    say(f"tools/peers/engine_vs_llama.py: base {base_bin} against build/roofline, {rounds} rounds each, interleaved")
    new_bin = os.path.join(ROOT, "build", "roofline")
    rows = []
    for r in range(rounds):
        for tag, binary in (("base", base_bin), ("new", new_bin)):
            out = os.path.join(ROOT, "runs", f"arch_peers_{tag}_{r}.json")
            cmd = [sys.executable, os.path.join(ROOT, "tools", "peers", "engine_vs_llama.py"),
                   "--roofline", binary, "--out", out, "-r", "3"]
            for m in models:
                cmd += ["-m", m]
            p = subprocess.run(cmd, capture_output=True, text=True)
            if p.returncode:
                print(p.stdout[-2000:], p.stderr[-2000:])
                return False
            res = json.load(open(out))
            for x in res if isinstance(res, list) else [res]:
                ra = x["ratios"]
                rows.append((tag, r, x["model"], ra["tg128"], ra["pp512"]))
                print(f"  round {r} {tag:4s} {os.path.basename(x['model'])}: decode tg128 "
                      f"{x['roofline']['tg128']:.1f} tok/s (llama {x['llama_cpp']['tg128']:.1f}, ratio "
                      f"{ra['tg128']:.3f}), prefill pp512 {x['roofline']['pp512']:.1f} tok/s (llama "
                      f"{x['llama_cpp']['pp512']:.1f}, ratio {ra['pp512']:.3f}), membw "
                      f"{x['membw'].get('median_gbs', 0):.1f} GB/s", flush=True)
    for tag in ("base", "new"):
        d = [x[3] for x in rows if x[0] == tag and x[3] is not None]
        p = [x[4] for x in rows if x[0] == tag and x[4] is not None]
        if d and p:
            print(f"  {tag}: decode ratio median {statistics.median(d):.3f} (range {min(d):.3f}-{max(d):.3f}), "
                  f"prefill ratio median {statistics.median(p):.3f} (range {min(p):.3f}-{max(p):.3f})")
    return True


def speed_pairs(base_bin, rounds, models):
    say(f"roofline speed: base {base_bin} against build/roofline, {rounds} pairs, interleaved")
    new_bin = os.path.join(ROOT, "build", "roofline")
    keys = ("pp512", "tg128", "B=1", "B=16")
    for m in models:
        ratios = {k: [] for k in keys}
        meds = {"base": {k: [] for k in keys}, "new": {k: [] for k in keys}}
        for r in range(rounds):
            bw = json.loads(subprocess.run([new_bin, "membw", "--json", "-r", "3"], capture_output=True,
                                           text=True).stdout or "{}")
            fig = {}
            order = (("base", base_bin), ("new", new_bin)) if r % 2 == 0 else (("new", new_bin), ("base", base_bin))
            for tag, binary in order:
                p = subprocess.run([binary, "speed", "-m", m, "-b", "1,16", "-r", "3", "--json"],
                                   capture_output=True, text=True)
                if p.returncode:
                    print(p.stderr[-2000:])
                    return False
                j = json.loads(p.stdout)
                b = {x["b"]: x["median"] for x in j["batched"]}
                fig[tag] = {"pp512": j["pp"]["median"], "tg128": j["tg"]["median"], "B=1": b[1], "B=16": b[16]}
                for k in keys:
                    meds[tag][k].append(fig[tag][k])
            for k in keys:
                ratios[k].append(fig["new"][k] / fig["base"][k])
            gbs = bw.get("median_gbs") or bw.get("gbs") or 0
            print(f"  pair {r} {os.path.basename(m)} (membw {gbs:.1f} GB/s): " + ", ".join(
                f"{k} {fig['base'][k]:.1f} -> {fig['new'][k]:.1f}" for k in keys), flush=True)
        for k in keys:
            print(f"  {os.path.basename(m)} {k}: base median {statistics.median(meds['base'][k]):.1f}, new median "
                  f"{statistics.median(meds['new'][k]):.1f} tok/s; new/base per pair median "
                  f"{statistics.median(ratios[k]):.3f} (range {min(ratios[k]):.3f}-{max(ratios[k]):.3f})")
    return True


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--build", default=os.path.join(ROOT, "build"))
    ap.add_argument("--base-run")
    ap.add_argument("--new-run")
    ap.add_argument("--base-bin")
    ap.add_argument("--speed-base-bin")
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("-m", "--model", action="append")
    args = ap.parse_args()
    ok = layer_graph()
    ok &= enforced(args.build)
    ok &= sizes(args.build)
    if args.base_run and args.new_run:
        ok &= scoreboard(args.base_run, args.new_run)
    if args.speed_base_bin:
        ok &= speed_pairs(args.speed_base_bin, args.rounds, args.model or ["qwen2.5-coder-0.5b"])
    if args.base_bin:
        ok &= peers(args.base_bin, args.rounds, args.model or ["qwen2.5-coder-0.5b"])
    print("\narch_acceptance: " + ("every check passed" if ok else "a check FAILED"))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
