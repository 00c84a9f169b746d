#!/usr/bin/env python3
"""stress_serve.py: `roofline serve` under stress on loopback, bounded in time and count.

  python3 tools/stress/stress_serve.py connections [--n 1000]   1,000 requests on 1,000 connections at
      once: every one answered 200 (complete, with usage) or 429 (Retry-After, code
      server_is_overloaded); none refused or reset; the server alive after.
  python3 tools/stress/stress_serve.py slow [--n 24]   clients sending a byte a second (half dribble
      their headers, half a body): each is cut within --read-timeout (+ slack), the body ones
      with a 408 request_timeout; with --max-connections = n every slot was taken, and a
      normal request succeeds afterwards (the slots were freed).
  python3 tools/stress/stress_serve.py disconnect [--n 100]   streams that hang up after their first
      content chunk: /metrics back to 0 running, 0 waiting and 0 KV used within 15 s, n more
      `abort`s, the server still answers.
  python3 tools/stress/stress_serve.py sigterm [--n 48]   SIGTERM while streams and non-stream
      requests are in flight (--drain-ms short enough that some are cut): exit status 0; every
      client got a complete reply or a clean error (an OpenAI error object: HTTP 503, or a
      stream's error event then [DONE]).
  python3 tools/stress/stress_serve.py soak [--minutes 2]   16 concurrent streams for that long: zero
      errors (a reply not whole within --request-timeout, 120 s, is one: counted apart); the
      server's RSS at the end within 5% of its RSS after warm-up (first 20% of the run, at
      least 20 s).
  python3 tools/stress/stress_serve.py all   the short versions of the five above, in turn.
  python3 tools/stress/stress_serve.py schema [--n 50]   schemathesis (PyPI; not installed by
      scripts/setup.sh, no ctest runs it: `pip install schemathesis`) against docs/openapi.yaml:
      every operation, --n examples each in the coverage and fuzzing phases, every check but
      positive_data_acceptance (what the schema cannot say: token ids below the vocabulary
      size, stream_options only with stream true, prompt plus max_tokens within --ctx), NUL
      bytes left out of generated strings (the server refuses them, documented), a 300 s
      response time limit (a loaded machine). The server runs with --api-key, --ctx 48 so that
      every generation is short. The command is printed; schemathesis's own exit status is
      the verdict.

The server is build/roofline (--bin) on models/smollm2-135m-instruct-q4_1.gguf (--model) with
small max_tokens, started on a free port. Each subcommand prints one `verdict:` line with its
figures and exits 1 on a failure (77, skipped, when aiohttp, h11, the model or the binary is
missing). aiohttp drives
the ordinary clients; the slow and pre-connected ones are raw sockets read with h11 (an HTTP/1.1
state machine, as httpx uses), so nothing here parses HTTP by hand. The figures depend on the
machine's load: quote them with it.
"""
import argparse
import asyncio
import json
import os
import re
import signal
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request

try:
    import aiohttp
    import h11
except ImportError as e:  # the ctest skips (77); scripts/setup.sh installs them
    print(f"stress_serve: skipped: {e}", file=sys.stderr)
    sys.exit(77)

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))  # tools/benchlib.py
from benchlib import free_port, prom_samples  # noqa: E402

MODEL_ID = "m"


