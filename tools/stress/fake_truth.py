#!/usr/bin/env python3
"""tools/stress/fake_truth.py: checks `roofline bench` against programmed truth (dev tool, not a test).

Starts `roofline fake-backend` (src/fake/fake_server.h) with known schedules and compares what
the bench measured (summary.json, records.jsonl) with what the server was told to do.

1. Truth. Schedules: first content ttft_ms after the request arrives, one event every gap_ms,
   `tokens` tokens, tokens-per-chunk k (default runs k = 1 and k = 4). Load levels (default 1, 64
   and 256; acceptance at 1 and 256), --warmup 0. Truth per request, with e = ceil(tokens / k)
   content events:
     TTFT = ttft_ms;  chunk gap = gap_ms;  per-token gap = gap_ms / k;
     TPOT = (e - 1) * gap_ms / (tokens - 1);  E2E = ttft_ms + (e - 1) * gap_ms;
     tok/s per request = tokens / E2E;  aggregate tok/s at concurrency c = c * tokens / E2E.
   Acceptance (roofline, concurrency 1 and 256): p50 TTFT, p50 per-token gap, per-request and
   aggregate tok/s within 2% or 1 ms of the truth (the 1 ms applies to times only).
   Each roofline level is its own `roofline bench --levels L --requests N` invocation (so that
   concurrency 1 needs fewer requests than 256); repeated --repeats times, medians reported.
   AIPerf (in .peers/aiperf-venv) runs the same schedules and levels, its figures against the
   same truth: TTFT p50, ITL p50 (AIPerf's ITL is vLLM's TPOT), inter-chunk latency p50,
   per-request n/E2E tok/s p50 and output token throughput.
2. Faults. For each fault kind the fake server injects it at --fault-rate; the bench (load suite,
   a run file with the backend's stall_s short so stall detection fires) must finish the run,
   record every request, and give each faulted request an error record of the right class:
     refuse -> refused (or, on a reused keep-alive connection, resent by libcurl on a new one:
     counted in the record's resends), 500 -> http_5xx, 429 -> http_4xx, stall -> stall, truncate -> truncated,
     invalid_json -> invalid_json, error_event -> server_error;
   wrong_tool_call / wrong_tool_name are transport-level successes (finish_reason tool_calls) in
   the load suite; they are checked in the agent suite (fault rate 1), whose runs must be graded
   not ok. The server's own counters (faults_by_kind) are the truth for how many were faulted.
3. Client CPU and request rate. Against the fake at zero latency (--ttft-ms 0 --gap-ms 0
   --tokens 1), roofline bench and AIPerf at the same concurrency: CPU seconds of the client
   process (os.wait4 rusage: user + system, descendants included) per request, total and marginal
   (difference between a long and a short run, which removes start-up cost), and requests/s.
   Targets: roofline CPU/request <= 1/20 of AIPerf's; roofline requests/s >= 10x AIPerf's.
   Also the CPU per request of each client on the 64-token loads of part 1.

Writes runs/fake_truth-<UTC time>/ (or --out): results.json with every figure and the raw runs
beneath it; prints the tables. The machine is shared and has 2 cores: read medians of repeats.

Usage:
  python3 tools/stress/fake_truth.py                      # everything (about 15 minutes)
  python3 tools/stress/fake_truth.py --repeats 1 --skip-aiperf
  python3 tools/stress/fake_truth.py --only faults
"""

import argparse
import json
import math
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))  # tools/benchlib.py
import benchlib as B  # noqa: E402

FAULT_CLASS = {"refuse": "refused", "500": "http_5xx", "429": "http_4xx", "stall": "stall",
               "truncate": "truncated", "invalid_json": "invalid_json",
               "error_event": "server_error", "wrong_tool_call": "ok", "wrong_tool_name": "ok"}


# ---------------------------------------------------------------- roofline runs


def roofline_load(url, out_dir, level, requests, tokens, run_file=None, extra=()):
    cmd = [B.ROOFLINE, "bench"]
    if run_file:
        cmd += ["--run", run_file]
    else:
        cmd += ["--backend", "fake=openai:" + url]
    cmd += ["--suites", "load", "--levels", str(level), "--requests", str(requests),
            "--load-tokens", str(tokens), "--warmup", "0", "--out", out_dir, "--no-progress"]
    cmd += list(extra)
    os.makedirs(out_dir, exist_ok=True)
    res = B.run_measured(cmd, log_path=os.path.join(out_dir, "bench.log"), timeout=3600)
    res["cmd"] = cmd
    return res


