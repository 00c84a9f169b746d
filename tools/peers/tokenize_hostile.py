#!/usr/bin/env python3
"""tokenize_hostile.py: `roofline tokenize` on a vocabulary with one huge special token.

Writes a GGUF file that holds only a vocabulary (<unk> <bos> <eos>, the letter "a", and one
user-defined token of TOKEN_KB kilobytes of "a"; no tensors: `roofline tokenize` reads nothing
else) and prompts of "a" repeated SIZES kilobytes, each a prefix of the huge token, so it never
matches but a matcher that walks the token from every position of the prompt does O(n^2) work.
Then times `roofline tokenize -m FILE -f PROMPT` on each (wall seconds, median of REPS runs,
output discarded) and prints one line per size. Before the special-token matcher was made linear
the figures were quadratic (20 kB 1.5 s, 50 kB 9 s, 100 kB 39 s); tests/unit/model/test_tokenizer.c
(test_split_work) counts the matcher's steps on the same shapes instead of timing them.

Usage: python3 tools/peers/tokenize_hostile.py [--bin build/roofline] [--sizes 20,50,100]
           [--token-kb 200] [--reps 3] [--timeout 600]
"""
import argparse
import os
import statistics
import struct
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

GGUF_U32, GGUF_I32, GGUF_BOOL, GGUF_STRING, GGUF_ARRAY = 4, 5, 7, 8, 9


def gguf_str(s):
    return struct.pack("<Q", len(s)) + s


def kv(key, vtype, payload):
    return gguf_str(key.encode()) + struct.pack("<I", vtype) + payload


def vocab_file(path, token_kb):
    tokens = [b"<unk>", b"<bos>", b"<eos>", b"a", b"a" * (token_kb * 1000)]
    types = [2, 3, 3, 1, 4]  # unknown, control, control, normal, user-defined
    kvs = [
        kv("general.architecture", GGUF_STRING, gguf_str(b"gemma3")),
        kv("tokenizer.ggml.model", GGUF_STRING, gguf_str(b"llama")),
        kv("tokenizer.ggml.tokens", GGUF_ARRAY,
           struct.pack("<IQ", GGUF_STRING, len(tokens)) + b"".join(gguf_str(t) for t in tokens)),
        kv("tokenizer.ggml.token_type", GGUF_ARRAY,
           struct.pack("<IQ", GGUF_I32, len(types)) + struct.pack("<%di" % len(types), *types)),
        kv("tokenizer.ggml.unknown_token_id", GGUF_U32, struct.pack("<I", 0)),
        kv("tokenizer.ggml.bos_token_id", GGUF_U32, struct.pack("<I", 1)),
        kv("tokenizer.ggml.eos_token_id", GGUF_U32, struct.pack("<I", 2)),
        kv("tokenizer.ggml.add_space_prefix", GGUF_BOOL, struct.pack("<B", 0)),
    ]
    with open(path, "wb") as f:
        f.write(b"GGUF" + struct.pack("<IQQ", 3, 0, len(kvs)) + b"".join(kvs))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--bin", default=os.path.join(ROOT, "build", "roofline"))
    ap.add_argument("--sizes", default="20,50,100", help="prompt sizes in kB (1000 bytes)")
    ap.add_argument("--token-kb", type=int, default=200, help="size of the huge special token")
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--timeout", type=float, default=600, help="seconds per run")
    a = ap.parse_args()
    if not os.access(a.bin, os.X_OK):
        sys.exit("tokenize_hostile: %s is not an executable (build first, or --bin)" % a.bin)
    sizes = [int(x) for x in a.sizes.split(",") if x]
    with tempfile.TemporaryDirectory(prefix="roofline-tokhostile-") as tmp:
        model = os.path.join(tmp, "vocab.gguf")
        vocab_file(model, a.token_kb)
        print("binary %s; one user-defined token of %d kB; prompts of 'a' (prefixes of it)"
              % (a.bin, a.token_kb))
        for kb in sizes:
            prompt = os.path.join(tmp, "prompt-%d.txt" % kb)
            with open(prompt, "wb") as f:
                f.write(b"a" * (kb * 1000))
            times = []
            for _ in range(a.reps):
                t0 = time.monotonic()
                p = subprocess.run([a.bin, "tokenize", "-m", model, "--no-bos", "-f", prompt],
                                   stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                                   timeout=a.timeout)
                times.append(time.monotonic() - t0)
                if p.returncode != 0:
                    sys.exit("tokenize_hostile: exit %d: %s" % (p.returncode, p.stderr.decode()))
            print("  prompt %4d kB: %8.3f s (median of %d: %s)"
                  % (kb, statistics.median(times), len(times),
                     ", ".join("%.3f" % t for t in times)))


if __name__ == "__main__":
    main()
