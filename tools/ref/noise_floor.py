#!/usr/bin/env python3
"""noise_floor.py: how much llama.cpp disagrees with itself on the reference data.

Runs tools/ref/gen_model_ref.py three times into temporary folders (llama.cpp defaults; weight
repacking off; flash attention off), then compares each variant with the defaults using the
metrics tests/unit/model/test_model_ref.c applies to roofline: teacher-forced top-1 agreement over
ref_text, mean |logit difference| over the default run's top-32 ids of each position (ids the
variant also lists), perplexity, and greedy continuations identical out of 10. These figures are
the floor below which a comparison with llama.cpp measures rounding, not correctness
(docs/correctness.md). Usage: python3 tools/ref/noise_floor.py [--model GGUF] [--keep DIR]
(--model: the file to study, default the embedded Gemma 3 model; gen_model_ref.py picks the text,
template and stop tokens by its architecture.)
"""
import argparse, math, os, subprocess, sys, tempfile

HERE = os.path.dirname(os.path.abspath(__file__))


def load_teacher(path):
    rows = [l.rstrip("\n") for l in open(path) if not l.startswith("#")]
    out = []
    for l in rows[1:]:
        f = l.split("\t")
        out.append((int(f[1]), dict((int(a.split(":")[0]), float(a.split(":")[1])) for a in f[3].split())))
    return out


def load_ppl(path):
    for l in open(path):
        if l.startswith("ppl\t"):
            return float(l.split("\t")[1])


def load_greedy(path):
    return [l.split("\t")[2] for l in open(path) if not l.startswith("#") and l.strip()]



def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--keep", help="write the variants' reference files here instead of a temp dir")
    ap.add_argument("--model", help="GGUF file (default: gen_model_ref.py's default, the Gemma 3 model)")
    args = ap.parse_args()
    base = args.keep or tempfile.mkdtemp(prefix="roofline-noise-")
    variants = {"default": [], "no-repack": ["--no-repack"], "no-flash-attn": ["--no-flash-attn"]}
    for name, flags in variants.items():
        out = os.path.join(base, name)
        os.makedirs(out, exist_ok=True)
        model = ["--model", args.model] if args.model else []
        subprocess.run([sys.executable, os.path.join(HERE, "gen_model_ref.py"), "--skip-perplexity-tool",
                        "--out-dir", out] + model + flags, check=True, stdout=subprocess.DEVNULL)
    ref = os.path.join(base, "default")
    a = load_teacher(os.path.join(ref, "ref_teacher.tsv"))
    ga = load_greedy(os.path.join(ref, "ref_greedy.tsv"))
    pa = load_ppl(os.path.join(ref, "ref_ppl.txt"))
    print("%-14s %10s %12s %10s %8s" % ("variant", "top-1", "mean|diff|", "ppl", "greedy"))
    for name in variants:
        d = os.path.join(base, name)
        b = load_teacher(os.path.join(d, "ref_teacher.tsv"))
        gb = load_greedy(os.path.join(d, "ref_greedy.tsv"))
        agree = sum(x[0] == y[0] for x, y in zip(a, b)) / len(a)
        diffs = [abs(x[1][i] - y[1][i]) for x, y in zip(a, b) for i in x[1] if i in y[1]]
        same = sum(x == y for x, y in zip(ga, gb))
        print("%-14s %9.2f%% %12.4f %10.4f %5d/%d" % (name, 100 * agree, sum(diffs) / len(diffs),
                                                     load_ppl(os.path.join(d, "ref_ppl.txt")), same, len(ga)))
    print("(reference: llama.cpp defaults, ppl %.4f; files in %s)" % (pa, base))


if __name__ == "__main__":
    main()
