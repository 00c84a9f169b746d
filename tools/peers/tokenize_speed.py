#!/usr/bin/env python3
"""tokenize_speed.py: tokens per second of `roofline tokenize` on 1 MB of text, per model file.

The text: the strings of tests/data/tokenizer_bpe_strings.json (prose, code, numbers, whitespace
runs, emoji, CJK, Arabic, Hebrew, combining marks, ChatML special tokens) glued together and
repeated to SIZE bytes, written once to a temporary file. For each model (default: the Qwen2.5
and SmolLM2 files of models/, byte-level BPE) this times `roofline tokenize -m MODEL -f FILE`
(wall seconds, median of REPS runs, ids captured) and the same on a one-byte file, whose time is
the fixed cost (start-up and reading the vocabulary); tokens/s is the token count over the
difference. When llama.cpp's llama-tokenize is there (tools/peers/build_llama_cpp.sh) it is timed the
same way (--stdin --ids --log-disable --no-escape) and its ids compared with roofline's: a
mismatch is an error (exit 1). Timing only lives here; tests/unit/model/test_tokenizer_bpe.c bounds the
work by counting instead.

Usage: python3 tools/peers/tokenize_speed.py [--bin build/roofline] [--model PATH ...]
           [--size 1000000] [--reps 3] [--llama-tokenize PATH]
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
MODELS = ["qwen2.5-coder-0.5b-instruct-q4_k_m.gguf", "smollm2-135m-instruct-q4_1.gguf"]


def corpus(size):
    with open(os.path.join(ROOT, "tests", "data", "tokenizer_bpe_strings.json"),
              encoding="utf-8") as f:
        parts = [s.encode("utf-8") for s in json.load(f) if s]
    out = bytearray()
    while len(out) < size:
        for p in parts:
            out += p
    # cut at a character boundary: the text stays valid UTF-8
    end = size
    while end > 0 and (out[end] & 0xC0) == 0x80:
        end -= 1
    return bytes(out[:end])


def timed(cmd, stdin_path=None, reps=3):
    """Median wall seconds of reps runs and the ids of the last one."""
    times, out = [], b""
    for _ in range(reps):
        with open(stdin_path, "rb") if stdin_path else open(os.devnull, "rb") as inp:
            t0 = time.perf_counter()
            proc = subprocess.run(cmd, stdin=inp, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
            times.append(time.perf_counter() - t0)
        if proc.returncode != 0:
            sys.exit(f"{cmd[0]} failed ({proc.returncode}): "
                     f"{proc.stderr.decode('utf-8', 'replace')[-500:]}")
        out = proc.stdout
    return statistics.median(times), out


def roofline_ids(out):
    return [int(x) for x in out.split()]


def llama_ids(out):
    lines = [l for l in out.decode("utf-8", "replace").splitlines() if l.startswith("[")]
    body = lines[-1].strip()[1:-1].strip() if lines else ""
    return [int(x) for x in body.split(",")] if body else []


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--bin", default=os.path.join(ROOT, "build", "roofline"))
    ap.add_argument("--model", action="append", help="default: " + ", ".join(MODELS))
    ap.add_argument("--size", type=int, default=1000000)
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--llama-tokenize", default=os.path.join(
        ROOT, ".peers", "llama.cpp-build", "bin", "llama-tokenize"))
    args = ap.parse_args()
    models = args.model or [os.path.join(ROOT, "models", m) for m in MODELS]
    have_llama = os.access(args.llama_tokenize, os.X_OK)

    text = corpus(args.size)
    bad = False
    with tempfile.TemporaryDirectory() as tmp:
        big, small = os.path.join(tmp, "big.txt"), os.path.join(tmp, "small.txt")
        with open(big, "wb") as f:
            f.write(text)
        with open(small, "wb") as f:
            f.write(b"a")
        print(f"text: {len(text)} bytes; median of {args.reps} runs")
        for m in models:
            if not os.path.exists(m):
                print(f"{os.path.basename(m)}: not found, skipped")
                continue
            name = os.path.basename(m)
            t_big, out = timed([args.bin, "tokenize", "-m", m, "-f", big], reps=args.reps)
            t_small, _ = timed([args.bin, "tokenize", "-m", m, "-f", small], reps=args.reps)
            ids = roofline_ids(out)
            rate = len(ids) / max(t_big - t_small, 1e-9)
            print(f"{name}: roofline tokenize {len(ids)} tokens in {t_big:.3f} s "
                  f"(fixed cost {t_small:.3f} s): {rate / 1e6:.2f} M tokens/s, "
                  f"{len(text) / max(t_big - t_small, 1e-9) / 1e6:.1f} MB/s")
            if have_llama:
                cmd = [args.llama_tokenize, "-m", m, "--stdin", "--ids", "--log-disable",
                       "--no-escape"]
                l_big, lout = timed(cmd, stdin_path=big, reps=args.reps)
                l_small, _ = timed(cmd, stdin_path=small, reps=args.reps)
                lids = llama_ids(lout)
                lrate = len(lids) / max(l_big - l_small, 1e-9)
                same = lids == ids
                bad |= not same
                print(f"{name}: llama-tokenize   {len(lids)} tokens in {l_big:.3f} s "
                      f"(fixed cost {l_small:.3f} s): {lrate / 1e6:.2f} M tokens/s; ids "
                      f"{'identical' if same else 'DIFFERENT'}")
    sys.exit(1 if bad else 0)


if __name__ == "__main__":
    main()