def truth_of(s):
    n, k = s["tokens"], s["tpc"]
    e = math.ceil(n / k)
    e2e = s["ttft_ms"] + (e - 1) * s["gap_ms"]
    return {"ttft_ms": s["ttft_ms"], "chunk_gap_ms": s["gap_ms"], "per_token_gap_ms": s["gap_ms"] / k,
            "tpot_ms": (e - 1) * s["gap_ms"] / (n - 1) if n > 1 else None, "e2e_ms": e2e,
            "req_tok_s": n / e2e * 1000.0, "events": e}


def roofline_figures(out_dir, level, sched=None):
    summary, recs = B.read_run(out_dir)
    lv = summary["load"]["fake"]["levels"][0]
    ok = [r for r in recs if r["status"] == "ok" and not r["warmup"]]
    ok.sort(key=lambda r: r["t_sent_ms"])
    steady = ok[level:] if len(ok) > 2 * level else ok
    # the part of each request's lateness shared by all its events (request path: client send
    # to server arrival, plus the least delivery delay): min over events of (arrival - schedule)
    shift = None
    if sched:
        e_gap, t0 = sched["gap_ms"], sched["ttft_ms"]
        shift = B.median([min(e - (t0 + i * e_gap) for i, e in enumerate(r["events_ms"]))
                          for r in steady if r["events_ms"]])
    # every content event's lateness against the programmed schedule, as the client saw it
    late = []
    if sched:
        for r in ok:
            late += [e - (sched["ttft_ms"] + i * sched["gap_ms"])  # events_ms: ms after the send
                     for i, e in enumerate(r["events_ms"] or [])]
    late.sort()
    q = lambda p: late[min(len(late) - 1, int(p * len(late)))] if late else None  # noqa: E731
    req_tok_s = [r["completion_tokens_server"] / r["e2e_ms"] * 1000.0 for r in ok
                 if r["e2e_ms"] and r["e2e_ms"] > 0 and r["completion_tokens_server"] > 0]
    return {"ttft_ms": lv["ttft_ms"]["p50"], "ttft_ms_steady": B.median([r["ttft_ms"] for r in steady]),
            "per_token_gap_ms": lv["per_token_gap_ms"]["p50"], "chunk_gap_ms": lv["chunk_gap_ms"]["p50"],
            "tpot_ms": lv["tpot_ms"]["p50"], "req_tok_s": B.median(req_tok_s),
            "agg_tok_s": lv["output_tok_s"], "request_rate": lv["request_rate"],
            "ok": lv["ok"], "errors": lv["errors"], "requests": lv["requests"],
            "ttft_p99_ms": lv["ttft_ms"]["p99"], "gap_p99_ms": lv["per_token_gap_ms"]["p99"],
            "stream_shift_ms": shift, "late_p50_ms": q(0.5), "late_p90_ms": q(0.9), "late_p99_ms": q(0.99),
            "e2e_mean_ms": B.mean([r["e2e_ms"] for r in ok])}


def aiperf_figures(out_dir):
    a = B.read_aiperf(out_dir)
    if not a:
        return None
    m = lambda k, s="p50": B.aiperf_metric(a, k, s)  # noqa: E731
    return {"ttft_ms": m("time_to_first_token"), "itl_ms": m("inter_token_latency"),
            "chunk_gap_ms": m("inter_chunk_latency"),
            "req_tok_s": m("e2e_output_token_throughput"),
            "agg_tok_s": m("output_token_throughput", "avg"),
            "request_rate": m("request_throughput", "avg"),
            "requests": m("request_count", "avg"),
            "errors": m("error_request_count", "avg") or 0,
            "ttft_p99_ms": m("time_to_first_token", "p99")}


def med_dicts(ds):
    ds = [d for d in ds if d]
    if not ds:
        return None
    keys = ds[0].keys()
    out = {}
    for k in keys:
        vals = [d.get(k) for d in ds if isinstance(d.get(k), (int, float))]
        out[k] = B.median(vals) if vals else None
    return out


