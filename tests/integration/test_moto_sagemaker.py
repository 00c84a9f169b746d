"""test_moto_sagemaker.py: the bench's sagemaker: backend, not streamed ("stream": false:
InvokeEndpoint), against moto's server (moto implements SageMaker Runtime InvokeEndpoint and lets
a test queue the endpoint's results; it does not check signatures: the fake does that,
test_bench_aws.py). A second peer written by others than the fake's author."""
import json
import os
import subprocess
import sys
import time
import urllib.error
import urllib.request

import pytest

pytest.importorskip("moto")
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "tools"))
from benchlib import free_port  # noqa: E402

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import fake_aws  # noqa: E402  (only for the test credentials)

BIN = os.environ.get("ROOFLINE_BIN", "build/roofline")


@pytest.fixture(scope="module", autouse=True)
def need_sagemaker():
    r = subprocess.run([BIN, "bench", "--backend", "x=sagemaker:us-east-1/m", "--aba", "x,zz"],
                       capture_output=True, text=True, timeout=60)
    if "unknown scheme" in r.stderr:
        pytest.skip("this build's bench has no sagemaker: backend")


@pytest.fixture
def moto(tmp_path):
    port = free_port()
    log = open(tmp_path / "moto.log", "w")
    p = subprocess.Popen([sys.executable, "-m", "moto.server", "-H", "127.0.0.1", "-p", str(port)],
                         stdout=log, stderr=subprocess.STDOUT)
    base = f"http://127.0.0.1:{port}"
    try:
        for _ in range(300):
            try:
                urllib.request.urlopen(base + "/moto-api/", timeout=1).read()
                break
            except urllib.error.HTTPError:
                break  # it answers
            except OSError:
                if p.poll() is not None:
                    pytest.fail("moto server exited: " + open(tmp_path / "moto.log").read())
                time.sleep(0.1)
        yield base
    finally:
        p.terminate()
        p.wait(timeout=30)
        log.close()


def queue(base, bodies):
    results = [{"Body": json.dumps(b) if not isinstance(b, str) else b,
                "ContentType": "application/json", "InvokedProductionVariant": "AllTraffic",
                "CustomAttributes": ""} for b in bodies]
    rq = urllib.request.Request(base + "/moto-api/static/sagemaker/endpoint-results",
                                data=json.dumps({"region": "us-east-1",
                                                 "results": results}).encode(), method="POST")
    urllib.request.urlopen(rq).read()


def completion(text, n):
    return {"id": "chatcmpl-moto", "object": "chat.completion", "created": 1764547200,
            "model": "/opt/ml/model",
            "choices": [{"index": 0, "message": {"role": "assistant", "content": text},
                         "finish_reason": "stop"}],
            "usage": {"prompt_tokens": 9, "completion_tokens": n, "total_tokens": 9 + n}}


def test_invoke_endpoint_through_moto(tmp_path, moto):
    # moto gives each distinct request body the next queued result; the speed runs send the same
    # body (one result), the probe another; past the queue (a third body: another model name)
    # it answers "body", which is not JSON
    queue(moto, [completion("tok tok tok tok tok", 5), completion("Paris", 1)])
    out = tmp_path / "run"
    run = {"backends": [{"name": "sm", "uri": "sagemaker:us-east-1/my-endpoint", "stream": False,
                         "retry_max": -1},
                        {"name": "late", "uri": "sagemaker:us-east-1/my-endpoint",
                         "model": "another-model", "stream": False, "suites": ["probe"],
                         "retry_max": -1}],
           "suites": ["speed", "probe"], "speed": {"runs": 2, "max_tokens": 8},
           "membw": False, "out": str(out)}
    (tmp_path / "run.json").write_text(json.dumps(run))
    env = {k: v for k, v in os.environ.items() if not k.startswith("AWS_")}
    env.update(AWS_ACCESS_KEY_ID=fake_aws.TEST_ACCESS_KEY,
               AWS_SECRET_ACCESS_KEY=fake_aws.TEST_SECRET_KEY,
               AWS_ENDPOINT_URL_SAGEMAKER_RUNTIME=moto, AWS_SHARED_CREDENTIALS_FILE="/nonexistent")
    r = subprocess.run([BIN, "bench", "--run", str(tmp_path / "run.json"), "--no-progress"],
                       env=env, capture_output=True, text=True, timeout=300)
    assert r.returncode == 3, r.stderr[-2000:]  # "late" got no successful reply
    recs = [json.loads(ln) for ln in open(out / "records.jsonl") if ln.strip()]
    sm = [x for x in recs if x["backend"] == "sm"]
    speed = [x for x in sm if x["suite"] == "speed"]
    assert len(speed) == 2 and all(x["status"] == "ok" for x in speed), speed
    assert all(x["completion_tokens_server"] == 5 and x["prompt_tokens_server"] == 9
               for x in speed)
    (probe,) = [x for x in sm if x["suite"] == "probe"]
    assert probe["status"] == "ok" and probe["reply"] == "Paris"
    (late,) = [x for x in recs if x["backend"] == "late"]
    assert late["status"] == "error" and late["error_class"] == "invalid_json", late
    saved = json.loads((out / "run.json").read_text())["backends"][0]
    assert saved["stream"] is False
    for path in out.rglob("*"):
        if path.is_file():
            assert fake_aws.TEST_SECRET_KEY.encode() not in path.read_bytes()
