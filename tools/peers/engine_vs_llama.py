#!/usr/bin/env python3
"""engine_vs_llama.py: roofline's engine against llama.cpp's llama-bench, side by side.

Builds llama.cpp from the llama-cpp-python source distribution (tools/peers/build_llama_cpp.sh, into
the git-ignored .peers/), then, in one invocation and interleaved (roofline, llama-bench,
roofline, ...), on the same GGUF with the same thread count:
  - decode tok/s: llama-bench tg128 and `roofline speed` tg128 (128 single-token steps from an
    empty cache, full logits, no sampling);
  - prefill tok/s: pp512 on both;
  - roofline's batched decode aggregate tok/s at B = 1, 4, 16;
then prints medians, the ratios, roofline's efficiency against the roofline ceiling (read
bandwidth from `roofline membw` / bytes per decoded token from the model's tensor table), and the
peak RSS of each process (from wait4), and writes everything as JSON.

Usage: python3 tools/peers/engine_vs_llama.py [-m MODEL ...] [-t THREADS] [-r REPS] [--out FILE]
Medians of REPS (default 5) runs of each; every run of each tool includes its own warm-up.
-m may be given several times (e.g. the Gemma 3, Qwen2.5-Coder and SmolLM2 files): each model is
measured in turn, its roofline and llama-bench runs interleaved, against the same membw figure;
the JSON is then a list with one object per model, and a summary table ends the output.
"""
import argparse, json, os, platform, statistics, subprocess, sys, time

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def run(cmd, env=None):
    """Runs cmd, returns (stdout, peak RSS bytes of the child, seconds)."""
    t0 = time.time()
    p = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env)
    out = p.stdout.read()
    err = p.stderr.read()
    _, status, ru = os.wait4(p.pid, 0)
    if os.waitstatus_to_exitcode(status) != 0:
        sys.exit("failed: %s\n%s" % (" ".join(cmd), err.decode(errors="replace")[-2000:]))
    return out.decode(), ru.ru_maxrss * 1024, time.time() - t0


def cpu_model():
    try:
        for line in open("/proc/cpuinfo"):
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor()


def cpu_flags():
    try:
        for line in open("/proc/cpuinfo"):
            if line.startswith("flags"):
                f = line.split(":", 1)[1].split()
                return [x for x in ("avx2", "fma", "f16c", "avx512f", "avx512bw", "avx512_vnni") if x in f]
    except OSError:
        pass
    return []