class Server:
    """`roofline serve` on a free port with its stderr in a file; stop() sends SIGTERM and
    returns the exit status."""

    def __init__(self, args, extra):
        self.port = free_port()
        self.base = f"http://127.0.0.1:{self.port}"
        self.log = tempfile.TemporaryFile(mode="w+")
        cmd = [args.bin, "serve", "-m", args.model, "--model-id", MODEL_ID, "--port",
               str(self.port)] + [str(a) for a in extra]
        self.proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=self.log)
        deadline = time.time() + 120
        while time.time() < deadline:
            if self.proc.poll() is not None:
                raise SystemExit(f"server exited with {self.proc.returncode}: {self.log_text()}")
            try:
                with urllib.request.urlopen(self.base + "/health", timeout=1) as r:
                    if r.status == 200:
                        return
            except (urllib.error.URLError, OSError):
                pass
            time.sleep(0.1)
        self.proc.kill()
        raise SystemExit("server did not become healthy")

    def log_text(self):
        self.log.seek(0)
        return self.log.read()

    def threads(self):
        with open(f"/proc/{self.proc.pid}/status") as f:
            return int(re.search(r"^Threads:\s+(\d+)", f.read(), re.M).group(1))

    def settled_threads(self, quiet_s=0.5, max_s=10.0):
        """The thread count once it has not changed for quiet_s: the readiness probe's
        connection (a thread and a connection slot) is gone by then. Under load it can outlive
        the probe's reply by a moment: the slow test, with every slot counted, then lost its
        last client (CI, load 5.4)."""
        t0 = last_change = time.monotonic()
        n = self.threads()
        while time.monotonic() - t0 < max_s and time.monotonic() - last_change < quiet_s:
            time.sleep(0.05)
            m = self.threads()
            if m != n:
                n, last_change = m, time.monotonic()
        return n

    def rss_kib(self):
        with open(f"/proc/{self.proc.pid}/status") as f:
            return int(re.search(r"^VmRSS:\s+(\d+)", f.read(), re.M).group(1))

    def metrics(self):
        with urllib.request.urlopen(self.base + "/metrics", timeout=5) as r:
            return prom_samples(r.read().decode())

    def healthy(self):
        try:
            with urllib.request.urlopen(self.base + "/health", timeout=5) as r:
                return r.status == 200
        except (urllib.error.URLError, OSError):
            return False

    def stop(self, timeout=60):
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
        try:
            return self.proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            return "hung"


def completion_body(max_tokens, stream=False, prompt="Once upon a time"):
    b = {"model": MODEL_ID, "prompt": prompt, "max_tokens": max_tokens, "ignore_eos": True,
         "temperature": 0}
    if stream:
        b["stream"] = True
    return b


def verdict(name, ok, **figures):
    fig = " ".join(f"{k}={v}" for k, v in figures.items())
    print(f"verdict: {name} {'PASS' if ok else 'FAIL'} {fig}", flush=True)
    return 0 if ok else 1


# ---------------------------------------------------------------- raw connections (h11)

async def h11_exchange(reader, writer, data_parts, delay_s=0.0, read_s=60.0):
    """Sends data_parts (bytes, one write each, delay_s apart), then reads one response with
    h11. Returns (status, headers dict, body bytes), or (None, reason, b"") when the
    connection closed before a whole response."""
    conn = h11.Connection(h11.CLIENT)
    try:
        for part in data_parts:
            writer.write(part)
            await writer.drain()
            if delay_s:
                # a response (408) may come while sending: stop sending once it has
                try:
                    data = await asyncio.wait_for(reader.read(65536), delay_s)
                except asyncio.TimeoutError:
                    continue
                if not data:
                    return None, "closed while sending", b""
                conn.receive_data(data)
                break
        status, headers, body = None, {}, b""
        deadline = time.monotonic() + read_s
        while True:
            ev = conn.next_event()
            if ev is h11.NEED_DATA:
                left = deadline - time.monotonic()
                if left <= 0:
                    return None, "read timeout", b""
                data = await asyncio.wait_for(reader.read(65536), left)
                conn.receive_data(data)
                if not data and conn.their_state is not h11.DONE:
                    nxt = conn.next_event()
                    if isinstance(nxt, h11.EndOfMessage):
                        return status, headers, body
                    if isinstance(nxt, h11.Data):
                        body += nxt.data
                        continue
                    return None, "closed before a whole response", b""
                continue
            if isinstance(ev, h11.Response):
                status = ev.status_code
                headers = {k.decode().lower(): v.decode() for k, v in ev.headers}
            elif isinstance(ev, h11.Data):
                body += ev.data
            elif isinstance(ev, h11.EndOfMessage):
                return status, headers, body
            elif isinstance(ev, h11.ConnectionClosed):
                return None, "closed", b""
    except (ConnectionError, OSError, asyncio.TimeoutError, h11.RemoteProtocolError) as e:
        return None, type(e).__name__, b""
    finally:
        writer.close()