# ---------------------------------------------------------------- part 1: truth


def part_truth(args, out, results):
    schedules = [{"ttft_ms": args.ttft_ms, "gap_ms": args.gap_ms, "tokens": args.tokens, "tpc": k}
                 for k in args.tpc]
    levels = args.levels
    tok_dir = None
    if not args.skip_aiperf:
        tok_dir = os.path.abspath(B.build_sp_tokenizer(B.MODEL, os.path.join(B.ROOT, "runs", "tokenizer-gemma3")))
    rows, raw = [], []
    for s in schedules:
        truth = truth_of(s)
        tag = "k%d" % s["tpc"]
        per = {("roofline", L): [] for L in levels}
        per.update({("aiperf", L): [] for L in levels})
        cpu = {("roofline", L): [] for L in levels}
        cpu.update({("aiperf", L): [] for L in levels})
        for rep in range(args.repeats):
            for L in levels:
                n_req = args.requests_c1 if L == 1 else args.requests_high
                quiet = B.wait_quiet(args.quiet_wait)
                fake = B.FakeServer(["--ttft-ms", s["ttft_ms"], "--gap-ms", s["gap_ms"], "--tokens", s["tokens"],
                                     "--tokens-per-chunk", s["tpc"]], os.path.join(out, "fake-%s-c%d-r%d.log" % (tag, L, rep)))
                d = os.path.join(out, "truth", "%s-c%d-r%d" % (tag, L, rep))
                la = B.loadavg()
                r = roofline_load(fake.url, d, L, n_req, s["tokens"])
                srv_cpu = proc_cpu(fake.p.pid)
                counters = fake.stop()
                fig = roofline_figures(d, L, s) if r["rc"] == 0 else None
                if fig and counters.get("served"):
                    fig["served_tok_s"] = counters["served"]["tok_s"]
                if fig and counters.get("late_ms"):
                    for k in ("p50", "p90", "p99"):
                        fig["server_late_%s_ms" % k] = counters["late_ms"][k]
                per[("roofline", L)].append(fig)
                cpu[("roofline", L)].append(r["cpu_s"] / n_req)
                raw.append({"client": "roofline", "schedule": s, "level": L, "rep": rep, "requests": n_req,
                            "rc": r["rc"], "wall_s": r["wall_s"], "cpu_s": r["cpu_s"], "server_cpu_s": srv_cpu,
                            "others_cpu_s": others(r, srv_cpu), "busy_before": quiet,
                            "loadavg": la, "figures": fig, "fake_counters": counters, "dir": d})
                B.eprint("roofline %s c=%d rep %d: rc %d, %.1f s, cpu %.2f s, %s" % (
                    tag, L, rep, r["rc"], r["wall_s"], r["cpu_s"], short(fig)))
                if args.skip_aiperf:
                    continue
                n_a = args.aiperf_requests_c1 if L == 1 else args.aiperf_requests_high
                quiet = B.wait_quiet(args.quiet_wait)
                fake = B.FakeServer(["--ttft-ms", s["ttft_ms"], "--gap-ms", s["gap_ms"], "--tokens", s["tokens"],
                                     "--tokens-per-chunk", s["tpc"]], os.path.join(out, "fake-aiperf-%s-c%d-r%d.log" % (tag, L, rep)))
                d = os.path.join(out, "truth", "aiperf-%s-c%d-r%d" % (tag, L, rep))
                la = B.loadavg()
                r = B.run_aiperf("http://127.0.0.1:%d" % fake.port, "fake-model", tok_dir, d, L, n_a,
                                 s["tokens"], timeout=1800)
                srv_cpu = proc_cpu(fake.p.pid)
                counters = fake.stop()
                fig = aiperf_figures(d) if r["rc"] == 0 else None
                per[("aiperf", L)].append(fig)
                cpu[("aiperf", L)].append(r["cpu_s"] / n_a)
                raw.append({"client": "aiperf", "schedule": s, "level": L, "rep": rep, "requests": n_a,
                            "rc": r["rc"], "wall_s": r["wall_s"], "cpu_s": r["cpu_s"], "loadavg": la,
                            "server_cpu_s": srv_cpu, "others_cpu_s": others(r, srv_cpu), "busy_before": quiet,
                            "figures": fig, "fake_counters": counters, "dir": d})
                B.eprint("aiperf   %s c=%d rep %d: rc %d, %.1f s, cpu %.2f s, %s" % (
                    tag, L, rep, r["rc"], r["wall_s"], r["cpu_s"], short(fig)))
        for (client, L), figs in per.items():
            if client == "aiperf" and args.skip_aiperf:
                continue
            m = med_dicts(figs)
            agg_truth = L * truth["req_tok_s"]
            checks = [("TTFT p50 ms", "ttft_ms", truth["ttft_ms"], True)]
            if client == "roofline":
                checks += [("TTFT p50 ms, after 1st wave", "ttft_ms_steady", truth["ttft_ms"], False),
                           ("  of which stream shift (all events)", "stream_shift_ms", 0.0, False),
                           ("per-token gap p50 ms", "per_token_gap_ms", truth["per_token_gap_ms"], True),
                           ("chunk gap p50 ms", "chunk_gap_ms", truth["chunk_gap_ms"], False),
                           ("TPOT p50 ms", "tpot_ms", truth["tpot_ms"], False),
                           ("event lateness p50 ms, client-observed", "late_p50_ms", 0.0, False),
                           ("  server's own chunk lateness p50 ms", "server_late_p50_ms", 0.0, False),
                           ("event lateness p90 ms, client-observed", "late_p90_ms", 0.0, False),
                           ("  server's own chunk lateness p90 ms", "server_late_p90_ms", 0.0, False),
                           ("event lateness p99 ms, client-observed", "late_p99_ms", 0.0, False),
                           ("  server's own chunk lateness p99 ms", "server_late_p99_ms", 0.0, False),
                           ("mean E2E ms (programmed: the truth's)", "e2e_mean_ms", truth["e2e_ms"], False)]
            else:
                checks += [("ITL (=TPOT) p50 ms", "itl_ms", truth["tpot_ms"], False),
                           ("inter-chunk latency p50 ms", "chunk_gap_ms", truth["chunk_gap_ms"], False)]
            checks += [("tok/s per request (n/E2E) p50", "req_tok_s", truth["req_tok_s"], True),
                       ("aggregate output tok/s", "agg_tok_s", agg_truth, True)]
            if client == "roofline":
                # the same aggregate against what the server actually served (its first request in
                # to its last stream out): the client's own error, without the server's start-up
                served = B.median([f.get("served_tok_s") for f in figs if f])
                checks += [("  server's served tok/s (its own truth)", "served_tok_s", agg_truth, False)]
                if served:
                    checks += [("aggregate output tok/s vs served", "agg_tok_s", served, False)]
            for label, key, tv, acc in checks:
                mv = m.get(key) if m else None
                is_time = key.endswith("_ms") or key == "ttft_ms_steady"
                ok = B.within(mv, tv, 0.02, 1.0 if is_time else 0.0)
                rows.append({"client": client, "k": s["tpc"], "level": L, "metric": label, "truth": tv,
                             "measured": mv, "abs_err": None if mv is None else mv - tv,
                             "rel_err_pct": None if B.rel_err(mv, tv) is None else 100 * B.rel_err(mv, tv),
                             "acceptance": acc and client == "roofline" and L in (1, 256),
                             "within_2pct_or_1ms": ok,
                             "repeats": [f.get(key) if f else None for f in figs]})
            results.setdefault("cpu_per_request_load", []).append(
                {"client": client, "k": s["tpc"], "level": L, "cpu_s_per_request_median": B.median(cpu[(client, L)]),
                 "each": cpu[(client, L)]})
    results["truth"] = {"schedules": schedules, "levels": levels, "rows": rows, "runs": raw}
    for x in raw:
        x["others_cpu_frac"] = (x["others_cpu_s"] / (x["wall_s"] * (os.cpu_count() or 1))
                                if x.get("others_cpu_s") is not None and x["wall_s"] else None)
    for c in results["cpu_per_request_load"]:
        sel = [x for x in raw if x["client"] == c["client"] and x["schedule"]["tpc"] == c["k"]
               and x["level"] == c["level"]]
        c["others_cpu_pct_median"] = B.median([100 * x["others_cpu_frac"] for x in sel
                                               if x["others_cpu_frac"] is not None])
        c["server_cpu_s_per_request_median"] = B.median([x["server_cpu_s"] / x["requests"] for x in sel
                                                         if x.get("server_cpu_s") is not None])
    print("\n== 1. Measured vs programmed truth (medians of %d repeats; acceptance rows marked *) ==" % args.repeats)
    print(B.fmt_table(["client", "k", "c", "metric", "truth", "measured", "abs err", "rel err %", "ok", "acc"],
                      [[r["client"], r["k"], r["level"], r["metric"], r["truth"], r["measured"], r["abs_err"],
                        r["rel_err_pct"], r["within_2pct_or_1ms"], "*" if r["acceptance"] else ""] for r in rows]))
    print("\nclient CPU seconds per request on these loads (median of repeats; AIPerf's includes its start-up),"
          "\nthe fake server's, and the share of the 2 cores other processes used during the runs:")
    print(B.fmt_table(["client", "k", "c", "client CPU s/req", "server CPU s/req", "others' CPU %"],
                      [[c["client"], c["k"], c["level"], c["cpu_s_per_request_median"],
                        c.get("server_cpu_s_per_request_median"), c.get("others_cpu_pct_median")]
                       for c in results["cpu_per_request_load"]]))


