"""tools/benchlib.py: helpers shared by tools/stress/fake_truth.py and tools/peers/vs_llama_server.py (dev only).

- run_measured(): runs a command as a child, returns its exit status, wall time and CPU seconds
  from os.wait4's rusage (user + system of the child and of every descendant it reaped, which is
  how AIPerf's worker processes are counted).
- FakeServer / LlamaServer: start `roofline fake-backend` or llama-server on 127.0.0.1, wait until
  they answer, stop them (SIGTERM) and keep their output (the fake's counters).
- build_sp_tokenizer(): a SentencePiece tokenizer folder built from a GGUF vocabulary, so AIPerf
  runs offline (bench-facts.md, "Running the field's clients on these machines").
- run_aiperf() / read_aiperf(): AIPerf's `profile` against an OpenAI-compatible server, and the
  figures of its JSON export (profile_export_aiperf.json) and per-request export
  (profile_export.jsonl).
- rel_err(), fmt_table(): error arithmetic and a plain text table.

AIPerf lives in a virtual environment (default .peers/aiperf-venv, git-ignored), created with
  python3 -m venv .peers/aiperf-venv && .peers/aiperf-venv/bin/pip install aiperf==0.13.0 sentencepiece gguf
"""

import json
import os
import re
import shutil
import signal
import subprocess
import sys
import time
import urllib.request

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
ROOFLINE = os.path.join(ROOT, "build", "roofline")
MODEL = os.path.join(ROOT, "models", "gemma-3-270m-q4_k_m.gguf")
AIPERF_VENV = os.path.join(ROOT, ".peers", "aiperf-venv")


# ---------------------------------------------------------------- processes


def machine_busy_s():
    """CPU seconds all processes have used since boot (from /proc/stat, every CPU)."""
    with open("/proc/stat") as f:
        v = [int(x) for x in f.readline().split()[1:9]]
    user, nice, system, idle, iowait, irq, softirq, steal = v
    return (user + nice + system + irq + softirq + steal) / os.sysconf("SC_CLK_TCK")


def wait_quiet(max_wait_s=60.0, threshold=0.3, window_s=2.0):
    """The machine is shared: waits (at most max_wait_s) until the CPU busy fraction over a window
    (all cores; nothing of ours should be running) is below threshold. Returns the last fraction."""
    ncpu = os.cpu_count() or 1
    t_end = time.monotonic() + max_wait_s
    frac = None
    while True:
        b0, t0 = machine_busy_s(), time.monotonic()
        time.sleep(window_s)
        frac = (machine_busy_s() - b0) / ((time.monotonic() - t0) * ncpu)
        if frac < threshold or time.monotonic() >= t_end:
            break
        eprint("  (machine busy: %.0f%% of %d cores used by others; waiting)" % (100 * frac, ncpu))
    return frac


# When set (e.g. "1"), measured client processes run pinned to these CPUs (taskset -c).
CLIENT_CPUS = None