def request_bytes(port, path, body, extra_headers=()):
    data = json.dumps(body).encode()
    head = (f"POST {path} HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\n"
            f"Content-Type: application/json\r\nContent-Length: {len(data)}\r\n"
            "Connection: close\r\n")
    for h in extra_headers:
        head += h + "\r\n"
    return (head + "\r\n").encode(), data


# ---------------------------------------------------------------- connections

async def run_connections(srv, n, max_tokens):
    conns = await asyncio.gather(*[asyncio.open_connection("127.0.0.1", srv.port)
                                   for _ in range(n)], return_exceptions=True)
    refused = [c for c in conns if isinstance(c, BaseException)]
    opened = [c for c in conns if not isinstance(c, BaseException)]
    await asyncio.sleep(0.5)
    held_threads = srv.threads()  # one thread per connection MHD accepted
    head, data = request_bytes(srv.port, "/v1/completions", completion_body(max_tokens))
    t0 = time.monotonic()
    res = await asyncio.gather(*[h11_exchange(r, w, [head + data], read_s=240)
                                 for r, w in opened])
    wall = time.monotonic() - t0
    return refused, opened, held_threads, res, wall


def cmd_connections(args):
    srv = Server(args, ["--parallel", 16, "--max-queue", 64, "--ctx", 256])
    base_threads = srv.settled_threads()
    refused, opened, held, res, wall = asyncio.run(run_connections(srv, args.n, 4))
    ok = bad = n429 = n429_bad = 0
    problems = []
    for status, headers, body in res:
        if status == 200:
            try:
                u = json.loads(body)["usage"]
                ok += u["completion_tokens"] == 4
                bad += u["completion_tokens"] != 4
            except (ValueError, KeyError):
                bad += 1
        elif status == 429:
            n429 += 1
            try:
                err = json.loads(body)["error"]
                if headers.get("retry-after") is None or err["code"] != "server_is_overloaded":
                    n429_bad += 1
            except (ValueError, KeyError):
                n429_bad += 1
        else:
            problems.append(str(status) if status else headers)
    alive = srv.healthy()
    rc = srv.stop()
    good = (not refused and not problems and bad == 0 and n429_bad == 0 and ok > 0 and
            ok + n429 == args.n and alive and rc == 0)
    if problems:
        print("other outcomes:", sorted(set(problems))[:10])
    return verdict("connections", good, n=args.n, connected=len(opened),
                   refused_at_connect=len(refused), threads_held=held - base_threads,
                   ok_200=ok, incomplete_200=bad, r429=n429, r429_malformed=n429_bad,
                   other=len(problems), wall_s=f"{wall:.1f}", alive_after=alive, exit=rc)


# ---------------------------------------------------------------- slow clients

async def slow_client(port, kind, read_timeout):
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    head, data = request_bytes(port, "/v1/completions", completion_body(4))
    t0 = time.monotonic()
    if kind == "headers":  # the request line and headers, a byte a second
        parts = [bytes([b]) for b in head + data]
    else:  # the headers at once, then the body a byte a second
        parts = [head] + [bytes([b]) for b in data]
    status, headers, body = await h11_exchange(reader, writer, parts, delay_s=1.0,
                                               read_s=read_timeout + 30)
    return kind, status, headers, body, time.monotonic() - t0


async def run_slow(srv, n, read_timeout):
    kinds = ["headers" if i % 2 == 0 else "body" for i in range(n)]
    tasks = [asyncio.create_task(slow_client(srv.port, k, read_timeout)) for k in kinds]
    await asyncio.sleep(1.5)
    threads_during = srv.threads()
    res = await asyncio.gather(*tasks)
    # every slot was taken by a slow client; now one normal request must get through
    async with aiohttp.ClientSession() as s:
        async with s.post(srv.base + "/v1/completions", json=completion_body(4),
                          timeout=aiohttp.ClientTimeout(total=60)) as r:
            after = r.status
    return res, threads_during, after


