#!/usr/bin/env python3
"""tools/peers/accuracy_vs_llama_server.py: the accuracy and agent suites on roofline's engine and on
llama.cpp's server, same model file, same questions, one bench run per model (dev tool, not a test).

For each model: starts llama-server (tools/peers/build_llama_cpp.sh's build) on the file with
`--jinja` (the file's own chat template, as a user of llama-server gets it), -t THREADS, one slot,
waits for /health, then runs

    roofline bench --backend roofline=local:NAME --backend llama=openai:http://127.0.0.1:PORT/v1
                   --suites accuracy,agent --no-membw --out DIR

(the bench sends both backends the same requests at temperature 0, one backend after the
other). From the run's records.jsonl it prints, per model: each backend's score and category
scores, on how many of the 40 questions the two extracted the same answer, on how many the
replies are identical character for character, the items that differ, and the agent runs (form
of the call, filter, quoted number). Writes DIR/compare.json per model and prints a table.

Usage: python3 tools/peers/accuracy_vs_llama_server.py [-m NAME ...] [-t THREADS] [--self ARGS] [--out DIR]
--self ARGS puts a second llama-server with ARGS (e.g. '-fa off') in roofline's place: how far
llama.cpp agrees with itself under an implementation change on the same questions.
Names are the embedded models' (`roofline models`); default qwen2.5-coder-0.5b and smollm2-135m.
"""
import argparse, json, os, socket, subprocess, sys, time, urllib.request

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    p = s.getsockname()[1]
    s.close()
    return p


def model_path(name):
    with open(os.path.join(ROOT, "data", "models.json")) as f:
        models = json.load(f)
    models = models.get("models", models)
    for m in models:
        if m.get("name") == name:
            return os.path.join(ROOT, "models", m["file"])
    sys.exit("unknown model name %r (see roofline models)" % name)


def wait_health(port, proc, secs=120):
    t0 = time.time()
    while time.time() - t0 < secs:
        if proc.poll() is not None:
            sys.exit("llama-server exited with %d" % proc.returncode)
        try:
            with urllib.request.urlopen("http://127.0.0.1:%d/health" % port, timeout=2) as r:
                if r.status == 200:
                    return
        except Exception:
            pass
        time.sleep(0.5)
    sys.exit("llama-server did not become healthy in %d s" % secs)


def compare(run_dir, A):
    acc, agent = {}, {}
    with open(os.path.join(run_dir, "records.jsonl")) as f:
        for line in f:
            r = json.loads(line)
            if r.get("warmup") or "suite" not in r:
                continue
            if r["suite"] == "accuracy":
                acc.setdefault(r["backend"], {})[r["item"]] = r
            elif r["suite"] == "agent":
                agent.setdefault(r["backend"], []).append(r)
    a, b = acc.get(A, {}), acc.get("llama", {})
    items = sorted(set(a) | set(b))
    same_answer = [i for i in items if i in a and i in b and a[i].get("extracted") == b[i].get("extracted")]
    same_reply = [i for i in items if i in a and i in b and a[i].get("reply") == b[i].get("reply")]

    def score(recs):
        cats = {}
        for r in recs.values():
            c = cats.setdefault(r.get("category", "?"), [0, 0])
            c[0] += bool(r.get("correct"))
            c[1] += 1
        return {"correct": sum(v[0] for v in cats.values()), "of": len(recs),
                "categories": {k: "%d/%d" % tuple(v) for k, v in sorted(cats.items())}}

    agents = {}
    for be, recs in agent.items():
        agents[be] = [{"item": r.get("item"), "call_form": r.get("call_form"),
                       "calls": ["%s(%s)" % (c.get("name"), c.get("arguments")) for c in r.get("tool_calls", [])],
                       "reply": (r.get("reply") or "")[:120]} for r in recs]
    return {A: score(a), "llama": score(b), "items": len(items),
            "same_answer": len(same_answer), "same_reply": len(same_reply),
            "answer_differs": [{"item": i, A: a.get(i, {}).get("extracted"),
                                "llama": b.get(i, {}).get("extracted"),
                                A + "_reply": a.get(i, {}).get("reply"),
                                "llama_reply": b.get(i, {}).get("reply")}
                               for i in items if i not in same_answer],
            "agent": agents}


