"""serve_proc.py: one `roofline serve` for an integration test module, shared by test_serve.py,
test_errors.py and test_serve_tools.py: started on a free loopback port with its request log in
a file (not a pipe, so the log cannot block it), /health awaited, and on exit SIGTERM, a clean
exit (status 0) asserted and the log handed back."""
import contextlib
import json
import os
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request

import pytest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "tools"))
from benchlib import free_port  # noqa: E402  (the repo's one helper for a free local port)

BIN = os.environ.get("ROOFLINE_BIN", "build/roofline")


def wait_healthy(proc, base, seconds=60):
    """Waits for /health 200 (503 "loading" before it); fails when the server exits."""
    deadline = time.time() + seconds
    while time.time() < deadline:
        try:
            with urllib.request.urlopen(base + "/health", timeout=1) as r:
                if r.status == 200:
                    return
        except urllib.error.HTTPError as e:
            assert e.code == 503 and json.loads(e.read())["status"] == "loading"
        except OSError:
            pass
        if proc.poll() is not None:
            pytest.fail(f"server exited with status {proc.returncode}")
        time.sleep(0.1)
    proc.kill()
    pytest.fail("server did not become healthy")


@contextlib.contextmanager
def serve(args, seconds=60):
    """`roofline serve --port P ARGS...`: yields a dict with "base" (http://127.0.0.1:P) and
    "port"; after the block it also holds "log", the server's stderr, once it exited 0."""
    port = free_port()
    log = tempfile.TemporaryFile(mode="w+")
    proc = subprocess.Popen([BIN, "serve", "--port", str(port)] + [str(a) for a in args],
                            stdout=subprocess.DEVNULL, stderr=log, text=True)
    s = {"base": f"http://127.0.0.1:{port}", "port": port}
    try:
        wait_healthy(proc, s["base"], seconds)
        yield s
    finally:
        if proc.poll() is None:
            proc.terminate()
        proc.wait(timeout=30)
        log.seek(0)
        s["log"] = log.read()
        log.close()
    assert proc.returncode == 0, s["log"]
