"""test_bench_aws.py: `roofline bench` end to end over the AWS protocols, against the local fake
(fake_aws.py, every request's SigV4 recomputed): a bedrock: and a sagemaker: backend through the
speed, load, accuracy, agent and probe suites, into the scoreboard and the report like any
backend; usage in the records, tool calls in the agent suite, throttles retried and counted,
error records for the error scenarios, and no credential anywhere in the run directory or the
output. Skips when the bench has no bedrock: backend."""
import glob
import json
import os
import subprocess
import sys

import pytest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import fake_aws  # noqa: E402

BIN = os.environ.get("ROOFLINE_BIN", "build/roofline")
ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..")
NOVA = "amazon.nova-micro-v1:0"
ENDPOINT = "my-endpoint"


def scheme_known(scheme):
    """Whether the bench knows a URI scheme: the run description is checked backend by backend
    before the A/B/A names, so an unknown scheme fails first."""
    r = subprocess.run([BIN, "bench", "--backend", f"x={scheme}:us-east-1/m", "--aba", "x,zz"],
                       capture_output=True, text=True, timeout=60)
    return "unknown scheme" not in r.stderr


@pytest.fixture(scope="module", autouse=True)
def need_aws_backends():
    for scheme in ("bedrock", "sagemaker"):
        if not scheme_known(scheme):
            pytest.skip(f"this build's bench has no {scheme}: backend (roofline bench calls the "
                        f"scheme unknown)")


@pytest.fixture
def fake():
    with fake_aws.FakeAws(session_token=fake_aws.TEST_SESSION_TOKEN, gap_s=0.001) as f:
        yield f


def env_for(fake):
    env = {k: v for k, v in os.environ.items() if not k.startswith("AWS_")}
    env.update(AWS_ACCESS_KEY_ID=fake_aws.TEST_ACCESS_KEY,
               AWS_SECRET_ACCESS_KEY=fake_aws.TEST_SECRET_KEY,
               AWS_SESSION_TOKEN=fake_aws.TEST_SESSION_TOKEN,
               AWS_ENDPOINT_URL_BEDROCK_RUNTIME=fake.url,
               AWS_ENDPOINT_URL_SAGEMAKER_RUNTIME=fake.url,
               AWS_SHARED_CREDENTIALS_FILE="/nonexistent", AWS_REGION="us-east-1")
    return env


def questions(tmp_path):
    src = os.path.join(ROOT, "data", "accuracy", "seed40.jsonl")
    with open(src) as f:
        lines = [ln for ln in f if ln.strip()][:4]
    p = tmp_path / "q4.jsonl"
    p.write_text("".join(lines))
    return str(p)


def backend(name, uri, **more):
    b = {"name": name, "uri": uri, "retry_base_s": 0.01, "retry_cap_s": 0.05, "timeout_s": 60}
    b.update(more)
    return b


def run_bench(tmp_path, fake, run):
    out = tmp_path / "run"
    run["out"] = str(out)
    rf = tmp_path / "run.json"
    rf.write_text(json.dumps(run))
    r = subprocess.run([BIN, "bench", "--run", str(rf), "--no-progress"], env=env_for(fake),
                       capture_output=True, text=True, timeout=600)
    return r, out


def records(out):
    with open(out / "records.jsonl") as f:
        return [json.loads(ln) for ln in f if ln.strip()]


def assert_no_secret(out, *texts):
    for secret in (fake_aws.TEST_SECRET_KEY, fake_aws.TEST_SESSION_TOKEN):
        for t in texts:
            assert secret not in t
        for path in glob.glob(str(out / "**"), recursive=True):
            if os.path.isfile(path):
                with open(path, "rb") as f:
                    assert secret.encode() not in f.read(), f"{secret[:6]}... in {path}"
    r = subprocess.run(["grep", "-r", "-F", "-e", fake_aws.TEST_SECRET_KEY, "-e",
                        fake_aws.TEST_SESSION_TOKEN, str(out)], capture_output=True)
    assert r.returncode == 1, r.stdout  # grep found nothing


def test_all_suites_both_backends(tmp_path, fake):
    fake.script(NOVA, ["throttle", "throttle"])
    fake.script(ENDPOINT, ["not_ready"])
    run = {"backends": [backend("nova", f"bedrock:us-east-1/{NOVA}"),
                        backend("sm", f"sagemaker:us-east-1/{ENDPOINT}",
                                instance="ml.g6.xlarge")],
           "suites": ["speed", "load", "accuracy", "agent", "probe"],
           "speed": {"runs": 2, "max_tokens": 32},
           "load": {"levels": [1, 2], "requests": 4, "max_tokens": 16, "warmup": 0},
           "accuracy": {"questions": questions(tmp_path), "max_tokens": 16, "concurrency": 2},
           "agent": {"runs": 1}, "membw": False}
    r, out = run_bench(tmp_path, fake, run)
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-3000:]
    # every request the fake saw was signed right
    assert fake.log and all(e["error"] in (None, "ThrottlingException", "ModelNotReadyException")
                            for e in fake.log), [e for e in fake.log if e["error"]][:3]
    assert {e["op"] for e in fake.log} >= {"ConverseStream", "InvokeEndpointWithResponseStream"}
    assert all("x-amz-security-token" in e["signed_headers"] or e["error"] is None
               for e in fake.log)
    recs = records(out)
    for name in ("nova", "sm"):
        mine = [x for x in recs if x["backend"] == name]
        assert {x["suite"] for x in mine} == {"speed", "load", "accuracy", "agent", "probe"}
        ok = [x for x in mine if x["status"] == "ok"]
        assert len(ok) == len(mine), [x["error"] for x in mine if x["status"] != "ok"]
        assert all(x["completion_tokens_server"] > 0 and x["prompt_tokens_server"] > 0
                   for x in ok if x["suite"] != "agent" or x["completion_tokens_server"] >= 0)
        calls = [c for x in mine if x["suite"] == "agent" for c in x.get("tool_calls", [])]
        assert calls and all(c["name"] == "count_ids" for c in calls)
        assert json.loads(calls[0]["arguments"])["op"] == ">="
    # the throttles were retried and counted, not errors
    assert sum(x.get("retries", 0) for x in recs if x["backend"] == "nova") == 2
    assert sum(x.get("retries", 0) for x in recs if x["backend"] == "sm") == 1
    steps = [e["step"] for e in fake.log if e["name"] == NOVA]
    assert steps[:3] == ["throttle", "throttle", "ok"]
    # scoreboard and report, like any backend
    summary = json.loads((out / "summary.json").read_text())
    for name in ("nova", "sm"):
        assert name in summary["backends"]
        assert summary["speed"][name]["decode_tok_s"]["median"] > 0
        assert name in summary["agent"]
    cost = summary["cost"]["backends"]
    assert cost["sm"]["kind"] == "instance" and cost["sm"]["usd_per_hour"] == 1.1267
    assert cost["sm"]["price"]["instance"] == "ml.g6.xlarge" and cost["sm"]["price"]["date"]
    assert cost["nova"]["kind"] == "per_token" and cost["nova"]["usd_per_m_output"] == 0.14
    md = (out / "report.md").read_text()
    assert "nova" in md and "sm" in md
    assert "nova" in r.stdout and "sm" in r.stdout  # the scoreboard printed
    assert_no_secret(out, r.stdout, r.stderr)