def cmd_slow(args):
    rt = args.read_timeout
    srv = Server(args, ["--parallel", 4, "--max-connections", args.n, "--read-timeout", rt,
                        "--idle-timeout", rt + 5])
    base_threads = srv.settled_threads()
    res, during, after = asyncio.run(run_slow(srv, args.n, rt))
    slack = 3.0
    cut_h = sum(1 for k, st, _, _, t in res if k == "headers" and st is None and t <= rt + slack)
    r408 = 0
    for k, st, _, body, t in res:
        if k == "body" and st == 408 and t <= rt + slack:
            try:
                r408 += json.loads(body)["error"]["code"] == "request_timeout"
            except (ValueError, KeyError):
                pass
    longest = max(t for *_, t in res)
    time.sleep(1.0)
    threads_after = srv.threads()
    rc = srv.stop()
    nh = sum(1 for k in res if k[0] == "headers")
    good = cut_h == nh and r408 == len(res) - nh and after == 200 and rc == 0
    if not good:
        for k, st, h, _, t in res:
            print(f"  {k}: status={st} {h if st is None else ''} after {t:.1f}s")
    return verdict("slow", good, n=args.n, read_timeout_s=rt, headers_cut=f"{cut_h}/{nh}",
                   body_408=f"{r408}/{len(res) - nh}", longest_s=f"{longest:.1f}",
                   threads_during=during - base_threads, threads_after=threads_after -
                   base_threads, request_after=after, exit=rc)


# ---------------------------------------------------------------- disconnect

async def hang_up_after_first_chunk(base, max_tokens):
    async with aiohttp.ClientSession() as s:
        async with s.post(base + "/v1/completions", json=completion_body(max_tokens, True),
                          timeout=aiohttp.ClientTimeout(total=300)) as r:
            if r.status != 200:
                return r.status
            async for line in r.content:
                if line.startswith(b"data: {") and b'"text":""' not in line:
                    return "cut"  # leaving the block closes the connection mid-stream
    return "ended"


def cmd_disconnect(args):
    srv = Server(args, ["--parallel", 16, "--max-queue", max(args.n, 16), "--ctx", 512])
    aborts0 = srv.metrics().get('roofline:request_success_total{finished_reason="abort"}', 0)

    async def go():
        return await asyncio.gather(*[hang_up_after_first_chunk(srv.base, 200)
                                      for _ in range(args.n)], return_exceptions=True)

    outcomes = asyncio.run(go())
    cut = sum(1 for o in outcomes if o == "cut")
    t0 = time.monotonic()
    m = {}
    zero = False
    while time.monotonic() - t0 < 15:
        m = srv.metrics()
        if (m["roofline:num_requests_running"] == 0 and m["roofline:num_requests_waiting"] == 0
                and m["roofline:kv_cache_used_tokens"] == 0
                and m["roofline:kv_cache_reserved_tokens"] == 0):
            zero = True
            break
        time.sleep(0.2)
    settle = time.monotonic() - t0
    aborts = m.get('roofline:request_success_total{finished_reason="abort"}', 0) - aborts0
    alive = srv.healthy()
    rc = srv.stop()
    good = cut == args.n and zero and aborts >= args.n * 0.9 and alive and rc == 0
    return verdict("disconnect", good, n=args.n, cut_mid_stream=cut, back_to_zero=zero,
                   settle_s=f"{settle:.1f}", running=m.get("roofline:num_requests_running"),
                   waiting=m.get("roofline:num_requests_waiting"),
                   kv_used=m.get("roofline:kv_cache_used_tokens"), aborts=int(aborts),
                   alive_after=alive, exit=rc)


# ---------------------------------------------------------------- sigterm

