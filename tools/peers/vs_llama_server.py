#!/usr/bin/env python3
"""tools/peers/vs_llama_server.py: roofline's engine beside llama-server, and the bench checked against a
real server's own timings (dev tool, not a test).

1. Scoreboard. Starts llama-server (tools/peers/build_llama_cpp.sh's build) on the model at 127.0.0.1
   with -t 2, -np 4 and `--jinja --chat-template-file tools/peers/templates/gemma.jinja` (roofline's
   Gemma turns, so chat prompts render as the local engine's do; requests with tools get
   llama.cpp's generic JSON tool-call format), waits for /health, then runs one `roofline bench`
   with two backends, local (the in-process engine, the default model) and llama
   (openai:http://127.0.0.1:PORT/v1), all suites (speed, load 1/4/16, accuracy, agent, probe)
   with sizes that finish in minutes on 2 cores.
   The bench runs backends one after another, so llama-server idles while the local engine runs.
2. Truth against a real server. For the llama backend's speed-suite records, roofline's
   single-stream decode tok/s, (n - 1) / (last - first content event), against the server's own
   (predicted_n - 1) / predicted_ms (llama-server's predicted_per_token_ms is predicted_ms /
   (predicted_n - 1)), and roofline's TTFT (sent -> first content) against the server's
   prompt_ms (prompt processing up to the first token). Target: within 5%, per run. The same for
   the load suite's concurrency-1 records (TPOT against predicted_ms / (predicted_n - 1)).
2b. TTFT on long prompts. The server's prompt_ms leaves out its own HTTP, template, tokenizer
   and slot work (a few ms), which is most of a short prompt's TTFT; so TTFT is also checked on
   prompts of --ttft-words words with the prompt cache off (run file extra_body
   {"cache_prompt": false}), where prompt_ms dominates. Target: within 5%, per run.
3. Client CPU against llama-server. A run with only the llama backend (so the bench process is
   the client alone): load suite, concurrency 1, 8 requests of 128 tokens, no warm-up; CPU
   seconds (os.wait4 rusage of the child, user + system) per request; beside AIPerf on the same
   load (concurrency 1, 8 requests, 128 output tokens, --extra-inputs ignore_eos:true,
   --use-server-token-count). Each repeated --repeats times; medians. Also what each client
   measured (TTFT, TPOT/ITL, tok/s) and the server's CPU during each run.

   Unpinned, on 2 cores with llama-server at -t 2, AIPerf's busy timing loop takes one core and
   llama-server's two threads then crawl (its log showed 1.1 tok/s where it decodes ~70 beside
   roofline's client), so AIPerf's CPU per request grows with the wait. `--pin 0:1` runs
   llama-server with -t 1 on CPU 0 and each client on CPU 1, so neither client can slow it.

Writes runs/vs_llama_server-<UTC time>/ (or --out): results.json, the bench run directories
(scoreboard.md, summary.json, records.jsonl), AIPerf's exports and the server log; prints tables.
The machine is shared and has 2 cores: medians of repeats, and the load average is recorded.

Usage:
  python3 tools/peers/vs_llama_server.py                     # everything (about 10 minutes)
  python3 tools/peers/vs_llama_server.py --only cpu --pin 0:1
"""

import argparse
import json
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))  # tools/benchlib.py
import benchlib as B  # noqa: E402


def model_id(server):
    _, body = B.http_get(server.url + "/models", 5.0)
    return json.loads(body)["data"][0]["id"]


