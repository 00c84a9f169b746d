#!/usr/bin/env python3
"""kill_resume.py: kill `roofline bench` with SIGKILL at random points, resume it each time, and
check that nothing measured was lost or repeated.

A run (speed, load at several levels, accuracy, probe) against the fake backend (or any backend
given with --backend) is started, killed with SIGKILL after a random delay, continued with
`roofline bench --resume DIR`, killed again, ..., --kills times; a last resume runs to the end.
Checks, after every kill: records.jsonl holds only whole lines that parse (a torn last line is
allowed only as the final line, and --resume must cut it); at the end: every request key of
the run has exactly one record that is not `cancelled`, the number of keys is what a clean run
of the same description records, the summary says resumed, counts every line and every load
level has all its requests ok.

  python3 tools/stress/kill_resume.py [--kills 20] [--seed 1] [--bin build/roofline] [--backend URI]

Prints one line per kill and a final verdict; exit 1 when a check fails.
"""
import argparse
import json
import os
import random
import shutil
import signal
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))  # tools/benchlib.py
from benchlib import free_port  # noqa: E402


def read_records(path, allow_torn):
    """Returns (records, torn) where torn is the bytes of a last line without its newline."""
    if not os.path.exists(path):
        return [], 0
    data = open(path, "rb").read()
    lines = data.split(b"\n")
    torn = lines.pop()  # what follows the last newline
    if torn and not allow_torn:
        raise AssertionError(f"{path}: a torn last line of {len(torn)} bytes after resume")
    recs = []
    for i, ln in enumerate(lines, 1):
        try:
            recs.append(json.loads(ln))
        except ValueError as e:
            raise AssertionError(f"{path}:{i}: not a whole record ({e})")
    return recs, len(torn)


def key(r):
    return (r.get("phase", ""), r["suite"], r["backend"], r["level"], r["index"])


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--kills", type=int, default=20)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--bin", default=os.path.join(ROOT, "build", "roofline"))
    ap.add_argument("--backend", default=None, help="a backend URI instead of the fake server")
    ap.add_argument("--min-delay", type=float, default=0.05)
    ap.add_argument("--max-delay", type=float, default=1.0)
    ap.add_argument("--keep", action="store_true", help="keep the run directory")
    args = ap.parse_args()
    rng = random.Random(args.seed)
    tmp = tempfile.mkdtemp(prefix="roofline-kill-")
    fake = None
    if args.backend:
        uri = args.backend
    else:
        port = free_port()
        fake = subprocess.Popen([args.bin, "fake-backend", "--port", str(port), "--ttft-ms", "20",
                                 "--gap-ms", "8"], stdout=subprocess.DEVNULL,
                                stderr=subprocess.DEVNULL)
        time.sleep(0.5)
        uri = f"openai:http://127.0.0.1:{port}/v1"
    run_dir = os.path.join(tmp, "run")
    levels, requests = [1, 4, 16], 48
    start = [args.bin, "bench", "--backend", f"b={uri}", "--suites", "speed,load,accuracy,probe",
             "--speed-runs", "3", "--speed-tokens", "16", "--levels",
             ",".join(map(str, levels)), "--requests", str(requests), "--load-tokens", "16",
             "--accuracy-tokens", "8", "--no-progress", "--out", run_dir]
    resume = [args.bin, "bench", "--resume", run_dir, "--no-progress"]
    records = os.path.join(run_dir, "records.jsonl")
    failures = []
    try:
        for k in range(args.kills):
            cmd = start if k == 0 else resume
            p = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            delay = rng.uniform(args.min_delay, args.max_delay)
            time.sleep(delay)
            p.send_signal(signal.SIGKILL)
            rc = p.wait()
            recs, torn = read_records(records, allow_torn=True)
            print(f"kill {k + 1:2d}: after {delay:.2f} s (exit {rc}), {len(recs)} records"
                  + (f", torn tail {torn} B" if torn else ""), flush=True)
            if rc == 0:
                print("  (the run had already finished)")
        p = subprocess.run(resume, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        if p.returncode != 0:
            failures.append(f"final resume exited {p.returncode}: {p.stderr.strip()[-500:]}")
        recs, _ = read_records(records, allow_torn=False)
        want = 3 + len(levels) * (requests + 1) + 40 + 1  # speed, load with warm-up, accuracy, probe
        done = {}
        for r in recs:
            if r["error_class"] == "cancelled":
                continue
            done.setdefault(key(r), []).append(r["seq"])
        repeated = {k: v for k, v in done.items() if len(v) > 1}
        if repeated:
            failures.append(f"{len(repeated)} requests recorded more than once, e.g. "
                            f"{next(iter(repeated.items()))}")
        if len(done) != want:
            failures.append(f"{len(done)} requests recorded, a clean run records {want}")
        seqs = [r["seq"] for r in recs]
        if len(set(seqs)) != len(seqs):
            failures.append("repeated sequence numbers")
        sessions = sorted({r["session"] for r in recs})
        summary = json.load(open(os.path.join(run_dir, "summary.json")))
        run = summary["run"]
        if not run.get("resumed"):
            failures.append("the summary does not say resumed")
        if run.get("records") != len(recs):
            failures.append(f"summary counts {run.get('records')} records, the file has "
                            f"{len(recs)}")
        for lv in summary["load"]["b"]["levels"]:
            if lv["ok"] != requests:
                failures.append(f"load c={lv['concurrency']}: {lv['ok']} ok of {requests}")
        acc = summary["accuracy"]["b"]
        if acc["total"] != 40 or acc["errors"] != 0:
            failures.append(f"accuracy: {acc['total']} questions, {acc['errors']} errors")
        print(f"{args.kills} kills, {len(sessions)} sessions, {len(recs)} lines, {len(done)} "
              f"requests each recorded once: " + ("ok" if not failures else "FAILED"))
        for f in failures:
            print("  " + f)
    finally:
        if fake:
            fake.terminate()
            fake.wait()
        if args.keep:
            print("run directory:", run_dir)
        else:
            shutil.rmtree(tmp, ignore_errors=True)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
