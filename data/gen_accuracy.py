#!/usr/bin/env python3
"""Generate the bench's accuracy question file (JSONL, one question per line).

The seeds' suite (seed 003: "a 40-question validation suite comprising three distinct categories:
15 multi-digit multiplication tasks, 15 multi-step arithmetic calculations (a + b - c), and 10
geopolitical capital queries") rebuilt as data:

  * 15 x "multiplication": 5 of 2x2 digits, 5 of 3x2 digits, 5 of 3x3 digits, drawn with
    random.Random(seed). Operands are never multiples of 10 and never 11/111 (trivial shortcuts),
    and no pair repeats. Graded "number".
  * 15 x "multi_step": a + b - c with three-digit a, b, c. The first two are the seed's own
    examples, 876 + 608 - 558 = 926 and 257 + 388 - 290 = 355; the other 13 are drawn from the same
    generator with a positive result (as in the seed's examples) and no repeats. Graded "number".
  * 10 x "capital": a fixed list of countries whose capital is unambiguous, including a few that
    models get wrong (Australia, Canada, Turkey, Nigeria, Switzerland, Brazil), with aliases for
    spellings that are equally correct ("Washington, D.C." / "Washington DC" / "Washington",
    "Brasília" / "Brasilia", "Bern" / "Berne"). Graded "word" (case-insensitive whole word).

Line schema (src/bench/questions.h checks it):
  {"id": str, "category": str, "prompt": str, "answer": str,
   "grader": "number" | "exact" | "word", "aliases": [str, ...] (optional, word only)}

The output is deterministic for a given seed (same bytes on every run and Python 3 version: the
draws use only Random.randint on a fixed seed, and json.dumps with a fixed key order).

Usage:
  python3 data/gen_accuracy.py                 # writes data/accuracy/seed40.jsonl
  python3 data/gen_accuracy.py --check         # exits 1 if the committed file differs
  python3 data/gen_accuracy.py --seed 7 --out /tmp/q.jsonl
"""

import argparse
import json
import os
import random
import sys

DEFAULT_SEED = 40
HERE = os.path.dirname(os.path.abspath(__file__))
DEFAULT_OUT = os.path.join(HERE, "accuracy", "seed40.jsonl")

SEED_EXAMPLES = [(876, 608, 558), (257, 388, 290)]  # 926 and 355 in the seed

CAPITALS = [
    # (country, capital, aliases)
    ("France", "Paris", []),
    ("Japan", "Tokyo", []),
    ("the United States", "Washington, D.C.", ["Washington D.C.", "Washington DC", "Washington"]),
    ("Australia", "Canberra", []),
    ("Canada", "Ottawa", []),
    ("Brazil", "Brasília", ["Brasilia"]),
    ("Turkey", "Ankara", []),
    ("Nigeria", "Abuja", []),
    ("Switzerland", "Bern", ["Berne"]),
    ("Egypt", "Cairo", []),
]


def number_prompt(expr):
    return f"What is {expr}? Answer with the number only."


def operand(rng, digits):
    lo, hi = 10 ** (digits - 1), 10**digits - 1
    while True:
        v = rng.randint(lo, hi)
        if v % 10 != 0 and v not in (11, 111):
            return v


def multiplications(rng):
    out, seen = [], set()
    for da, db in [(2, 2)] * 5 + [(3, 2)] * 5 + [(3, 3)] * 5:
        while True:
            a, b = operand(rng, da), operand(rng, db)
            if (a, b) not in seen and (b, a) not in seen:
                break
        seen.add((a, b))
        out.append((a, b))
    return out


def multi_steps(rng):
    out = list(SEED_EXAMPLES)
    seen = set(out)
    while len(out) < 15:
        a, b, c = (rng.randint(100, 999) for _ in range(3))
        if a + b - c > 0 and (a, b, c) not in seen:
            seen.add((a, b, c))
            out.append((a, b, c))
    return out


def questions(seed):
    rng = random.Random(seed)
    items = []
    for i, (a, b) in enumerate(multiplications(rng), 1):
        items.append({
            "id": f"mul-{i:02d}",
            "category": "multiplication",
            "prompt": number_prompt(f"{a} * {b}"),
            "answer": str(a * b),
            "grader": "number",
        })
    for i, (a, b, c) in enumerate(multi_steps(rng), 1):
        items.append({
            "id": f"abc-{i:02d}",
            "category": "multi_step",
            "prompt": number_prompt(f"{a} + {b} - {c}"),
            "answer": str(a + b - c),
            "grader": "number",
        })
    for i, (country, capital, aliases) in enumerate(CAPITALS, 1):
        q = {
            "id": f"cap-{i:02d}",
            "category": "capital",
            "prompt": f"What is the capital of {country}? Answer with the city name only.",
            "answer": capital,
            "grader": "word",
        }
        if aliases:
            q["aliases"] = aliases
        items.append(q)
    return items


def render(seed):
    return "".join(json.dumps(q, ensure_ascii=False) + "\n" for q in questions(seed))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--seed", type=int, default=DEFAULT_SEED)
    ap.add_argument("--out", default=DEFAULT_OUT)
    ap.add_argument("--check", action="store_true", help="compare with --out instead of writing")
    args = ap.parse_args()
    text = render(args.seed)
    # sanity: the seed's own examples are present with the seed's answers
    by_prompt = {q["prompt"]: q["answer"] for q in questions(args.seed)}
    assert by_prompt[number_prompt("876 + 608 - 558")] == "926"
    assert by_prompt[number_prompt("257 + 388 - 290")] == "355"
    if args.check:
        try:
            with open(args.out, encoding="utf-8") as f:
                same = f.read() == text
        except OSError:
            same = False
        print(f"{args.out}: {'up to date' if same else 'differs from the generator'}")
        return 0 if same else 1
    os.makedirs(os.path.dirname(os.path.abspath(args.out)), exist_ok=True)
    with open(args.out, "w", encoding="utf-8", newline="\n") as f:
        f.write(text)
    print(f"wrote {args.out}: {text.count(chr(10))} questions (seed {args.seed})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