def part_scoreboard(args, out, srv, results):
    d = os.path.join(out, "scoreboard")
    cmd = [B.ROOFLINE, "bench", "--backend", "local=local", "--backend", "llama=openai:" + srv.url,
           "--suites", "speed,load,accuracy,agent,probe", "--speed-runs", str(args.speed_runs),
           "--speed-tokens", str(args.speed_tokens), "--levels", args.levels,
           "--load-tokens", str(args.load_tokens), "--threads", str(args.threads),
           "--out", d, "--no-progress"]
    if args.requests:
        cmd += ["--requests", str(args.requests)]
    quiet = B.wait_quiet(args.quiet_wait)
    la = B.loadavg()
    B.eprint("scoreboard: " + " ".join(cmd))
    s0 = server_cpu(srv)
    r = B.run_measured(cmd, log_path=os.path.join(out, "scoreboard.log"), timeout=3600)
    s1 = server_cpu(srv)
    B.eprint("scoreboard: rc %d, %.0f s" % (r["rc"], r["wall_s"]))
    sb = ""
    if os.path.exists(os.path.join(d, "scoreboard.md")):
        sb = open(os.path.join(d, "scoreboard.md"), errors="replace").read()
    others = r["machine_busy_s"] - r["cpu_s"] - ((s1 - s0) if s0 is not None else 0)
    results["scoreboard"] = {"cmd": cmd, "rc": r["rc"], "wall_s": r["wall_s"], "cpu_s": r["cpu_s"],
                             "server_cpu_s": None if s0 is None else s1 - s0, "others_cpu_s": others,
                             "others_cpu_pct": 100 * others / (r["wall_s"] * (os.cpu_count() or 1)),
                             "busy_before": quiet, "loadavg": la, "dir": d}
    B.eprint("scoreboard: other processes used %.0f%% of the cores meanwhile" %
             results["scoreboard"]["others_cpu_pct"])
    print("\n== 1. Scoreboard (local engine vs llama-server) ==\n")
    print(sb if sb else open(os.path.join(out, "scoreboard.log"), errors="replace").read()[-4000:])
    return d


def part_truth(args, run_dir, results):
    summary, recs = B.read_run(run_dir)
    rows = []
    for x in recs:
        if x["backend"] != "llama" or x["status"] != "ok":
            continue
        t = x.get("server_timings")
        if x["suite"] == "speed" or (x["suite"] == "load" and x["level"] == 1):
            if not t:
                rows.append({"suite": x["suite"], "item": x["item"], "note": "no server_timings"})
                continue
            pn, pms = t["predicted_n"], t["predicted_ms"]
            srv_dec = (pn - 1) / pms * 1000.0 if pn > 1 and pms > 0 else None
            srv_tpot = pms / (pn - 1) if pn > 1 else None
            row = {"suite": x["suite"], "item": x["item"], "level": x["level"],
                   "tokens_roofline": x["completion_tokens_server"], "events": x["content_events"],
                   "predicted_n": pn, "prompt_n": t["prompt_n"],
                   "decode_tok_s_roofline": x["decode_tok_s"], "decode_tok_s_server": srv_dec,
                   "decode_rel_err_pct": None if srv_dec is None else 100 * B.rel_err(x["decode_tok_s"], srv_dec),
                   "tpot_ms_roofline": x["tpot_ms"], "tpot_ms_server": srv_tpot,
                   "ttft_ms_roofline": x["ttft_ms"], "prompt_ms_server": t["prompt_ms"],
                   "ttft_minus_prompt_ms": x["ttft_ms"] - t["prompt_ms"],
                   "ttft_rel_err_pct": 100 * B.rel_err(x["ttft_ms"], t["prompt_ms"]) if t["prompt_ms"] > 0 else None,
                   "e2e_ms_roofline": x["e2e_ms"],
                   "e2e_minus_server_ms": x["e2e_ms"] - t["prompt_ms"] - pms}
            row["decode_within_5pct"] = row["decode_rel_err_pct"] is not None and abs(row["decode_rel_err_pct"]) <= 5
            row["ttft_within_5pct"] = row["ttft_rel_err_pct"] is not None and abs(row["ttft_rel_err_pct"]) <= 5
            rows.append(row)
    sp = [r for r in rows if r.get("suite") == "speed" and "decode_tok_s_server" in r]
    results["truth_vs_server"] = {
        "rows": rows,
        "speed_decode_all_within_5pct": bool(sp) and all(r["decode_within_5pct"] for r in sp),
        "speed_ttft_all_within_5pct": bool(sp) and all(r["ttft_within_5pct"] for r in sp),
        "speed_decode_max_abs_rel_err_pct": max((abs(r["decode_rel_err_pct"]) for r in sp), default=None),
        "speed_ttft_max_abs_rel_err_pct": max((abs(r["ttft_rel_err_pct"]) for r in sp), default=None)}
    print("\n== 2. roofline's figures against llama-server's own timings (llama backend) ==")
    print(B.fmt_table(["suite", "item", "n", "pred_n", "prompt_n", "decode tok/s", "server", "err %", "<=5%",
                       "TTFT ms", "prompt_ms", "err %", "<=5%", "TTFT-prompt ms"],
                      [[r["suite"], r["item"], r.get("tokens_roofline"), r.get("predicted_n"), r.get("prompt_n"),
                        r.get("decode_tok_s_roofline"), r.get("decode_tok_s_server"), r.get("decode_rel_err_pct"),
                        r.get("decode_within_5pct"), r.get("ttft_ms_roofline"), r.get("prompt_ms_server"),
                        r.get("ttft_rel_err_pct"), r.get("ttft_within_5pct"), r.get("ttft_minus_prompt_ms")]
                       for r in rows if "decode_tok_s_server" in r]))