def run_measured(cmd, log_path=None, env=None, timeout=None, cwd=None):
    """Runs cmd (a list) to completion. Returns dict(rc, wall_s, cpu_s, user_s, sys_s, maxrss_kb,
    machine_busy_s). CPU comes from os.wait4 on the child: its own time plus that of its reaped
    descendants; machine_busy_s is what every process on the machine used meanwhile."""
    if CLIENT_CPUS:
        cmd = ["taskset", "-c", CLIENT_CPUS] + list(cmd)  # exec's cmd: wait4 still sees it
    out = open(log_path, "w") if log_path else subprocess.DEVNULL
    m0 = machine_busy_s()
    t0 = time.monotonic()
    p = subprocess.Popen(cmd, stdout=out, stderr=subprocess.STDOUT, env=env, cwd=cwd,
                         start_new_session=True)
    deadline = t0 + timeout if timeout else None
    while True:
        pid, status, ru = os.wait4(p.pid, os.WNOHANG)
        if pid == p.pid:
            break
        if deadline and time.monotonic() > deadline:
            os.killpg(p.pid, signal.SIGTERM)
            time.sleep(2)
            try:
                os.killpg(p.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            pid, status, ru = os.wait4(p.pid, 0)
            break
        time.sleep(0.05)
    p.returncode = os.waitstatus_to_exitcode(status)
    wall = time.monotonic() - t0
    busy = machine_busy_s() - m0
    if log_path:
        out.close()
    return {"rc": p.returncode, "wall_s": wall, "cpu_s": ru.ru_utime + ru.ru_stime,
            "user_s": ru.ru_utime, "sys_s": ru.ru_stime, "maxrss_kb": ru.ru_maxrss,
            "machine_busy_s": busy}


def prom_samples(text):
    """Prometheus text exposition as {sample name with its labels, as written: value}."""
    out = {}
    for line in text.splitlines():
        if line and not line.startswith("#"):
            name, value = line.rsplit(" ", 1)
            out[name] = float(value)
    return out


def http_get(url, timeout=2.0):
    with urllib.request.urlopen(url, timeout=timeout) as r:
        return r.status, r.read()


class FakeServer:
    """`roofline fake-backend` with the given flags; .port, .url (…/v1); stop() returns its
    counters (parsed from the 'stopped (...)' line and the per-kind fault lines)."""

    def __init__(self, args, log_path):
        self.log_path = log_path
        self.log = open(log_path, "w")
        self.p = subprocess.Popen([ROOFLINE, "fake-backend", "--port", "0"] + [str(a) for a in args],
                                  stdout=self.log, stderr=subprocess.STDOUT)
        self.port = None
        for _ in range(200):
            time.sleep(0.05)
            m = re.search(r"127\.0\.0\.1:(\d+)", open(log_path).read())
            if m:
                self.port = int(m.group(1))
                break
            if self.p.poll() is not None:
                break
        if not self.port:
            self.stop()
            raise RuntimeError("fake-backend did not start: " + open(log_path).read())
        self.url = "http://127.0.0.1:%d/v1" % self.port

    def stop(self):
        if self.p.poll() is None:
            self.p.send_signal(signal.SIGTERM)
            try:
                self.p.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self.p.kill()
                self.p.wait()
        self.log.close()
        text = open(self.log_path).read()
        c = {}
        m = re.search(r"stopped \([A-Z]+\): (.*)", text)
        if m:
            for part in m.group(1).split(","):
                k, _, v = part.strip().rpartition(" ")
                c[k.replace(" ", "_")] = int(v)
        c["faults_by_kind"] = {k: int(v) for k, v in re.findall(r"^\s+fault (\S+)\s+(\d+)", text, re.M)}
        m = re.search(r"chunk lateness ms .*: p50 ([\d.]+) p90 ([\d.]+) p99 ([\d.]+) max ([\d.]+) over (\d+)", text)
        m2 = re.search(r"served (\d+) streamed tokens in ([\d.]+) s .*: ([\d.]+) tok/s", text)
        if m2:  # the throughput the server actually delivered, its own start-up included
            c["served"] = {"tokens": int(m2.group(1)), "s": float(m2.group(2)), "tok_s": float(m2.group(3))}
        if m:  # the server's own lateness against its schedule
            c["late_ms"] = {"p50": float(m.group(1)), "p90": float(m.group(2)), "p99": float(m.group(3)),
                            "max": float(m.group(4)), "chunks": int(m.group(5))}
        return c


def llama_bin_dir():
    """The bin dir tools/peers/build_llama_cpp.sh prints (it builds only when needed)."""
    d = os.path.join(ROOT, ".peers", "llama.cpp-build", "bin")
    if os.path.exists(os.path.join(d, "llama-server")):
        return d
    out = subprocess.run(["bash", os.path.join(ROOT, "tools", "peers", "build_llama_cpp.sh")],
                         capture_output=True, text=True, check=True).stdout.strip().splitlines()
    return out[-1].strip()


class LlamaServer:
    def __init__(self, model, port, log_path, threads=2, parallel=4, ctx=8192, extra=(), cpus=None,
                 chat_template_file=os.path.join(ROOT, "tools", "peers", "templates", "gemma.jinja")):
        """chat_template_file None: the model file's own template (--jinja)."""
        exe = os.path.join(llama_bin_dir(), "llama-server")
        tmpl = ["--chat-template-file", chat_template_file] if chat_template_file else []
        self.cmd = (["taskset", "-c", cpus] if cpus else []) + [exe, "-m", model, "--host", "127.0.0.1", "--port", str(port), "-t", str(threads),
                    "-np", str(parallel), "-c", str(ctx), "--jinja"] + tmpl + ["--no-webui"] + list(extra)
        self.log = open(log_path, "w")
        env = dict(os.environ)
        env["LD_LIBRARY_PATH"] = os.path.dirname(exe) + ":" + env.get("LD_LIBRARY_PATH", "")
        self.p = subprocess.Popen(self.cmd, stdout=self.log, stderr=subprocess.STDOUT, env=env)
        self.url = "http://127.0.0.1:%d/v1" % port
        self.base = "http://127.0.0.1:%d" % port
        t_end = time.monotonic() + 180
        while time.monotonic() < t_end:
            if self.p.poll() is not None:
                raise RuntimeError("llama-server exited; see " + log_path)
            try:
                st, _ = http_get(self.base + "/health", 1.0)
                if st == 200:
                    return
            except Exception:
                pass
            time.sleep(0.5)
        self.stop()
        raise RuntimeError("llama-server not healthy in 180 s; see " + log_path)

    def cpu_s(self):
        """CPU seconds the server has used so far (from /proc)."""
        with open("/proc/%d/stat" % self.p.pid) as f:
            fields = f.read().rsplit(")", 1)[1].split()
        tck = os.sysconf("SC_CLK_TCK")
        return (int(fields[11]) + int(fields[12])) / tck

    def stop(self):
        if self.p.poll() is None:
            self.p.send_signal(signal.SIGTERM)
            try:
                self.p.wait(timeout=20)
            except subprocess.TimeoutExpired:
                self.p.kill()
                self.p.wait()
        self.log.close()


def free_port():
    import socket
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


# ---------------------------------------------------------------- roofline bench output


def read_run(out_dir):
    with open(os.path.join(out_dir, "summary.json")) as f:
        summary = json.load(f)
    records = []
    with open(os.path.join(out_dir, "records.jsonl")) as f:
        for line in f:
            if line.strip():
                records.append(json.loads(line))
    return summary, records


def mean(v):
    v = [x for x in v if x is not None]
    return sum(v) / len(v) if v else None


def median(v):
    v = sorted(x for x in v if x is not None)
    if not v:
        return None
    n = len(v)
    return v[n // 2] if n % 2 else 0.5 * (v[n // 2 - 1] + v[n // 2])


def percentile(v, q):
    """numpy's default (linear between closest ranks)."""
    v = sorted(x for x in v if x is not None)
    if not v:
        return None
    pos = (len(v) - 1) * q / 100.0
    lo = int(pos)
    hi = min(lo + 1, len(v) - 1)
    return v[lo] + (v[hi] - v[lo]) * (pos - lo)


# ---------------------------------------------------------------- AIPerf


def aiperf_exe():
    exe = os.path.join(AIPERF_VENV, "bin", "aiperf")
    if not os.path.exists(exe) and shutil.which("aiperf"):  # installed beside the other tools
        exe = shutil.which("aiperf")
    if not os.path.exists(exe):
        raise RuntimeError("aiperf not installed: python3 -m venv .peers/aiperf-venv && "
                           ".peers/aiperf-venv/bin/pip install aiperf==0.13.0 sentencepiece gguf")
    return exe


def aiperf_version():
    try:
        out = subprocess.run([aiperf_exe(), "--version"], capture_output=True, text=True, timeout=120)
        return out.stdout.strip().splitlines()[-1]
    except Exception as e:  # noqa: BLE001
        return "unknown (%s)" % e


def build_sp_tokenizer(gguf_path, out_dir):
    """A SentencePiece tokenizer folder (tokenizer.model + tokenizer_config.json naming
    GemmaTokenizer) from the GGUF vocabulary: every token with its score and type, BPE, byte
    fallback, identity normalizer, no dummy prefix, no whitespace folding; unk 3, bos 2, eos 1,
    pad 0. Runs in the AIPerf venv (it has sentencepiece and gguf). Kept when already built."""
    model_file = os.path.join(out_dir, "tokenizer.model")
    if os.path.exists(model_file) and os.path.exists(os.path.join(out_dir, "tokenizer_config.json")):
        return out_dir
    os.makedirs(out_dir, exist_ok=True)
    code = r'''
import json, sys, gguf
from sentencepiece import sentencepiece_model_pb2 as pb
r = gguf.GGUFReader(sys.argv[1])
def arr(name):
    f = r.fields[name]
    return [f.parts[i] for i in f.data]
toks = [bytes(p).decode("utf-8") for p in arr("tokenizer.ggml.tokens")]
scores = [float(p[0]) for p in arr("tokenizer.ggml.scores")]
types = [int(p[0]) for p in arr("tokenizer.ggml.token_type")]
m = pb.ModelProto()
for t, s, ty in zip(toks, scores, types):
    sp = m.pieces.add()
    sp.piece = t
    sp.score = s
    sp.type = ty if ty in (1, 2, 3, 4, 5, 6) else 1
ts = m.trainer_spec
ts.model_type = pb.TrainerSpec.BPE
ts.vocab_size = len(toks)
ts.byte_fallback = True
ts.unk_id, ts.bos_id, ts.eos_id, ts.pad_id = 3, 2, 1, 0
ts.split_digits = True
ns = m.normalizer_spec
ns.name = "identity"
ns.add_dummy_prefix = False
ns.remove_extra_whitespaces = False
ns.escape_whitespaces = True
with open(sys.argv[2] + "/tokenizer.model", "wb") as f:
    f.write(m.SerializeToString())
cfg = {"tokenizer_class": "GemmaTokenizer", "bos_token": "<bos>", "eos_token": "<eos>",
       "unk_token": "<unk>", "pad_token": "<pad>", "add_bos_token": True, "add_eos_token": False,
       "model_max_length": 32768}
json.dump(cfg, open(sys.argv[2] + "/tokenizer_config.json", "w"), indent=1)
json.dump({"bos_token": "<bos>", "eos_token": "<eos>", "unk_token": "<unk>", "pad_token": "<pad>"},
          open(sys.argv[2] + "/special_tokens_map.json", "w"), indent=1)
print(len(toks))
'''
    py = os.path.join(AIPERF_VENV, "bin", "python")
    if not os.path.exists(py):
        py = sys.executable
    subprocess.run([py, "-c", code, gguf_path, out_dir], check=True)
    return out_dir


def run_aiperf(url_base, model, tokenizer_dir, out_dir, concurrency, requests, osl, isl=32,
               extra_inputs=(), warmup=0, server_token_count=True, timeout=3600, log_path=None,
               workers_max=None, extra_args=()):
    """aiperf profile against url_base (no /v1); returns run_measured's dict plus the paths."""
    if os.path.exists(out_dir):
        shutil.rmtree(out_dir)
    os.makedirs(out_dir, exist_ok=True)
    cmd = [aiperf_exe(), "profile", "--model", model, "--url", url_base, "--endpoint-type", "chat",
           "--streaming", "--tokenizer", tokenizer_dir, "--concurrency", str(concurrency),
           "--request-count", str(requests), "--synthetic-input-tokens-mean", str(isl),
           "--synthetic-input-tokens-stddev", "0", "--output-tokens-mean", str(osl),
           "--output-tokens-stddev", "0", "--output-artifact-dir", out_dir, "--ui", "none",
           "--no-server-metrics", "--no-gpu-telemetry", "--random-seed", "1"]
    if server_token_count:
        cmd.append("--use-server-token-count")
    if warmup:
        cmd += ["--warmup-request-count", str(warmup)]
    for e in extra_inputs:
        cmd += ["--extra-inputs", e]
    if workers_max:
        cmd += ["--workers-max", str(workers_max)]
    cmd += list(extra_args)
    env = dict(os.environ)
    # not HF_HUB_OFFLINE: AIPerf 0.13 then looks a local tokenizer folder up in the hub cache
    # and fails; a local folder path loads without the network
    for k in ("HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE"):
        env.pop(k, None)
    env.update({"TOKENIZERS_PARALLELISM": "false", "NO_COLOR": "1"})
    res = run_measured(cmd, log_path=log_path or os.path.join(out_dir, "aiperf.log"), env=env,
                       timeout=timeout)
    res["cmd"] = cmd
    res["out_dir"] = out_dir
    return res


def _find(out_dir, name):
    for dp, _, files in os.walk(out_dir):
        if name in files:
            return os.path.join(dp, name)
    return None


def read_aiperf(out_dir):
    """AIPerf's figures: {metric: {avg, p50, p90, p99, min, max, unit}} from
    profile_export_aiperf.json, plus per-request values from profile_export.jsonl."""
    path = _find(out_dir, "profile_export_aiperf.json")
    if not path:
        return None
    with open(path) as f:
        data = json.load(f)
    metrics = {}
    src = data.get("records", data) if isinstance(data, dict) else {}
    if isinstance(src, dict):
        for k, v in src.items():
            if isinstance(v, dict) and ("avg" in v or "p50" in v):
                metrics[k] = v
    per_req = []
    jl = _find(out_dir, "profile_export.jsonl")
    if jl:
        with open(jl) as f:
            for line in f:
                try:
                    per_req.append(json.loads(line))
                except ValueError:
                    pass
    return {"metrics": metrics, "per_request": per_req, "raw": data, "path": path}


def aiperf_metric(a, name, stat="p50"):
    if not a:
        return None
    m = a["metrics"].get(name)
    if not m:
        return None
    v = m.get(stat)
    if v is None and stat == "p50":
        v = m.get("avg")
    return v


def aiperf_request_values(a, name):
    """Per-request values of metric `name` from profile_export.jsonl (None when absent)."""
    out = []
    for r in (a or {}).get("per_request", []):
        m = r.get("metrics", {}).get(name)
        if isinstance(m, dict):
            m = m.get("value")
        if isinstance(m, (int, float)):
            out.append(float(m))
    return out


# ---------------------------------------------------------------- figures


def rel_err(measured, truth):
    if measured is None or truth in (None, 0):
        return None
    return (measured - truth) / truth


def within(measured, truth, rel=0.02, abs_=1.0):
    """The acceptance rule: within rel (fraction) or abs_ (same unit) of the truth."""
    if measured is None or truth is None:
        return False
    return abs(measured - truth) <= abs_ or (truth != 0 and abs(measured - truth) / abs(truth) <= rel)


def fmt(v, nd=2):
    if v is None:
        return "-"
    if isinstance(v, bool):
        return "yes" if v else "NO"
    if isinstance(v, float):
        if v != 0 and abs(v) < 0.1:
            return "%.3g" % v
        return ("%%.%df" % nd) % v
    return str(v)


def fmt_table(headers, rows):
    cells = [[fmt(c) for c in r] for r in rows]
    w = [max(len(str(h)), *(len(r[i]) for r in cells)) if cells else len(str(h))
         for i, h in enumerate(headers)]
    line = "  ".join(str(h).ljust(w[i]) for i, h in enumerate(headers))
    out = [line, "  ".join("-" * x for x in w)]
    for r in cells:
        out.append("  ".join(r[i].ljust(w[i]) for i in range(len(headers))))
    return "\n".join(out)


def finish_results(out, results, t0):
    """Stamps the elapsed time and load average, writes results.json and says where."""
    results["elapsed_s"] = time.monotonic() - t0
    results["loadavg_end"] = loadavg()
    write_json(os.path.join(out, "results.json"), results)
    print("\nresults: %s" % os.path.join(out, "results.json"))


def write_json(path, obj):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w") as f:
        json.dump(obj, f, indent=2, default=str)


def loadavg():
    try:
        return os.getloadavg()
    except OSError:
        return None


def eprint(*a):
    print(*a, file=sys.stderr, flush=True)