def short(fig):
    if not fig:
        return "no figures"
    return "ttft %.2f ms, gap %s, agg %.0f tok/s" % (fig.get("ttft_ms") or -1,
                                                     B.fmt(fig.get("per_token_gap_ms", fig.get("itl_ms"))),
                                                     fig.get("agg_tok_s") or -1)


def others(r, server_cpu):
    """CPU seconds other processes (not the client, not the server) used during a run."""
    return r["machine_busy_s"] - r["cpu_s"] - (server_cpu or 0)


def proc_cpu(pid):
    try:
        with open("/proc/%d/stat" % pid) as f:
            fields = f.read().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    except OSError:
        return None


# ---------------------------------------------------------------- part 2: faults


def part_faults(args, out, results):
    rows, raw = [], []
    for kind in args.faults:
        d = os.path.join(out, "faults", kind)
        os.makedirs(d, exist_ok=True)
        fake = B.FakeServer(["--ttft-ms", 20, "--gap-ms", 5, "--tokens", args.fault_tokens, "--fault", kind,
                             "--fault-rate", args.fault_rate, "--fault-after", 2, "--stall-ms", 5000,
                             "--seed", 7], os.path.join(d, "fake.log"))
        run_file = os.path.join(d, "run.json")
        B.write_json(run_file, {"backends": [{"name": "fake", "uri": "openai:" + fake.url,
                                              "stall_s": args.stall_s, "timeout_s": 30}]})
        bd = os.path.join(d, "bench")
        r = roofline_load(None, bd, args.fault_level, args.fault_requests, args.fault_tokens, run_file=run_file)
        counters = fake.stop()
        summary, recs = B.read_run(bd) if r["rc"] == 0 else ({}, [])
        lv = summary.get("load", {}).get("fake", {}).get("levels", [{}])[0]
        want = FAULT_CLASS[kind]
        by_class = {}
        for x in recs:
            by_class[x["error_class"]] = by_class.get(x["error_class"], 0) + 1
        injected = counters.get("faults_by_kind", {}).get(kind, 0)
        n = len(recs)
        if want == "ok":
            # transport-level success: every record ok; the faulted ones end with tool_calls
            tool_fin = sum(1 for x in recs if x["finish_reason"] == "tool_calls")
            right = tool_fin
            wrong = n - by_class.get("ok", 0)
        else:
            right = by_class.get(want, 0)
            wrong = n - by_class.get("ok", 0) - right
        resends = sum(x.get("resends", 0) for x in recs)
        if kind == "refuse":
            # a request refused on a reused keep-alive connection is resent by libcurl on a new
            # one (as for a server closing an idle connection): the record counts it in resends
            right += resends
        extra = {}
        if kind == "stall":
            dur = [x["t_done_ms"] - x["t_sent_ms"] for x in recs if x["error_class"] == "stall"]
            extra["stall_detect_s"] = [round(v / 1000.0, 3) for v in sorted(dur)][:5]
            extra["stall_detect_s_median"] = B.median(dur) / 1000.0 if dur else None
        if kind in ("500", "429"):
            extra["http_status"] = sorted({x["http_status"] for x in recs if x["status"] == "error"})
        passed = (r["rc"] == 0 and n == args.fault_requests and summary.get("interrupted") is False
                  and right == injected and wrong == 0 and injected > 0
                  and lv.get("ok", -1) + lv.get("errors", -1) == args.fault_requests)
        row = {"fault": kind, "expected_class": (want if want != "ok" else "ok (finish tool_calls)") +
               (" or resent" if kind == "refuse" else ""), "resends": resends,
               "injected_by_server": injected, "records": n, "requests": args.fault_requests,
               "right_class": right, "other_errors": wrong, "by_class": by_class,
               "summary_errors_by_class": lv.get("errors_by_class"), "interrupted": summary.get("interrupted"),
               "bench_rc": r["rc"], "pass": passed, "fake_counters": counters, **extra}
        rows.append(row)
        B.eprint("fault %-16s injected %d, records %d, right %d, other %d, %s" % (
            kind, injected, n, right, wrong, by_class))
    # the tool faults where they matter: the agent suite grades the call
    agent_rows = []
    for kind in [k for k in args.faults if k.startswith("wrong_tool")]:
        d = os.path.join(out, "faults", kind + "-agent")
        os.makedirs(d, exist_ok=True)
        fake = B.FakeServer(["--ttft-ms", 5, "--gap-ms", 1, "--fault", kind, "--fault-rate", 1, "--seed", 7],
                            os.path.join(d, "fake.log"))
        cmd = [B.ROOFLINE, "bench", "--backend", "fake=openai:" + fake.url, "--suites", "agent",
               "--agent-runs", "2", "--out", os.path.join(d, "bench"), "--no-progress"]
        r = B.run_measured(cmd, log_path=os.path.join(d, "bench.log"), timeout=600)
        counters = fake.stop()
        summary, recs = B.read_run(os.path.join(d, "bench")) if r["rc"] == 0 else ({}, [])
        ag = summary.get("agent", {}).get("fake", {})
        det = ag.get("details", [])
        calls = [c for x in recs for c in x.get("tool_calls", [])]
        passed = r["rc"] == 0 and len(det) == 2 and all(not x.get("ok") for x in det) and \
            counters.get("faults_by_kind", {}).get(kind, 0) == len(recs)
        agent_rows.append({"fault": kind, "runs": len(det), "runs_ok": ag.get("ok"),
                           "requests": len(recs), "injected_by_server": counters.get("faults_by_kind", {}).get(kind, 0),
                           "reasons": [x.get("reason") for x in det], "lines": ag.get("lines"),
                           "sample_call": calls[0] if calls else None, "pass": passed})
        B.eprint("agent %s: %s" % (kind, ag.get("lines")))
    results["faults"] = {"rate": args.fault_rate, "level": args.fault_level, "requests": args.fault_requests,
                         "stall_s": args.stall_s, "load": rows, "agent": agent_rows}
    print("\n== 2. Faults (rate %.2f, load c=%d, %d requests, stall_s %.2f) ==" % (
        args.fault_rate, args.fault_level, args.fault_requests, args.stall_s))
    print(B.fmt_table(["fault", "expected class", "injected", "right class", "of which resent", "other errors",
                       "records", "run finished", "pass"],
                      [[r["fault"], r["expected_class"], r["injected_by_server"], r["right_class"], r["resends"],
                        r["other_errors"], "%d/%d" % (r["records"], r["requests"]),
                        r["bench_rc"] == 0 and r["interrupted"] is False, r["pass"]] for r in rows]))
    for r in rows:
        if "stall_detect_s_median" in r:
            print("stall: detected after %.2f s (median; stall_s %.2f, first: %s)" % (
                r["stall_detect_s_median"] or -1, args.stall_s, r["stall_detect_s"]))
    if agent_rows:
        print(B.fmt_table(["agent fault", "runs", "runs ok", "requests", "injected", "pass", "reason (run 1)"],
                          [[a["fault"], a["runs"], a["runs_ok"], a["requests"], a["injected_by_server"], a["pass"],
                            (a["reasons"] or [""])[0]] for a in agent_rows]))