def long_prompt(words):
    """A prompt of about `words` words (roughly 1.3 tokens each), varied so no prefix repeats."""
    subjects = ["The river", "A small engine", "The old library", "Our bench", "The cache",
                "A red kite", "The scheduler", "Every token", "The harbour", "A quiet server"]
    verbs = ["carries", "measures", "remembers", "counts", "reads", "streams", "keeps", "sends"]
    objects = ["seven boxes of letters", "the bandwidth of the morning", "a list of prime numbers",
               "the cost of each hour", "two hundred small requests", "the weight of a line",
               "a map of the northern hills", "the last bus of the day"]
    out, i = [], 0
    while sum(len(x.split()) for x in out) < words:
        out.append("%s %s %s (%d)." % (subjects[i % 10], verbs[(i * 3) % 8], objects[(i * 5) % 8], i))
        i += 1
    return " ".join(out) + "\nSummarise the text above in one sentence."


def part_ttft(args, out, srv, results):
    """TTFT against the server's prompt_ms on prompts long enough that the server's own work
    outside prompt_ms (HTTP, template, tokenizing, slot scheduling: a few ms) is small beside it;
    the prompt cache is off (extra_body) so every run evaluates the whole prompt."""
    rows = []
    for words in args.ttft_words:
        d = os.path.join(out, "ttft-%dw" % words)
        os.makedirs(d, exist_ok=True)
        run = {"backends": [{"name": "llama", "uri": "openai:" + srv.url,
                             "extra_body": {"cache_prompt": False}}],
               "suites": ["speed"],
               "speed": {"runs": args.speed_runs, "max_tokens": 32, "prompt": long_prompt(words)},
               "out": d}
        rf = os.path.join(out, "ttft-%dw.json" % words)
        B.write_json(rf, run)
        B.wait_quiet(args.quiet_wait)
        r = B.run_measured([B.ROOFLINE, "bench", "--run", rf, "--no-progress"],
                           log_path=os.path.join(out, "ttft-%dw.log" % words), timeout=1800)
        if r["rc"] != 0:
            rows.append({"words": words, "rc": r["rc"]})
            continue
        _, recs = B.read_run(d)
        for x in recs:
            t = x.get("server_timings")
            if x["suite"] != "speed" or x["status"] != "ok" or not t or t["prompt_ms"] <= 0:
                continue
            rows.append({"words": words, "item": x["item"], "prompt_n": t["prompt_n"],
                         "ttft_ms_roofline": x["ttft_ms"], "prompt_ms_server": t["prompt_ms"],
                         "ttft_minus_prompt_ms": x["ttft_ms"] - t["prompt_ms"],
                         "ttft_rel_err_pct": 100 * B.rel_err(x["ttft_ms"], t["prompt_ms"]),
                         "decode_tok_s_roofline": x["decode_tok_s"],
                         "decode_tok_s_server": (t["predicted_n"] - 1) / t["predicted_ms"] * 1000.0
                         if t["predicted_n"] > 1 and t["predicted_ms"] > 0 else None})
    for row in rows:
        if "ttft_rel_err_pct" in row:
            row["ttft_within_5pct"] = abs(row["ttft_rel_err_pct"]) <= 5
    results["ttft_vs_server"] = {"rows": rows, "by_words": {
        str(w): {"median_rel_err_pct": B.median([r["ttft_rel_err_pct"] for r in rows
                                                 if r.get("words") == w and "ttft_rel_err_pct" in r]),
                 "median_minus_ms": B.median([r["ttft_minus_prompt_ms"] for r in rows
                                              if r.get("words") == w and "ttft_minus_prompt_ms" in r]),
                 "all_within_5pct": all(r.get("ttft_within_5pct") for r in rows if r.get("words") == w)}
        for w in args.ttft_words}}
    print("\n== 2b. TTFT against llama-server's prompt_ms, long prompts, prompt cache off ==")
    print(B.fmt_table(["words", "item", "prompt_n", "TTFT ms", "prompt_ms", "err %", "<=5%", "TTFT-prompt ms"],
                      [[r["words"], r.get("item"), r.get("prompt_n"), r.get("ttft_ms_roofline"),
                        r.get("prompt_ms_server"), r.get("ttft_rel_err_pct"), r.get("ttft_within_5pct"),
                        r.get("ttft_minus_prompt_ms")] for r in rows]))