async def one_client(base, stream, max_tokens):
    """'complete', 'clean_error' or a description of what went wrong."""
    try:
        async with aiohttp.ClientSession() as s:
            async with s.post(base + "/v1/completions",
                              json=completion_body(max_tokens, stream),
                              timeout=aiohttp.ClientTimeout(total=120)) as r:
                raw = await r.read()
                if r.status != 200:
                    err = json.loads(raw)["error"]
                    return "clean_error" if r.status in (429, 503) and err["message"] else \
                        f"status {r.status}"
                if not stream:
                    return "complete" if json.loads(raw)["usage"]["completion_tokens"] == \
                        max_tokens else "short reply"
                events = [ln[6:] for ln in raw.decode().split("\n") if ln.startswith("data: ")]
                if not events or events[-1] != "[DONE]":
                    return "stream without [DONE]"
                last = json.loads(events[-2])
                if "error" in last:
                    return "clean_error"
                return "complete" if last["choices"][0]["finish_reason"] else "no finish"
    except aiohttp.ClientConnectorError:
        return "clean_error"  # refused: the server had stopped accepting
    except (aiohttp.ClientError, asyncio.TimeoutError, ValueError, KeyError) as e:
        return f"{type(e).__name__}"


def cmd_sigterm(args):
    srv = Server(args, ["--parallel", 16, "--max-queue", 256, "--ctx", 512, "--drain-ms",
                        args.drain_ms])

    async def go():
        # streams and non-stream requests, short ones (which the drain lets finish) and long
        # ones (which it cuts, when --drain-ms is short)
        tasks = [asyncio.create_task(one_client(srv.base, i % 2 == 0, 4 if i < args.n // 2 else 160))
                 for i in range(args.n)]
        await asyncio.sleep(2.0)
        t = time.monotonic()
        srv.proc.send_signal(signal.SIGTERM)
        res = await asyncio.gather(*tasks)
        return res, t

    res, t_sig = asyncio.run(go())
    rc = srv.stop(timeout=args.drain_ms / 1000 + 60)
    took = time.monotonic() - t_sig
    complete = res.count("complete")
    clean = res.count("clean_error")
    other = [r for r in res if r not in ("complete", "clean_error")]
    if other:
        print("other outcomes:", sorted(set(other)))
    good = rc == 0 and not other and complete > 0
    return verdict("sigterm", good, n=args.n, complete=complete, clean_error=clean,
                   other=len(other), drain_ms=args.drain_ms, exit=rc,
                   stop_s=f"{took:.1f}")


# ---------------------------------------------------------------- soak

async def soak_worker(base, until, stats, timeout_s):
    async with aiohttp.ClientSession() as s:
        while time.monotonic() < until:
            try:
                async with s.post(base + "/v1/chat/completions", json={
                        "model": MODEL_ID, "stream": True, "max_tokens": 24, "temperature": 0.7,
                        "messages": [{"role": "user", "content": f"Tell me about {stats['n']}"}],
                        "stream_options": {"include_usage": True}},
                        timeout=aiohttp.ClientTimeout(total=timeout_s)) as r:
                    raw = await r.read()
                    events = [ln[6:] for ln in raw.decode().split("\n")
                              if ln.startswith("data: ")]
                    if r.status != 200 or events[-1] != "[DONE]" or \
                            json.loads(events[-2]).get("usage") is None:
                        stats["errors"] += 1
                        stats["last_error"] = f"status {r.status}: {raw[:200]!r}"
                    else:
                        stats["ok"] += 1
            except asyncio.TimeoutError:
                stats["errors"] += 1
                stats["timeouts"] += 1
                stats["last_error"] = f"no whole reply within {timeout_s} s"
            except (aiohttp.ClientError, ValueError, IndexError) as e:
                stats["errors"] += 1
                stats["last_error"] = repr(e)
            stats["n"] += 1


def cmd_soak(args):
    srv = Server(args, ["--parallel", 16, "--ctx", 512])
    total = args.minutes * 60
    warm = max(20.0, total * 0.2)
    stats = {"ok": 0, "errors": 0, "timeouts": 0, "n": 0, "last_error": ""}
    rss = {}

    async def go():
        t0 = time.monotonic()
        workers = [asyncio.create_task(soak_worker(srv.base, t0 + total, stats,
                                                   args.request_timeout))
                   for _ in range(16)]
        await asyncio.sleep(warm)
        rss["warm"] = srv.rss_kib()
        rss["ok_warm"] = stats["ok"]
        await asyncio.gather(*workers)

    asyncio.run(go())
    rss["end"] = srv.rss_kib()
    rc = srv.stop()
    drift = (rss["end"] - rss["warm"]) / rss["warm"] * 100
    good = stats["errors"] == 0 and drift <= 5.0 and rc == 0 and stats["ok"] > 0
    if stats["errors"]:
        print("last error:", stats["last_error"])
    return verdict("soak", good, minutes=args.minutes, streams=16, requests_ok=stats["ok"],
                   errors=stats["errors"], of_which_timeouts=stats["timeouts"],
                   rss_warm_mib=f"{rss['warm'] / 1024:.1f}",
                   rss_end_mib=f"{rss['end'] / 1024:.1f}", rss_drift_pct=f"{drift:+.2f}",
                   exit=rc)


def cmd_schema(args):
    import shutil
    exe = shutil.which("schemathesis")
    if not exe:
        print("stress_serve: skipped: schemathesis is not installed (pip install schemathesis)",
              file=sys.stderr)
        return 77
    key = "sk-schema"
    srv = Server(args, ["--parallel", 4, "--ctx", 48, "--api-key", key])
    cmd = [exe, "run", os.path.join(ROOT, "docs", "openapi.yaml"), "--url", srv.base,
           "-H", f"Authorization: Bearer {key}", "--checks", "all", "--exclude-checks",
           "positive_data_acceptance", "-n", str(args.n), "--seed", "1", "--workers", "1",
           "--request-timeout", "300", "--max-response-time", "300",
           "--generation-allow-x00", "false", "--generation-database", "none", "--no-color"]
    print("+", " ".join(cmd[:4]), "... (as above)", flush=True)
    work = tempfile.mkdtemp(prefix="roofline-schema-")  # schemathesis writes .schemathesis/ there
    p = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                         cwd=work)
    generated = None
    for line in p.stdout:  # as it comes: a long run cut short keeps what it printed
        print(line, end="", flush=True)
        generated = re.search(r"(\d+) generated", line) or generated
    p.wait()
    shutil.rmtree(work, ignore_errors=True)
    n5xx = len(re.findall(r" status=5\d\d ", srv.log_text()))
    rc = srv.stop()
    good = p.returncode == 0 and rc == 0 and n5xx == 0
    return verdict("schema", good, examples_per_operation=args.n,
                   cases=generated.group(1) if generated else "?",
                   schemathesis_exit=p.returncode, server_5xx=n5xx, exit=rc)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("what", choices=["connections", "slow", "disconnect", "sigterm", "soak",
                                     "all", "schema"])
    ap.add_argument("--bin", default=os.path.join(ROOT, "build", "roofline"))
    ap.add_argument("--model", default=os.path.join(ROOT, "models",
                                                    "smollm2-135m-instruct-q4_1.gguf"))
    ap.add_argument("--n", type=int, default=None, help="clients (default per subcommand)")
    ap.add_argument("--read-timeout", type=int, default=3)
    ap.add_argument("--drain-ms", type=int, default=5000)
    ap.add_argument("--minutes", type=float, default=2.0)
    ap.add_argument("--request-timeout", type=float, default=120,
                    help="soak: seconds a request may take before it counts as an error")
    args = ap.parse_args()
    if not os.path.exists(args.model) or not os.access(args.bin, os.X_OK):
        print(f"stress_serve: skipped: needs {args.bin} and {args.model}", file=sys.stderr)
        return 77
    import resource
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))  # 1,000 sockets on this side too
    defaults = {"connections": 1000, "slow": 24, "disconnect": 100, "sigterm": 48, "schema": 50}
    cmds = {"connections": cmd_connections, "slow": cmd_slow, "disconnect": cmd_disconnect,
            "sigterm": cmd_sigterm, "soak": cmd_soak}
    if args.what == "schema":
        cmds["schema"] = cmd_schema
    todo = list(cmds) if args.what == "all" else [args.what]
    rc = 0
    given_n = args.n
    for w in todo:
        args.n = given_n or defaults.get(w)
        t = time.monotonic()
        rc |= cmds[w](args)
        print(f"  ({w}: {time.monotonic() - t:.0f} s wall, load {os.getloadavg()[0]:.1f})",
              flush=True)
    return rc


if __name__ == "__main__":
    sys.exit(main())