# ---------------------------------------------------------------- part 3: CPU and request rate


def part_cpu(args, out, results):
    tok_dir = None if args.skip_aiperf else os.path.abspath(
        B.build_sp_tokenizer(B.MODEL, os.path.join(B.ROOT, "runs", "tokenizer-gemma3")))
    c = args.cpu_concurrency
    runs = []
    for rep in range(args.repeats):
        for client, sizes in (("roofline", args.cpu_requests), ("aiperf", args.aiperf_cpu_requests)):
            if client == "aiperf" and args.skip_aiperf:
                continue
            for n in sizes:
                quiet = B.wait_quiet(args.quiet_wait)
                fake = B.FakeServer(["--ttft-ms", 0, "--gap-ms", 0, "--tokens", 1],
                                    os.path.join(out, "fake-cpu-%s-%d-r%d.log" % (client, n, rep)))
                d = os.path.join(out, "cpu", "%s-n%d-r%d" % (client, n, rep))
                la = B.loadavg()
                if client == "roofline":
                    r = roofline_load(fake.url, d, c, n, 1)
                    rate = None
                    if r["rc"] == 0:
                        summary, _ = B.read_run(d)
                        rate = summary["load"]["fake"]["levels"][0]["request_rate"]
                else:
                    r = B.run_aiperf("http://127.0.0.1:%d" % fake.port, "fake-model", tok_dir, d, c, n, 1,
                                     timeout=1800)
                    a = B.read_aiperf(d) if r["rc"] == 0 else None
                    rate = B.aiperf_metric(a, "request_throughput", "avg")
                srv = proc_cpu(fake.p.pid)
                counters = fake.stop()
                runs.append({"client": client, "requests": n, "rep": rep, "rc": r["rc"], "wall_s": r["wall_s"],
                             "cpu_s": r["cpu_s"], "user_s": r["user_s"], "sys_s": r["sys_s"],
                             "request_rate": rate, "server_cpu_s": srv, "loadavg": la,
                             "others_cpu_s": others(r, srv), "busy_before": quiet,
                             "chat_requests": counters.get("chat"), "dir": d})
                B.eprint("cpu %-8s n=%d rep %d: rc %d, wall %.2f s, cpu %.3f s, %.1f req/s, server cpu %s" % (
                    client, n, rep, r["rc"], r["wall_s"], r["cpu_s"], rate or -1, B.fmt(srv)))
    summ = {}
    for client, sizes in (("roofline", args.cpu_requests), ("aiperf", args.aiperf_cpu_requests)):
        rs = [x for x in runs if x["client"] == client and x["rc"] == 0]
        if not rs:
            continue
        big, small = max(sizes), min(sizes)
        total = B.median([x["cpu_s"] / x["requests"] for x in rs if x["requests"] == big])
        marg = []
        for rep in range(args.repeats):
            b = [x for x in rs if x["rep"] == rep and x["requests"] == big]
            s = [x for x in rs if x["rep"] == rep and x["requests"] == small]
            if b and s and big > small:
                marg.append((b[0]["cpu_s"] - s[0]["cpu_s"]) / (big - small))
        summ[client] = {"cpu_s_per_request_total": total, "cpu_s_per_request_marginal": B.median(marg),
                        "marginal_each": marg,
                        "requests_per_s": B.median([x["request_rate"] for x in rs if x["requests"] == big]),
                        "requests_big": big, "requests_small": small}
    targets = {}
    if "roofline" in summ and "aiperf" in summ:
        R, A = summ["roofline"], summ["aiperf"]
        for k in ("total", "marginal"):
            rv, av = R["cpu_s_per_request_" + k], A["cpu_s_per_request_" + k]
            targets["cpu_ratio_aiperf_over_roofline_" + k] = av / rv if rv and av else None
        targets["rps_ratio_roofline_over_aiperf"] = (R["requests_per_s"] / A["requests_per_s"]
                                                     if R["requests_per_s"] and A["requests_per_s"] else None)
        targets["cpu_target_met_total"] = (targets["cpu_ratio_aiperf_over_roofline_total"] or 0) >= 20
        targets["cpu_target_met_marginal"] = (targets["cpu_ratio_aiperf_over_roofline_marginal"] or 0) >= 20
        targets["rps_target_met"] = (targets["rps_ratio_roofline_over_aiperf"] or 0) >= 10
    results["cpu"] = {"concurrency": c, "runs": runs, "summary": summ, "targets": targets}
    print("\n== 3. Client CPU and request rate at zero latency (concurrency %d; medians of %d repeats) ==" % (
        c, args.repeats))
    print(B.fmt_table(["client", "requests", "CPU s/req (total)", "CPU s/req (marginal)", "req/s"],
                      [[k, "%d (and %d)" % (v["requests_big"], v["requests_small"]),
                        v["cpu_s_per_request_total"], v["cpu_s_per_request_marginal"], v["requests_per_s"]]
                       for k, v in summ.items()]))
    for k, v in targets.items():
        print("  %s: %s" % (k, B.fmt(v)))