def server_cpu(srv):
    try:
        return srv.cpu_s()
    except OSError:
        return None


def others_pct(r, s0, s1):
    """Share of the cores that processes other than the client and the server used in a run."""
    o = r["machine_busy_s"] - r["cpu_s"] - ((s1 - s0) if s0 is not None else 0)
    return 100 * o / (r["wall_s"] * (os.cpu_count() or 1)) if r["wall_s"] else None


def part_cpu(args, out, srv, results):
    runs = []
    tok_dir = None
    if not args.skip_aiperf:
        tok_dir = os.path.abspath(B.build_sp_tokenizer(B.MODEL, os.path.join(B.ROOT, "runs", "tokenizer-gemma3")))
    mid = model_id(srv)
    n, osl = args.cpu_requests, args.cpu_tokens
    for rep in range(args.repeats):
        # roofline, the llama backend alone: the process is the client
        d = os.path.join(out, "cpu", "roofline-r%d" % rep)
        quiet = B.wait_quiet(args.quiet_wait)
        cmd = [B.ROOFLINE, "bench", "--backend", "llama=openai:" + srv.url, "--suites", "load", "--levels", "1",
               "--requests", str(n), "--load-tokens", str(osl), "--warmup", "0", "--out", d, "--no-progress"]
        la = B.loadavg()
        s0 = server_cpu(srv)
        r = B.run_measured(cmd, log_path=os.path.join(out, "cpu-roofline-r%d.log" % rep), timeout=1800)
        s1 = server_cpu(srv)
        fig = None
        if r["rc"] == 0:
            summary, recs = B.read_run(d)
            lv = summary["load"]["llama"]["levels"][0]
            ok = [x for x in recs if x["status"] == "ok"]
            fig = {"ttft_ms_p50": lv["ttft_ms"]["p50"], "tpot_ms_p50": lv["tpot_ms"]["p50"],
                   "output_tok_s": lv["output_tok_s"], "ok": lv["ok"], "errors": lv["errors"],
                   "tokens": lv["output_tokens"],
                   "server_decode_tok_s_p50": B.median([(x["server_timings"]["predicted_n"] - 1) /
                                                        x["server_timings"]["predicted_ms"] * 1000
                                                        for x in ok if x.get("server_timings")])}
        runs.append({"client": "roofline", "rep": rep, "rc": r["rc"], "wall_s": r["wall_s"], "cpu_s": r["cpu_s"],
                     "cpu_s_per_request": r["cpu_s"] / n, "server_cpu_s": None if s0 is None else s1 - s0,
                     "others_cpu_pct": others_pct(r, s0, s1), "busy_before": quiet,
                     "loadavg": la, "figures": fig, "dir": d, "cmd": cmd})
        B.eprint("cpu roofline rep %d: rc %d, wall %.1f s, cpu %.3f s, %s" % (rep, r["rc"], r["wall_s"], r["cpu_s"], fig))
        results["client_cpu_runs_so_far"] = runs
        B.write_json(os.path.join(out, "results.json"), results)
        if args.skip_aiperf:
            continue
        d = os.path.join(out, "cpu", "aiperf-r%d" % rep)
        quiet = B.wait_quiet(args.quiet_wait)
        la = B.loadavg()
        s0 = server_cpu(srv)
        r = B.run_aiperf(srv.base, mid, tok_dir, d, 1, n, osl, isl=args.aiperf_isl,
                         extra_inputs=["ignore_eos:true"], timeout=1800)
        s1 = server_cpu(srv)
        fig = None
        a = B.read_aiperf(d) if r["rc"] == 0 else None
        if a:
            fig = {"ttft_ms_p50": B.aiperf_metric(a, "time_to_first_token"),
                   "itl_ms_p50": B.aiperf_metric(a, "inter_token_latency"),
                   "output_tok_s": B.aiperf_metric(a, "output_token_throughput", "avg"),
                   "requests": B.aiperf_metric(a, "request_count", "avg"),
                   "output_tokens_p50": B.aiperf_metric(a, "output_sequence_length")}
        runs.append({"client": "aiperf", "rep": rep, "rc": r["rc"], "wall_s": r["wall_s"], "cpu_s": r["cpu_s"],
                     "cpu_s_per_request": r["cpu_s"] / n, "server_cpu_s": None if s0 is None else s1 - s0,
                     "others_cpu_pct": others_pct(r, s0, s1), "busy_before": quiet,
                     "loadavg": la, "figures": fig, "dir": d, "cmd": r["cmd"]})
        B.eprint("cpu aiperf   rep %d: rc %d, wall %.1f s, cpu %.3f s, %s" % (rep, r["rc"], r["wall_s"], r["cpu_s"], fig))
        B.write_json(os.path.join(out, "results.json"), results)
    summ = {}
    for client in ("roofline", "aiperf"):
        rs = [x for x in runs if x["client"] == client and x["rc"] == 0]
        if not rs:
            continue
        f = [x["figures"] or {} for x in rs]
        summ[client] = {"cpu_s_per_request": B.median([x["cpu_s_per_request"] for x in rs]),
                        "cpu_s_total": B.median([x["cpu_s"] for x in rs]),
                        "wall_s": B.median([x["wall_s"] for x in rs]),
                        "server_cpu_s": B.median([x["server_cpu_s"] for x in rs]),
                        "others_cpu_pct": B.median([x["others_cpu_pct"] for x in rs]),
                        "ttft_ms_p50": B.median([y.get("ttft_ms_p50") for y in f]),
                        "tpot_or_itl_ms_p50": B.median([y.get("tpot_ms_p50", y.get("itl_ms_p50")) for y in f]),
                        "output_tok_s": B.median([y.get("output_tok_s") for y in f])}
    ratio = None
    if "roofline" in summ and "aiperf" in summ and summ["roofline"]["cpu_s_per_request"]:
        ratio = summ["aiperf"]["cpu_s_per_request"] / summ["roofline"]["cpu_s_per_request"]
    results.pop("client_cpu_runs_so_far", None)
    results["client_cpu"] = {"requests": n, "pinned": args.pin, "tokens": osl, "concurrency": 1, "runs": runs, "summary": summ,
                             "aiperf_over_roofline_cpu": ratio}
    print("\n== 3. Client CPU against llama-server (c=1, %d requests x %d tokens; medians of %d repeats) ==" % (
        n, osl, args.repeats))
    print(B.fmt_table(["client", "CPU s/request", "CPU s total", "wall s", "server CPU s", "others' CPU %",
                       "TTFT p50 ms", "TPOT/ITL p50 ms", "output tok/s"],
                      [[k, v["cpu_s_per_request"], v["cpu_s_total"], v["wall_s"], v["server_cpu_s"],
                        v["others_cpu_pct"], v["ttft_ms_p50"], v["tpot_or_itl_ms_p50"], v["output_tok_s"]]
                       for k, v in summ.items()]))
    if ratio:
        print("  AIPerf / roofline CPU per request: %.1fx" % ratio)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", help="output directory (default runs/vs_llama_server-<UTC time>)")
    ap.add_argument("--only", choices=["scoreboard", "ttft", "cpu"], action="append",
                    help="run only these parts (the truth check reads the scoreboard run)")
    ap.add_argument("--port", type=int, default=0, help="llama-server port (0: a free one)")
    ap.add_argument("--threads", type=int, default=2, help="threads for llama-server and the local engine")
    ap.add_argument("--parallel", type=int, default=4, help="llama-server -np")
    ap.add_argument("--ctx", type=int, default=8192, help="llama-server -c (shared by the slots)")
    ap.add_argument("--speed-runs", type=int, default=5)
    ap.add_argument("--speed-tokens", type=int, default=256)
    ap.add_argument("--levels", default="1,4,16")
    ap.add_argument("--requests", type=int, default=0, help="load requests per level (0: the bench's default)")
    ap.add_argument("--load-tokens", type=int, default=64)
    ap.add_argument("--repeats", type=int, default=3, help="repeats of the client-CPU runs")
    ap.add_argument("--cpu-requests", type=int, default=8)
    ap.add_argument("--cpu-tokens", type=int, default=128)
    ap.add_argument("--aiperf-isl", type=int, default=16, help="AIPerf synthetic prompt tokens")
    ap.add_argument("--ttft-words", type=lambda v: [int(x) for x in v.split(",")], default=[150, 600],
                    help="prompt lengths (words) of the long-prompt TTFT check")
    ap.add_argument("--pin", metavar="SERVER:CLIENT",
                    help="pin llama-server (then with -t 1) to CPU SERVER and each measured client "
                         "to CPU CLIENT (taskset), so a client's own CPU use cannot slow the server")
    ap.add_argument("--skip-aiperf", action="store_true")
    ap.add_argument("--roofline", default=B.ROOFLINE,
                    help="the roofline binary (default build/roofline; a copy keeps a rebuild from "
                         "changing it mid-run)")
    ap.add_argument("--quiet-wait", type=float, default=120,
                    help="before each run, wait at most this long for other processes to go quiet")
    args = ap.parse_args()
    B.ROOFLINE = os.path.abspath(args.roofline)
    parts = args.only or ["scoreboard", "ttft", "cpu"]
    out = args.out or os.path.join(B.ROOT, "runs", "vs_llama_server-" + time.strftime("%Y%m%d-%H%M%S", time.gmtime()))
    os.makedirs(out, exist_ok=True)
    if not os.path.exists(B.ROOFLINE):
        sys.exit("build first: ./scripts/build.sh")
    results = {"date": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()), "args": vars(args),
               "nproc": os.cpu_count(), "loadavg_start": B.loadavg(), "out": out}
    port = args.port or B.free_port()
    server_cpus = None
    if args.pin:
        server_cpus, B.CLIENT_CPUS = args.pin.split(":")
        args.threads = 1
    srv = B.LlamaServer(B.MODEL, port, os.path.join(out, "llama-server.log"), threads=args.threads,
                        parallel=args.parallel, ctx=args.ctx, cpus=server_cpus)
    results["llama_server"] = {"cmd": srv.cmd, "url": srv.url}
    if not args.skip_aiperf:
        results["aiperf_version"] = B.aiperf_version()
    t0 = time.monotonic()
    try:
        if "scoreboard" in parts:
            d = part_scoreboard(args, out, srv, results)
            if results["scoreboard"]["rc"] == 0:
                part_truth(args, d, results)
            B.write_json(os.path.join(out, "results.json"), results)
        if "ttft" in parts:
            part_ttft(args, out, srv, results)
            B.write_json(os.path.join(out, "results.json"), results)
        if "cpu" in parts:
            part_cpu(args, out, srv, results)
    finally:
        srv.stop()
        B.finish_results(out, results, t0)


if __name__ == "__main__":
    main()