def measure(args, model, membw, llama_bench):
    """Interleaved runs of `roofline speed` and llama-bench on one model; prints and returns the
    result object."""
    t = str(args.threads)
    rf_runs, ll_runs = [], []
    for rep in range(args.reps):
        out, rss, secs = run([args.roofline, "speed", "-m", model, "-t", t, "-p", "512", "-n", "128",
                              "-b", "1,4,16", "-r", "1", "--json"])
        r = json.loads(out)
        r["process_peak_rss_bytes"] = rss
        rf_runs.append(r)
        out, rss, secs = run([llama_bench, "-m", model, "-t", t, "-p", "512", "-n", "128", "-r", "1",
                              "-o", "json"])
        tests = json.loads(out)
        row = {"process_peak_rss_bytes": rss}
        for x in tests:
            key = "pp" if x.get("n_prompt", 0) and not x.get("n_gen", 0) else "tg"
            row[key] = x["avg_ts"]
            row["build_commit"] = x.get("build_commit")
        ll_runs.append(row)
        print("%s rep %d/%d: roofline pp512 %.1f tg128 %.1f | llama.cpp pp512 %.1f tg128 %.1f" % (
            os.path.basename(model), rep + 1, args.reps, r["pp"]["median"], r["tg"]["median"], row["pp"],
            row["tg"]), flush=True)

    # a single-stream decode run alone, for its peak RSS (model mapped, one sequence's KV)
    out, rss_decode, _ = run([args.roofline, "speed", "-m", model, "-t", t, "-p", "0", "-n", "128",
                              "-b", "1", "-r", "1", "--json"])
    decode_only = json.loads(out)

    med = statistics.median
    rf_pp = med([r["pp"]["median"] for r in rf_runs])
    rf_tg = med([r["tg"]["median"] for r in rf_runs])
    rf_b = {x["b"]: med([y["median"] for r in rf_runs for y in r["batched"] if y["b"] == x["b"]])
            for x in rf_runs[0]["batched"]}
    ll_pp = med([r["pp"] for r in ll_runs])
    ll_tg = med([r["tg"] for r in ll_runs])
    bpt = rf_runs[0]["bytes_per_token"]
    ceiling = membw["median_gbs"] * 1e9 / bpt
    rss_budget = decode_only["model_file_bytes"] + decode_only["kv_bytes"] + 64 * 2**20
    result = {
        "date": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
        "machine": {"cpu": cpu_model(), "flags": cpu_flags(), "nproc": os.cpu_count()},
        "model": model, "threads": args.threads, "reps": args.reps,
        "kernels": rf_runs[0]["kernels"],
        "llama_cpp_build": ll_runs[0].get("build_commit"),
        "membw": membw,
        "bytes_per_token": bpt,
        "roofline_ceiling_tok_s": ceiling,
        "roofline": {"pp512": rf_pp, "tg128": rf_tg, "batched": rf_b, "runs": rf_runs},
        "llama_cpp": {"pp512": ll_pp, "tg128": ll_tg, "runs": ll_runs},
        "ratios": {"tg128": rf_tg / ll_tg, "pp512": rf_pp / ll_pp,
                   "batched_16_over_1": rf_b.get(16, 0) / rf_b[1] if rf_b.get(1) else None},
        "efficiency": {"roofline_tg128": rf_tg / ceiling, "llama_cpp_tg128": ll_tg / ceiling},
        "rss": {"roofline_decode_peak_bytes": rss_decode,
                "roofline_decode_budget_bytes": rss_budget,
                "model_file_bytes": decode_only["model_file_bytes"],
                "kv_bytes": decode_only["kv_bytes"],
                "roofline_speed_run_peak_bytes": med([r["process_peak_rss_bytes"] for r in rf_runs]),
                "llama_bench_peak_bytes": med([r["process_peak_rss_bytes"] for r in ll_runs])},
    }

    print()
    print("model %s" % model)
    print("machine: %s (%s), %d threads, roofline kernels %s, llama.cpp %s" % (
        result["machine"]["cpu"], " ".join(result["machine"]["flags"]), args.threads,
        result["kernels"], result["llama_cpp_build"]))
    print("read bandwidth %.2f GB/s (roofline membw), bytes per token %.1f MB -> ceiling %.1f tok/s" % (
        membw["median_gbs"], bpt / 1e6, ceiling))
    print("%-22s %12s %12s %8s" % ("medians of %d" % args.reps, "roofline", "llama.cpp", "ratio"))
    print("%-22s %12.1f %12.1f %7.2fx" % ("decode tg128 tok/s", rf_tg, ll_tg, rf_tg / ll_tg))
    print("%-22s %12.1f %12.1f %7.2fx" % ("prefill pp512 tok/s", rf_pp, ll_pp, rf_pp / ll_pp))
    for b in sorted(rf_b):
        print("%-22s %12.1f" % ("batched B=%d tok/s" % b, rf_b[b]))
    if rf_b.get(16) and rf_b.get(1):
        print("batched B=16 / B=1: %.2fx" % (rf_b[16] / rf_b[1]))
    print("efficiency vs ceiling: roofline %.1f%%, llama.cpp %.1f%%" % (
        100 * rf_tg / ceiling, 100 * ll_tg / ceiling))
    print("peak RSS decoding: %.1f MB (budget file %.1f + KV %.1f + 64 MB = %.1f MB); llama-bench %.1f MB" % (
        rss_decode / 2**20, decode_only["model_file_bytes"] / 2**20, decode_only["kv_bytes"] / 2**20,
        rss_budget / 2**20, result["rss"]["llama_bench_peak_bytes"] / 2**20))
    return result


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("-m", "--model", action="append",
                    help="GGUF file; repeat for several (default: the embedded Gemma 3 model)")
    ap.add_argument("-t", "--threads", type=int, default=2)
    ap.add_argument("-r", "--reps", type=int, default=5)
    ap.add_argument("--roofline", default=os.path.join(ROOT, "build", "roofline"))
    ap.add_argument("--out", default=os.path.join(ROOT, "runs", "engine_vs_llama.json"))
    args = ap.parse_args()
    models = args.model or [os.path.join(ROOT, "models", "gemma-3-270m-q4_k_m.gguf")]
    if args.reps < 1:
        sys.exit("--reps must be >= 1")
    if not os.path.exists(args.roofline):
        subprocess.run([os.path.join(ROOT, "scripts", "build.sh")], check=True)
    bindir = subprocess.run([os.path.join(ROOT, "tools", "peers", "build_llama_cpp.sh")], check=True,
                            stdout=subprocess.PIPE).stdout.decode().strip().splitlines()[-1]
    llama_bench = os.path.join(bindir, "llama-bench")

    membw, _, _ = run([args.roofline, "membw", "-t", str(args.threads), "--json"])
    membw = json.loads(membw)

    results = [measure(args, m, membw, llama_bench) for m in models]
    os.makedirs(os.path.dirname(os.path.abspath(args.out)), exist_ok=True)
    with open(args.out, "w") as f:
        json.dump(results[0] if len(results) == 1 else results, f, indent=2)
    if len(results) > 1:
        print()
        print("%-40s %9s %9s %9s %9s" % ("summary (medians)", "tg ratio", "pp ratio", "B16/B1", "ceiling"))
        for r in results:
            print("%-40s %8.2fx %8.2fx %8.2fx %8.1f%%" % (
                os.path.basename(r["model"]), r["ratios"]["tg128"], r["ratios"]["pp512"],
                r["ratios"]["batched_16_over_1"] or 0, 100 * r["efficiency"]["roofline_tg128"]))
    print("written: %s" % args.out)


if __name__ == "__main__":
    main()
