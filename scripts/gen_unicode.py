#!/usr/bin/env python3
"""scripts/gen_unicode.py: writes src/model/unicode_data.c, the code point tables the byte-level
BPE pre-tokenizers read (src/model/unicode.c looks them up).

Unicode version: 15.1.0, the version of llama.cpp's own table (its src/unicode-data.cpp, from
scripts/gen-unicode-data.py there): every code point's category agrees with it (checked with
--check below). Python's built-in unicodedata is 14.0.0 on Python 3.11 and 15.1.0 on 3.13; the
script takes the `unicodedata2` package when it is installed, else the built-in module, and
refuses any version but 15.1.0 (--allow-version overrides, for experiments only):

    python3 -m venv /tmp/uv && /tmp/uv/bin/pip install unicodedata2==15.1.0
    /tmp/uv/bin/python scripts/gen_unicode.py [--out src/model/unicode_data.c] [--check FILE]

What it writes:
  - rf_unicode_cat_ranges: the code points 0..0x10FFFF cut into maximal runs of one category
    group, each entry (start << 8) | flag, flag one of the category groups below (a run ends
    where the next begins; the last ends at 0x110000). Groups as llama.cpp's: N (Nd Nl No),
    L (Lu Ll Lt Lm Lo), Z (Zs Zl Zp), M (Mn Mc Me), P (Pc Pd Ps Pe Pi Pf Po), S (Sm Sc Sk So),
    C (Cc Cf Cs Co), and "undefined" for unassigned code points (Cn);
  - rf_unicode_latin1: the flags of each code point below 256, RF_UCP_WHITESPACE (0x100)
    included (the fast path);
  - rf_unicode_whitespace: the White_Space code points of PropList.txt (the list llama.cpp
    hard-codes: U+0009..U+000D, U+0020, U+0085, U+00A0, U+1680, U+2000..U+200A, U+2028,
    U+2029, U+202F, U+205F, U+3000), which carry RF_UCP_WHITESPACE on top of their category;
  - rf_unicode_lower_ascii_map: the code points at or above 128 whose simple lowercase mapping is
    ASCII (U+0130 -> 'i', U+212A KELVIN SIGN -> 'k'), what the case-insensitive contractions of
    the qwen2 split need beyond A-Z. U+0130 is the one code point whose full lowercase mapping
    (str.lower) is longer than one character; its simple mapping is the first one.

The output goes through clang-format (the repo's .clang-format) when it is installed.

--check FILE compares the categories, the whitespace set and the lowercase-to-ASCII pairs with
llama.cpp's src/unicode-data.cpp and exits 1 on any difference.
"""
import argparse
import os
import re
import shutil
import subprocess
import sys

try:
    import unicodedata2 as ucd
    SOURCE = "unicodedata2 " + getattr(ucd, "__version__", ucd.unidata_version)
except ImportError:
    import unicodedata as ucd
    SOURCE = "Python %d.%d unicodedata" % sys.version_info[:2]

WANT_VERSION = "15.1.0"
MAX_CP = 0x110000
ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

# Flags: the same bit values as llama.cpp's unicode_cpt_flags (src/model/unicode.h).
UNDEFINED, NUMBER, LETTER, SEPARATOR, MARK, PUNCTUATION, SYMBOL, CONTROL = (
    0x01, 0x02, 0x04, 0x08, 0x10, 0x20, 0x40, 0x80)
GROUP = {
    "Cn": UNDEFINED,
    "Cc": CONTROL, "Cf": CONTROL, "Cs": CONTROL, "Co": CONTROL,
    "Lu": LETTER, "Ll": LETTER, "Lt": LETTER, "Lm": LETTER, "Lo": LETTER,
    "Mn": MARK, "Mc": MARK, "Me": MARK,
    "Nd": NUMBER, "Nl": NUMBER, "No": NUMBER,
    "Pc": PUNCTUATION, "Pd": PUNCTUATION, "Ps": PUNCTUATION, "Pe": PUNCTUATION,
    "Pi": PUNCTUATION, "Pf": PUNCTUATION, "Po": PUNCTUATION,
    "Sm": SYMBOL, "Sc": SYMBOL, "Sk": SYMBOL, "So": SYMBOL,
    "Zs": SEPARATOR, "Zl": SEPARATOR, "Zp": SEPARATOR,
}
WHITESPACE = sorted(list(range(0x09, 0x0D + 1)) + list(range(0x2000, 0x200A + 1)) +
                    [0x20, 0x85, 0xA0, 0x1680, 0x2028, 0x2029, 0x202F, 0x205F, 0x3000])


def flags_of_all():
    return [GROUP[ucd.category(chr(cp))] for cp in range(MAX_CP)]


def lower_ascii_pairs():
    pairs = []
    for cp in range(128, MAX_CP):
        if 0xD800 <= cp < 0xE000:
            continue
        low = chr(cp).lower()
        if len(low) > 1 and cp != 0x130:
            continue  # full mappings only (SpecialCasing); their simple mapping is cp itself
        if ord(low[0]) < 128:
            pairs.append((cp, ord(low[0])))
    return pairs


def ranges_of(flags):
    out = [(0, flags[0])]
    for cp in range(1, MAX_CP):
        if flags[cp] != out[-1][1]:
            out.append((cp, flags[cp]))
    return out


