#!/usr/bin/env python3
"""tools/peers/serve_vs_llama_server.py: `roofline serve` against llama-server, same model, same
threads, same client (issue 11's acceptance benchmark; a dev script, not a test).

Starts both servers once on loopback (roofline serve --parallel 16; llama-server from
tools/peers/build_llama_cpp.sh's build with -np 16, continuous batching, the model's own chat template
through --jinja), waits for both /health, then runs `roofline bench --suites load` with both as
`openai:` backends: aggregate output tok/s and TTFT at 1, 4 and 16 concurrent streams, each
level's requests generating exactly --tokens tokens (ignore_eos). The bench drives backends one
after another, so only one server works at a time; with --repeats R the order alternates
(roofline first, then llama first, ...) and the figures are medians over repeats. Optionally
(--aiperf) AIPerf then runs against roofline serve at concurrency 16 and its TTFT, throughput
and error count are recorded.

Targets (issue 11): roofline >= 3x llama-server at 16 streams and >= 1.2x at 1 stream; TTFT p50
at 16 streams no worse than llama-server's.

Writes runs/serve_vs_llama_server-<UTC time>/ (or --out): results.json, the bench run
directories, both server logs; prints a table.

With --with-local the in-process engine (the bench's local: backend) runs too, between the two
servers, so `roofline serve` is also compared with no HTTP at all.

Usage: python3 tools/peers/serve_vs_llama_server.py [-m MODEL] [-t THREADS] [--repeats R]
           [--requests N] [--tokens N] [--levels 1,4,16] [--aiperf] [--with-local] [--out DIR]
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))  # tools/benchlib.py
from benchlib import (ROOT, ROOFLINE, LlamaServer, free_port, http_get,  # noqa: E402
                      build_sp_tokenizer, run_aiperf, read_aiperf, aiperf_metric)


class RooflineServer:
    def __init__(self, model, port, log_path, threads, parallel, ctx):
        self.log = open(log_path, "w")
        self.p = subprocess.Popen([ROOFLINE, "serve", "-m", model, "--port", str(port), "-t",
                                   str(threads), "--parallel", str(parallel), "--ctx", str(ctx)],
                                  stdout=self.log, stderr=subprocess.STDOUT)
        self.base = "http://127.0.0.1:%d" % port
        self.url = self.base + "/v1"
        t_end = time.monotonic() + 180
        while time.monotonic() < t_end:
            if self.p.poll() is not None:
                raise RuntimeError("roofline serve exited; see " + log_path)
            try:
                if http_get(self.base + "/health", 1.0)[0] == 200:
                    return
            except Exception:  # noqa: BLE001  (503 while loading, refused before listening)
                pass
            time.sleep(0.2)
        raise RuntimeError("roofline serve not healthy in 180 s")

    def stop(self):
        self.p.terminate()
        self.p.wait(timeout=60)
        self.log.close()


def bench_load(order, args, out_dir):
    cmd = [ROOFLINE, "bench", "--suites", "load", "--levels", args.levels, "--load-tokens",
           str(args.tokens), "--warmup", "1", "--out", out_dir, "--no-progress"]
    if args.requests:
        cmd += ["--requests", str(args.requests)]
    for name, uri in order:
        cmd += ["--backend", "%s=%s" % (name, uri)]
    subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL)
    s = json.load(open(os.path.join(out_dir, "summary.json")))
    out = {}
    for name, _ in order:
        for lv in s["load"][name]["levels"]:
            out[(name, lv["concurrency"])] = {
                "output_tok_s": lv["output_tok_s"], "ttft_p50_ms": lv["ttft_ms"]["p50"],
                "errors": lv["errors"], "ok": lv["ok"]}
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("-m", "--model",
                    default=os.path.join(ROOT, "models", "qwen2.5-coder-0.5b-instruct-q4_k_m.gguf"))
    ap.add_argument("-t", "--threads", type=int, default=2)
    ap.add_argument("--parallel", type=int, default=16)
    ap.add_argument("--levels", default="1,4,16")
    ap.add_argument("--requests", type=int, default=0,
                    help="requests per level (default: the bench's, max(8, 2 x level))")
    ap.add_argument("--tokens", type=int, default=128)
    ap.add_argument("--repeats", type=int, default=2)
    ap.add_argument("--aiperf", action="store_true", help="also AIPerf against roofline serve")
    ap.add_argument("--with-local", action="store_true",
                    help="also the in-process engine (local:MODEL), between the two servers")
    ap.add_argument("--out")
    a = ap.parse_args()
    out = a.out or os.path.join(ROOT, "runs", time.strftime("serve_vs_llama_server-%Y%m%d-%H%M%S",
                                                            time.gmtime()))
    os.makedirs(out, exist_ok=True)
    ctx_per_seq = 1024
    rs = RooflineServer(a.model, free_port(), os.path.join(out, "roofline-serve.log"), a.threads,
                        a.parallel, ctx_per_seq)
    ls = None
    try:
        ls = LlamaServer(a.model, free_port(), os.path.join(out, "llama-server.log"),
                         threads=a.threads, parallel=a.parallel, ctx=ctx_per_seq * a.parallel,
                         chat_template_file=None)
        runs = []
        for r in range(a.repeats):
            order = [("roofline", "openai:" + rs.url), ("llama", "openai:" + ls.url)]
            if r % 2:
                order.reverse()
            if a.with_local:  # the in-process engine, through the bench's local: backend
                order.insert(1, ("local", "local:" + a.model))
            runs.append(bench_load(order, a, os.path.join(out, "bench-%d" % (r + 1))))
            print("repeat %d done" % (r + 1), flush=True)
        aip = None
        if a.aiperf:
            tok = build_sp_tokenizer(os.path.join(ROOT, "models", "gemma-3-270m-q4_k_m.gguf"),
                                     os.path.join(out, "aiperf-tokenizer"))
            model_id = json.loads(http_get(rs.url + "/models")[1])["data"][0]["id"]
            res = run_aiperf(rs.base, model_id, tok, os.path.join(out, "aiperf"), 16, 48,
                             a.tokens, extra_inputs=["ignore_eos:true"], warmup=2)
            rep = read_aiperf(res["out_dir"])
            aip = {"exit": res.get("rc", res.get("returncode")),
                   "ttft_ms_p50": aiperf_metric(rep, "time_to_first_token"),
                   "output_token_throughput": aiperf_metric(rep, "output_token_throughput",
                                                            "avg"),
                   "request_count": aiperf_metric(rep, "request_count", "avg"),
                   "error_request_count": aiperf_metric(rep, "error_request_count", "avg")}
    finally:
        rs.stop()
        if ls:
            ls.stop()
    levels = [int(x) for x in a.levels.split(",")]
    table = []
    for lv in levels:
        row = {"level": lv}
        for name in ("roofline", "llama") + (("local",) if a.with_local else ()):
            for key in ("output_tok_s", "ttft_p50_ms"):
                row["%s_%s" % (name, key)] = statistics.median(r[(name, lv)][key] for r in runs)
            row["%s_errors" % name] = sum(r[(name, lv)]["errors"] for r in runs)
        row["throughput_ratio"] = row["roofline_output_tok_s"] / row["llama_output_tok_s"]
        if a.with_local:
            row["serve_over_local"] = row["roofline_output_tok_s"] / row["local_output_tok_s"]
        table.append(row)
    print("\n%s, %d threads, %d slots each, %d tokens per request, medians of %d repeats" %
          (os.path.basename(a.model), a.threads, a.parallel, a.tokens, a.repeats))
    print("%7s %14s %14s %7s %14s %14s" % ("streams", "roofline tok/s", "llama tok/s", "ratio",
                                          "roofline TTFT", "llama TTFT"))
    for row in table:
        print("%7d %14.1f %14.1f %6.2fx %11.1f ms %11.1f ms" % (
            row["level"], row["roofline_output_tok_s"], row["llama_output_tok_s"],
            row["throughput_ratio"], row["roofline_ttft_p50_ms"], row["llama_ttft_p50_ms"]))
        if a.with_local:
            print("%7s local (in-process) %.1f tok/s, TTFT %.1f ms: serve/local %.1f%%" % (
                "", row["local_output_tok_s"], row["local_ttft_p50_ms"],
                100 * row["serve_over_local"]))
    if aip:
        print("AIPerf against roofline serve (concurrency 16): %s" % json.dumps(aip))
    json.dump({"model": a.model, "threads": a.threads, "parallel": a.parallel,
               "tokens": a.tokens, "repeats": a.repeats, "table": table, "aiperf": aip,
               "runs": [{"%s@%d" % k: v for k, v in r.items()} for r in runs]},
              open(os.path.join(out, "results.json"), "w"), indent=1)
    print("results: " + os.path.join(out, "results.json"))


if __name__ == "__main__":
    main()
