#!/usr/bin/env python3
"""bench_many_streams.py: `roofline bench` load levels of 1,000 and 4,000 concurrent streams
against `roofline fake-backend`: does every request complete, and what does the client pay?

  python3 tools/stress/bench_many_streams.py [--levels 1000,4000] [--tokens 16] [--gap-ms 20]
                                      [--ttft-ms 50] [--bin build/roofline] [--keep]

For each level L, one bench run (suite load, one level of concurrency L, L requests, each
streaming --tokens tokens at --gap-ms from the fake) is timed as a child process. Reported per
level: requests ok / L and the error classes; the bench process's CPU (user + sys from wait4,
all its threads) and wall time; the load level's own figures from runlog.jsonl: the client
loop's lag (a 5 ms timer's lateness: p50 / p99 / max) and the loop thread's CPU; and whether
the report marked the level client-bound. The soft descriptor limit is raised to the hard one
here (the bench and the fake also raise their own), since each stream is a socket on both
sides. Exit 1 when a level does not complete every request. Figures depend on the machine's
load: quote them with it (printed).
"""
import argparse
import json
import os
import resource
import shutil
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))  # tools/benchlib.py
import benchlib  # noqa: E402
from benchlib import FakeServer, fmt_table, loadavg, read_run, run_measured  # noqa: E402


def level_event(run_dir):
    with open(os.path.join(run_dir, "runlog.jsonl")) as f:
        for line in f:
            ev = json.loads(line)
            if ev.get("kind") == "level":
                return ev
    return {}


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--levels", default="1000,4000")
    ap.add_argument("--tokens", type=int, default=16)
    ap.add_argument("--ttft-ms", type=float, default=50)
    ap.add_argument("--gap-ms", type=float, default=20)
    ap.add_argument("--bin", default=benchlib.ROOFLINE)
    ap.add_argument("--keep", action="store_true", help="keep the run directories")
    args = ap.parse_args()
    benchlib.ROOFLINE = args.bin
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
    levels = [int(x) for x in args.levels.split(",")]
    need = max(levels) + 64
    if hard < need:
        print(f"bench_many_streams: the descriptor limit {hard} is below {need}", file=sys.stderr)
        return 2
    tmp = tempfile.mkdtemp(prefix="roofline-many-")
    fake = FakeServer(["--ttft-ms", args.ttft_ms, "--gap-ms", args.gap_ms],
                      os.path.join(tmp, "fake.log"))
    rows, failed = [], False
    try:
        for lv in levels:
            out = os.path.join(tmp, f"c{lv}")
            load0 = (loadavg() or (0.0,))[0]
            m = run_measured([args.bin, "bench", "--backend", f"fake=openai:{fake.url}",
                              "--suites", "load", "--levels", str(lv), "--requests", str(lv),
                              "--load-tokens", str(args.tokens), "--no-progress", "--out", out],
                             log_path=os.path.join(tmp, f"c{lv}.log"), timeout=900)
            summary, records = read_run(out)
            level = summary["load"]["fake"]["levels"][0]
            ev = level_event(out)
            errors = {}
            for r in records:
                if not r.get("warmup") and r["status"] != "ok":
                    errors[r["error_class"]] = errors.get(r["error_class"], 0) + 1
            ok = level["ok"]
            complete = ok == lv and m["rc"] == 0
            failed |= not complete
            client = level.get("client", {})
            rows.append([lv, f"{ok}/{lv}", ",".join(f"{k}:{v}" for k, v in errors.items()) or "-",
                         f"{m['wall_s']:.1f}", f"{m['cpu_s']:.2f}",
                         f"{ev.get('cpu_s', 0):.2f}",
                         f"{ev.get('lag_p50_ms', 0):.2f}/{ev.get('lag_p99_ms', 0):.2f}/"
                         f"{ev.get('lag_max_ms', 0):.1f}",
                         "yes" if client.get("bound") else "no",
                         f"{load0:.1f}"])
            print(f"verdict: c={lv} {'PASS' if complete else 'FAIL'} ok={ok}/{lv} exit={m['rc']} "
                  f"wall_s={m['wall_s']:.1f} client_cpu_s={m['cpu_s']:.2f} "
                  f"(user {m['user_s']:.2f} sys {m['sys_s']:.2f}) "
                  f"loop_cpu_s={ev.get('cpu_s', 0):.2f} lag_ms_p50={ev.get('lag_p50_ms', 0):.2f} "
                  f"p99={ev.get('lag_p99_ms', 0):.2f} max={ev.get('lag_max_ms', 0):.1f} "
                  f"maxrss_mib={m['maxrss_kb'] / 1024:.0f} load={load0:.1f}", flush=True)
    finally:
        counters = fake.stop()
        if args.keep:
            print("run directories:", tmp)
        else:
            shutil.rmtree(tmp, ignore_errors=True)
    print(fmt_table(["streams", "ok", "errors", "wall s", "bench CPU s", "loop CPU s",
                     "loop lag ms p50/p99/max", "client-bound", "load"], rows))
    print(f"fake backend: {counters.get('streams_completed', '?')} streams completed, "
          f"{counters.get('client_disconnects', '?')} client disconnects")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