def check(path, flags, lower):
    src = open(path, encoding="utf-8").read()
    pair_re = re.compile(r"\{0x([0-9A-Fa-f]+), 0x([0-9A-Fa-f]+)\}")
    sec = src.split("unicode_ranges_flags = {", 1)[1].split("};", 1)[0]
    theirs = [(int(a, 16), int(b, 16)) for a, b in pair_re.findall(sec)]
    ref = bytearray(MAX_CP)
    for (s, f), (e, _) in zip(theirs, theirs[1:]):
        for cp in range(s, min(e, MAX_CP)):
            ref[cp] = f & 0xFF
    bad = [cp for cp in range(MAX_CP) if ref[cp] != flags[cp]]
    ws_sec = src.split("unicode_set_whitespace = {", 1)[1].split("};", 1)[0]
    ws = sorted(int(x, 16) for x in re.findall(r"0x([0-9A-Fa-f]+)", ws_sec))
    lo_sec = src.split("unicode_map_lowercase = {", 1)[1].split("};", 1)[0]
    lo = [(int(a, 16), int(b, 16)) for a, b in pair_re.findall(lo_sec)]
    lo_ascii = [(a, b) for a, b in lo if a >= 128 and b < 128]
    ok = True
    if bad:
        ok = False
        print(f"{len(bad)} code points differ in category, first: "
              f"{[hex(c) for c in bad[:10]]}", file=sys.stderr)
    if ws != WHITESPACE:
        ok = False
        print(f"whitespace sets differ: {ws} vs {WHITESPACE}", file=sys.stderr)
    if lo_ascii != lower:
        ok = False
        print(f"lowercase-to-ASCII pairs differ: {lo_ascii} vs {lower}", file=sys.stderr)
    print(f"--check {path}: {'identical' if ok else 'DIFFERENT'}", file=sys.stderr)
    return ok


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", default=os.path.join(ROOT, "src", "model", "unicode_data.c"))
    ap.add_argument("--check", metavar="FILE", help="llama.cpp's src/unicode-data.cpp")
    ap.add_argument("--allow-version", action="store_true")
    args = ap.parse_args()
    if ucd.unidata_version != WANT_VERSION and not args.allow_version:
        sys.exit(f"{SOURCE} has Unicode {ucd.unidata_version}, the table must be "
                 f"{WANT_VERSION}: pip install unicodedata2=={WANT_VERSION}")

    flags = flags_of_all()
    lower = lower_ascii_pairs()
    if args.check and not check(args.check, flags, lower):
        sys.exit(1)
    ranges = ranges_of(flags)
    # unicode.c looks White_Space up only among separators past U+00FF.
    assert all(flags[c] == SEPARATOR for c in WHITESPACE if c >= 256)

    lines = []
    w = lines.append
    w("/* unicode_data.c: GENERATED by scripts/gen_unicode.py; do not edit.")
    w(" *")
    w(" * Unicode %s (%s)." % (ucd.unidata_version, SOURCE))
    w(" * The tables src/model/unicode.c reads (see unicode.h): category runs, the flags of the")
    w(" * first 256 code points, the White_Space set and the non-ASCII code points whose simple")
    w(" * lowercase mapping is ASCII. Read-only; nothing here is ever freed. */")
    w('#include "model/unicode.h"')
    w("")
    w("/* (start << 8) | flag: the category of the run of code points from start to the next start")
    w(" * (the last run ends at 0x110000). */")
    w("const uint32_t rf_unicode_cat_ranges[] = {")
    row = []
    for start, f in ranges:
        row.append("0x%08Xu," % ((start << 8) | f))
        if len(row) == 7:
            w("    " + " ".join(row))
            row = []
    if row:
        w("    " + " ".join(row))
    w("};")
    w("const size_t rf_unicode_n_cat_ranges = %d;" % len(ranges))
    w("")
    w("/* Flags of U+0000..U+00FF, RF_UCP_WHITESPACE (0x100) included. */")
    w("const uint16_t rf_unicode_latin1[256] = {")
    for i in range(0, 256, 13):
        w("    " + " ".join("0x%03X," % (flags[c] | (0x100 if c in WHITESPACE else 0))
                          for c in range(i, min(i + 13, 256))))
    w("};")
    w("")
    w("const uint32_t rf_unicode_whitespace[] = {")
    for i in range(0, len(WHITESPACE), 8):
        w("    " + " ".join("0x%04X," % c for c in WHITESPACE[i:i + 8]))
    w("};")
    w("const size_t rf_unicode_n_whitespace = %d;" % len(WHITESPACE))
    w("")
    w("/* {code point, its simple lowercase mapping}: those at or above 128 that map to ASCII. */")
    w("const uint32_t rf_unicode_lower_ascii_map[][2] = {")
    for a, b in lower:
        w("    {0x%04X, 0x%02X}," % (a, b))
    w("};")
    w("const size_t rf_unicode_n_lower_ascii = %d;" % len(lower))
    with open(args.out, "w", encoding="ascii", newline="\n") as f:
        f.write("\n".join(lines) + "\n")
    # The repo's style (.clang-format) when clang-format is there, as for every C file.
    cf = shutil.which("clang-format")
    if cf:
        subprocess.run([cf, "-i", "--style=file", args.out], check=True, cwd=ROOT)
    print(f"wrote {args.out}: Unicode {ucd.unidata_version} ({SOURCE}), {len(ranges)} category "
          f"runs, {len(WHITESPACE)} whitespace code points, {len(lower)} lowercase-to-ASCII pairs",
          file=sys.stderr)


if __name__ == "__main__":
    main()