# ---------------------------------------------------------------- main


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", help="output directory (default runs/fake_truth-<UTC time>)")
    ap.add_argument("--only", choices=["truth", "faults", "cpu"], action="append",
                    help="run only these parts (repeatable)")
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--ttft-ms", type=float, default=50)
    ap.add_argument("--gap-ms", type=float, default=10)
    ap.add_argument("--tokens", type=int, default=64)
    ap.add_argument("--tpc", default="1,4", help="tokens per chunk, comma list")
    ap.add_argument("--levels", default="1,64,256", help="concurrency levels, comma list")
    ap.add_argument("--requests-c1", type=int, default=64, help="roofline requests at concurrency 1")
    ap.add_argument("--requests-high", type=int, default=4096, help="roofline requests at higher levels")
    ap.add_argument("--aiperf-requests-c1", type=int, default=32)
    ap.add_argument("--aiperf-requests-high", type=int, default=512)
    ap.add_argument("--skip-aiperf", action="store_true")
    ap.add_argument("--roofline", default=B.ROOFLINE,
                    help="the roofline binary (default build/roofline; a copy keeps a rebuild from "
                         "changing it mid-run)")
    ap.add_argument("--quiet-wait", type=float, default=60,
                    help="before each run, wait at most this long for other processes to go quiet")
    ap.add_argument("--faults", default="refuse,500,429,stall,truncate,invalid_json,error_event,"
                                        "wrong_tool_call,wrong_tool_name")
    ap.add_argument("--fault-rate", type=float, default=0.3)
    ap.add_argument("--fault-level", type=int, default=4)
    ap.add_argument("--fault-requests", type=int, default=60)
    ap.add_argument("--fault-tokens", type=int, default=16)
    ap.add_argument("--stall-s", type=float, default=0.5, help="the backend's stall_s (run file)")
    ap.add_argument("--cpu-concurrency", type=int, default=32)
    ap.add_argument("--cpu-requests", default="4000,16000", help="roofline: short,long request counts")
    ap.add_argument("--aiperf-cpu-requests", default="500,2000", help="AIPerf: short,long request counts")
    args = ap.parse_args()
    B.ROOFLINE = os.path.abspath(args.roofline)
    args.tpc = [int(x) for x in args.tpc.split(",")]
    args.levels = [int(x) for x in args.levels.split(",")]
    args.faults = [x for x in args.faults.split(",") if x]
    args.cpu_requests = [int(x) for x in args.cpu_requests.split(",")]
    args.aiperf_cpu_requests = [int(x) for x in args.aiperf_cpu_requests.split(",")]
    parts = args.only or ["truth", "faults", "cpu"]
    out = args.out or os.path.join(B.ROOT, "runs", "fake_truth-" + time.strftime("%Y%m%d-%H%M%S", time.gmtime()))
    os.makedirs(out, exist_ok=True)
    if not os.path.exists(B.ROOFLINE):
        sys.exit("build first: ./scripts/build.sh")
    results = {"date": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()), "args": vars(args),
               "nproc": os.cpu_count(), "loadavg_start": B.loadavg(), "out": out}
    if not args.skip_aiperf:
        results["aiperf_version"] = B.aiperf_version()
    t0 = time.monotonic()
    try:
        if "truth" in parts:
            part_truth(args, out, results)
            B.write_json(os.path.join(out, "results.json"), results)
        if "faults" in parts:
            part_faults(args, out, results)
            B.write_json(os.path.join(out, "results.json"), results)
        if "cpu" in parts:
            part_cpu(args, out, results)
    finally:
        B.finish_results(out, results, t0)


if __name__ == "__main__":
    main()