def test_error_scenarios_are_records(tmp_path, fake):
    bad_model = "fake.errors-v1:0"
    steps = ["validation", "access_denied", "model_error", "stream_error", "stream_failure",
             "bad_crc"]
    fake.script(bad_model, steps)
    fake.script("bad-endpoint", ["model_error", "stream_error", "stream_failure", "bad_crc"])
    fake.set_always("slow-down", "throttle")
    run = {"backends": [backend("berr", f"bedrock:us-east-1/{bad_model}", retry_max=0),
                        backend("serr", "sagemaker:us-east-1/bad-endpoint", retry_max=0),
                        backend("throttled", "bedrock:us-east-1/slow-down", retry_max=2)],
           "suites": ["speed"], "speed": {"runs": 6, "max_tokens": 8}, "membw": False}
    r, out = run_bench(tmp_path, fake, run)
    assert r.returncode == 3, r.stderr[-2000:]  # no successful reply from these backends
    recs = records(out)
    berr = [x for x in recs if x["backend"] == "berr"]
    assert len(berr) == 6 and all(x["status"] == "error" and x["error"] for x in berr)
    cls = [x["error_class"] for x in berr]
    assert cls[0] == "http_4xx" and berr[0]["http_status"] == 400
    assert cls[1] == "http_4xx" and berr[1]["http_status"] == 403
    assert cls[2:] == ["model_error", "model_error", "server_error", "invalid_json"], cls
    assert "ValidationException" in berr[0]["error"] and "request id" in berr[0]["error"]
    assert "modelStreamErrorException" in berr[3]["error"]
    assert "CRC" in berr[5]["error"]
    serr = [x for x in recs if x["backend"] == "serr"]
    assert [x["error_class"] for x in serr] == ["model_error", "model_error", "server_error",
                                                "invalid_json", "ok", "ok"]
    assert "ModelStreamError" in serr[1]["error"] and "CRC" in serr[3]["error"]
    thr = [x for x in recs if x["backend"] == "throttled"]
    assert thr and all(x["error_class"] == "throttled" and x["retries"] == 2 for x in thr)
    assert_no_secret(out, r.stdout, r.stderr)


def test_through_upstream_openai_server(tmp_path):
    """The fake in front of `roofline fake-backend` (--upstream): the bench's Converse and
    SageMaker requests are translated and answered by a real OpenAI server, which sends exactly
    max_tokens tokens with usage: the C backends' maxTokens, the usage coming back and the
    streams' events must all agree with it."""
    sys.path.insert(0, os.path.join(ROOT, "tools"))
    import benchlib
    fs = benchlib.FakeServer(["--ttft-ms", "1", "--gap-ms", "1"], str(tmp_path / "fake.log"))
    try:
        with fake_aws.FakeAws(session_token=fake_aws.TEST_SESSION_TOKEN, upstream=fs.url,
                              gap_s=0) as fake:
            run = {"backends": [backend("nova", f"bedrock:us-east-1/{NOVA}"),
                                backend("sm", f"sagemaker:us-east-1/{ENDPOINT}"),
                                backend("sm-body", f"sagemaker:us-east-1/{ENDPOINT}",
                                        stream=False)],
                   "suites": ["speed", "load", "probe"], "speed": {"runs": 2, "max_tokens": 24},
                   "load": {"levels": [2], "requests": 4, "max_tokens": 12, "warmup": 0},
                   "membw": False}
            r, out = run_bench(tmp_path, fake, run)
            ops = {e["op"] for e in fake.log}
    finally:
        fs.stop()
    assert r.returncode == 0, r.stderr[-3000:]
    assert ops == {"ConverseStream", "InvokeEndpointWithResponseStream", "InvokeEndpoint"}
    recs = records(out)
    assert recs and all(x["status"] == "ok" for x in recs)
    for x in recs:
        assert x["completion_tokens_server"] == x["max_tokens"], x
        if x["backend"] != "sm-body" and x["suite"] != "probe":
            assert x["content_events"] == x["max_tokens"]  # one "tok " per event
    assert_no_secret(out, r.stdout, r.stderr)