def start_server(bindir, path, threads, extra, log_path, servers):
    port = free_port()
    log = open(log_path, "w")
    srv = subprocess.Popen([os.path.join(bindir, "llama-server"), "-m", path, "--jinja", "-t", str(threads),
                            "-np", "1", "-c", "4096", "--host", "127.0.0.1", "--port", str(port)] + extra,
                           stdout=log, stderr=subprocess.STDOUT)
    servers.append((srv, log))
    wait_health(port, srv)
    return port


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("-m", "--model", action="append")
    ap.add_argument("-t", "--threads", type=int, default=2)
    ap.add_argument("--roofline", default=os.path.join(ROOT, "build", "roofline"))
    ap.add_argument("--self", metavar="ARGS", help="instead of roofline's engine, a second llama-server "
                    "with these extra arguments (e.g. '-fa off'): llama.cpp's agreement with itself")
    ap.add_argument("--out", default=os.path.join(ROOT, "runs", "accuracy_vs_llama_server-" +
                                                  time.strftime("%Y%m%d-%H%M%S", time.gmtime())))
    args = ap.parse_args()
    A = "self" if args.self is not None else "roofline"
    names = args.model or ["qwen2.5-coder-0.5b", "smollm2-135m"]
    bindir = subprocess.run([os.path.join(ROOT, "tools", "peers", "build_llama_cpp.sh")], check=True,
                            stdout=subprocess.PIPE).stdout.decode().strip().splitlines()[-1]
    os.makedirs(args.out, exist_ok=True)
    results = {}
    for name in names:
        path = model_path(name)
        servers = []
        try:
            port = start_server(bindir, path, args.threads, [], os.path.join(args.out, "llama-server-%s.log" % name), servers)
            if args.self is not None:
                port2 = start_server(bindir, path, args.threads, args.self.split(),
                                     os.path.join(args.out, "llama-server-self-%s.log" % name), servers)
                first = "self=openai:http://127.0.0.1:%d/v1" % port2
            else:
                first = "roofline=local:" + name
            run_dir = os.path.join(args.out, name)
            cmd = [args.roofline, "bench", "--backend", first, "--backend",
                   "llama=openai:http://127.0.0.1:%d/v1" % port, "--suites", "accuracy,agent",
                   "--no-membw", "--no-progress", "--threads", str(args.threads), "--out", run_dir]
            print("+", " ".join(cmd), flush=True)
            rc = subprocess.run(cmd, stdout=subprocess.DEVNULL).returncode
            if rc not in (0, 3):
                sys.exit("roofline bench exited %d" % rc)
        finally:
            for srv, log in servers:
                srv.terminate()
                srv.wait()
                log.close()
        res = compare(run_dir, A)
        res["bench_exit"] = rc
        with open(os.path.join(run_dir, "compare.json"), "w") as f:
            json.dump(res, f, indent=1)
        results[name] = res
    label = "llama-server " + args.self if args.self is not None else "roofline"
    print("\n| model | %s | llama-server | same extracted answer | identical replies |" % label)
    print("|---|---|---|---|---|")
    for name, r in results.items():
        print("| %s | %d/%d (%s) | %d/%d (%s) | %d/%d | %d/%d |" % (
            name, r[A]["correct"], r[A]["of"], ", ".join("%s %s" % kv for kv in r[A]["categories"].items()),
            r["llama"]["correct"], r["llama"]["of"],
            ", ".join("%s %s" % kv for kv in r["llama"]["categories"].items()),
            r["same_answer"], r["items"], r["same_reply"], r["items"]))
    for name, r in results.items():
        for d in r["answer_differs"]:
            print("%s %s: %s %r (%r) | llama %r (%r)" % (
                name, d["item"], A, d[A], (d[A + "_reply"] or "")[:60], d["llama"], (d["llama_reply"] or "")[:60]))
        for be, runs in r["agent"].items():
            for x in runs:
                print("%s agent %s %s: form %s calls %s reply %r" % (
                    name, be, x["item"], x["call_form"], x["calls"], x["reply"]))
    with open(os.path.join(args.out, "results.json"), "w") as f:
        json.dump(results, f, indent=1)
    print("\nwrote", os.path.join(args.out, "results.json"))


if __name__ == "__main__":
    main()
