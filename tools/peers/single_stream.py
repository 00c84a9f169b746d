#!/usr/bin/env python3
"""Single-stream decode through every path a user takes, side by side in one run.

Issue 11's criterion: single-stream decode through the scheduler (the bench's `local:` backend,
`roofline serve` with one stream, `roofline run`) within 5% of `roofline speed`'s tg figure at
the same context and threads; and `roofline bench --backend serve=openai:URL` within 5% of the
in-process `local` backend. Each round runs, in a rotated order:

  speed   roofline speed -p 0 -b 1 -n N -r 1 --json          tg (all logits, as llama-bench)
                                                             and B=1 (the batched path)
  run     roofline run --temp 0 -n N --ignore-eos            its "decode: X tok/s"
  local   roofline bench --backend local=local:MODEL --suites speed --speed-runs 1
  serve   roofline bench --backend serve=openai:URL --suites speed --speed-runs 1, against one
          `roofline serve` started once (warm) for the whole run

and prints the medians over rounds and each path's ratio to speed's tg. Dev script (Python is
for scripts only); the figures come from roofline's own binaries.

usage: tools/peers/single_stream.py [-m MODEL] [-n TOKENS] [-r ROUNDS] [-t THREADS] [--out FILE]
"""
import argparse
import json
import os
import re
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
BIN = os.path.join(ROOT, "build", "roofline")


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def speed(a):
    out = subprocess.run(
        [BIN, "speed", "-m", a.model, "-p", "0", "-b", "1", "-n", str(a.tokens), "-r", "1",
         "-t", str(a.threads), "--json"],
        check=True, capture_output=True, text=True).stdout
    j = json.loads(out)
    return {"speed_tg": j["tg"]["median"], "speed_b1": j["batched"][0]["median"]}


def run(a):
    err = subprocess.run(
        [BIN, "run", "-m", a.model, "-p", "Once upon a time", "--temp", "0", "-n",
         str(a.tokens), "--ignore-eos", "-t", str(a.threads)],
        check=True, capture_output=True, text=True).stderr
    m = re.search(r"decode: ([0-9.]+) tok/s", err)
    return {"run": float(m.group(1))}


def bench(a, name, uri, tmp):
    out = os.path.join(tmp, "%s-%d" % (name, time.monotonic_ns()))
    cmd = [BIN, "bench", "--backend", "%s=%s" % (name, uri), "--suites", "speed",
           "--speed-runs", "1", "--speed-tokens", str(a.tokens), "--out", out, "--no-progress",
           "--threads", str(a.threads)]
    subprocess.run(cmd, check=True, capture_output=True, text=True)
    s = json.load(open(os.path.join(out, "summary.json")))
    return {name: s["speed"][name]["decode_tok_s"]["median"]}


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("-m", "--model",
                    default=os.path.join(ROOT, "models", "qwen2.5-coder-0.5b-instruct-q4_k_m.gguf"))
    ap.add_argument("-n", "--tokens", type=int, default=256)
    ap.add_argument("-r", "--rounds", type=int, default=5)
    ap.add_argument("-t", "--threads", type=int, default=os.cpu_count() or 2)
    ap.add_argument("--out", help="write the figures as JSON here")
    a = ap.parse_args()

    port = free_port()
    srv = subprocess.Popen([BIN, "serve", "-m", a.model, "--port", str(port), "-t",
                            str(a.threads)], stdout=subprocess.DEVNULL,
                           stderr=subprocess.DEVNULL)
    url = "http://127.0.0.1:%d" % port
    try:
        for _ in range(600):
            try:
                if urllib.request.urlopen(url + "/health", timeout=1).status == 200:
                    break
            except Exception:
                time.sleep(0.1)
        else:
            sys.exit("roofline serve did not become ready")
        tmp = tempfile.mkdtemp(prefix="single-stream-")
        steps = [lambda: speed(a), lambda: run(a),
                 lambda: bench(a, "local", "local:" + a.model, tmp),
                 lambda: bench(a, "serve", "openai:%s/v1" % url, tmp)]
        # one warm-up pass, not recorded: the first read of the weights after a while can be
        # from disk on this VM (it reclaims page cache)
        for f in steps:
            f()
        rounds = []
        for r in range(a.rounds):
            row = {}
            for i in range(len(steps)):
                row.update(steps[(i + r) % len(steps)]())
            rounds.append(row)
            print("round %d: " % (r + 1) +
                  "  ".join("%s %.2f" % (k, v) for k, v in sorted(row.items())), flush=True)
    finally:
        srv.terminate()
        srv.wait(timeout=30)
    keys = ["speed_tg", "speed_b1", "run", "local", "serve"]
    med = {k: statistics.median(r[k] for r in rounds) for k in keys}
    print("\nmedians over %d rounds, %d tokens, %d threads, %s:" %
          (a.rounds, a.tokens, a.threads, os.path.basename(a.model)))
    for k in keys:
        print("  %-9s %8.2f tok/s  %6.1f%% of speed tg" % (k, med[k], 100 * med[k] / med["speed_tg"]))
    print("  serve/local: %.1f%%" % (100 * med["serve"] / med["local"]))
    if a.out:
        json.dump({"model": a.model, "tokens": a.tokens, "threads": a.threads,
                   "rounds": rounds, "median": med}, open(a.out, "w"), indent=1)


if __name__ == "__main__":
    main()
