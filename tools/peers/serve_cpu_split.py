#!/usr/bin/env python3
"""tools/peers/serve_cpu_split.py: where the CPU goes while `roofline serve` runs one load level
(dev script): the engine's compute threads against the HTTP side (libmicrohttpd's polling
thread and one thread per connection) and the client (`roofline bench`, a separate process).

On a 2-core machine the HTTP threads and the client share the cores with the engine's compute
threads, so their CPU seconds are what the serving path takes from decoding. Threads are read
from /proc/PID/task before and after the run; the engine's threads are told apart by their
CPU time (the scheduler thread and the thread pool's workers each use seconds; a connection
thread a few milliseconds per request; connection threads end with their connections, so the
HTTP side is the process's total CPU less the engine threads').

Usage: python3 tools/peers/serve_cpu_split.py [-m MODEL] [-t THREADS] [--level 16] [--tokens 128]
"""
import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))  # tools/benchlib.py
from benchlib import ROOT, ROOFLINE, free_port, http_get  # noqa: E402


def thread_cpu(pid):
    """{tid: (name, cpu seconds)} of every thread of pid."""
    tck = os.sysconf("SC_CLK_TCK")
    out = {}
    for tid in os.listdir("/proc/%d/task" % pid):
        try:
            with open("/proc/%d/task/%s/stat" % (pid, tid)) as f:
                raw = f.read()
        except OSError:
            continue
        name = raw[raw.index("(") + 1:raw.rindex(")")]
        fields = raw.rsplit(")", 1)[1].split()
        out[tid] = (name, (int(fields[11]) + int(fields[12])) / tck)
    return out


def process_cpu(pid):
    """CPU seconds of the whole process, threads that already ended included."""
    tck = os.sysconf("SC_CLK_TCK")
    with open("/proc/%d/stat" % pid) as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / tck


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("-m", "--model",
                    default=os.path.join(ROOT, "models", "qwen2.5-coder-0.5b-instruct-q4_k_m.gguf"))
    ap.add_argument("-t", "--threads", type=int, default=2)
    ap.add_argument("--level", type=int, default=16)
    ap.add_argument("--tokens", type=int, default=128)
    a = ap.parse_args()
    port = free_port()
    log = tempfile.TemporaryFile()
    srv = subprocess.Popen([ROOFLINE, "serve", "-m", a.model, "--port", str(port), "-t",
                            str(a.threads), "--parallel", "16", "--ctx", "1024"],
                           stdout=subprocess.DEVNULL, stderr=log)
    base = "http://127.0.0.1:%d" % port
    try:
        for _ in range(900):
            try:
                if http_get(base + "/health", 1.0)[0] == 200:
                    break
            except Exception:  # noqa: BLE001
                time.sleep(0.2)
        out = tempfile.mkdtemp(prefix="cpu-split-")
        before = thread_cpu(srv.pid)
        p0 = process_cpu(srv.pid)
        c0 = resource.getrusage(resource.RUSAGE_CHILDREN)
        t0 = time.monotonic()
        subprocess.run([ROOFLINE, "bench", "--backend", "s=openai:%s/v1" % base, "--suites",
                        "load", "--levels", str(a.level), "--load-tokens", str(a.tokens),
                        "--warmup", "1", "--out", os.path.join(out, "run"), "--no-progress"],
                       check=True, stdout=subprocess.DEVNULL)
        wall = time.monotonic() - t0
        c1 = resource.getrusage(resource.RUSAGE_CHILDREN)
        after = thread_cpu(srv.pid)
        p1 = process_cpu(srv.pid)
    finally:
        srv.terminate()
        srv.wait(timeout=60)
    delta = []
    for tid, (name, cpu) in after.items():
        delta.append((cpu - before.get(tid, (name, 0.0))[1], tid, name))
    delta.sort(reverse=True)
    compute = [d for d in delta if d[0] > 0.2 * wall]
    compute_s = sum(d[0] for d in compute)
    # connection threads end with their connections: the process total keeps their CPU
    other_s = (p1 - p0) - compute_s
    client_s = (c1.ru_utime - c0.ru_utime) + (c1.ru_stime - c0.ru_stime)
    s = json.load(open(os.path.join(out, "run", "summary.json")))
    lv = s["load"]["s"]["levels"][0]
    res = {"level": a.level, "wall_s": wall, "output_tok_s": lv["output_tok_s"],
           "engine_threads": len(compute), "engine_cpu_s": compute_s,
           "http_cpu_s": other_s, "client_cpu_s": client_s,
           "cores": os.cpu_count()}
    print(json.dumps(res, indent=1))
    print("of %d cores x %.1f s = %.1f core-seconds: engine %.1f (%.0f%%), server HTTP threads "
          "%.2f (%.1f%%), client %.2f (%.1f%%)" % (
              res["cores"], wall, res["cores"] * wall, compute_s,
              100 * compute_s / (res["cores"] * wall), other_s,
              100 * other_s / (res["cores"] * wall), client_s,
              100 * client_s / (res["cores"] * wall)))


if __name__ == "__main__":
    main()
