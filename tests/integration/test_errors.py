"""test_errors.py: every HTTP case of tests/data/openai_errors.json against a real `roofline serve`
(plain http.client): the status and the OpenAI error object {"error": {"message", "type", "param",
"code"}} with the type, code and param the case names. The same file drives the parse-level
subset in tests/unit/openai/test_request.c.

One server, started with an API key (the 401 cases), a small context (the overflow cases) and a
64 KiB body limit (the 413 case), serving the model under the id "m" the cases name."""
import http.client
import json
import os
import sys

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "tools"))
sys.path.insert(0, HERE)
from serve_proc import serve  # noqa: E402  (one roofline serve for the module)

MODEL = os.environ.get("ROOFLINE_SERVE_MODEL", "models/smollm2-135m-instruct-q4_1.gguf")
KEY = "sk-test-key"
CASES_FILE = os.path.join(HERE, "..", "data", "openai_errors.json")


def http_cases():
    with open(CASES_FILE, encoding="utf-8") as f:
        cases = json.load(f)["cases"]
    return [c for c in cases if c.get("http", True)]


CASES = http_cases()


def body_of(case):
    if "raw" in case:
        return case["raw"].encode()
    if "raw_repeat" in case:
        return (case["raw_repeat"]["text"] * case["raw_repeat"]["times"]).encode()
    if "body" in case:
        return json.dumps(case["body"]).encode()
    return None


def request(port, case):
    """(status, body bytes) of one case's request."""
    headers = {"Content-Type": "application/json", "Authorization": "Bearer " + KEY}
    for k, v in case.get("headers", {}).items():
        if v is None:
            headers.pop(k, None)
        else:
            headers[k] = v
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
    try:
        conn.request(case["method"], case["endpoint"], body=body_of(case), headers=headers)
        r = conn.getresponse()
        return r.status, r.read()
    finally:
        conn.close()


@pytest.fixture(scope="module")
def port():
    with serve(["-m", MODEL, "--ctx", "512", "--api-key", KEY, "--body-max", "65536",
                "--model-id", "m"]) as s:
        yield s["port"]


def test_cases_read():
    assert len(CASES) >= 50  # the file was read, not an empty list
    assert all(c["status"] != 200 for c in CASES)  # the HTTP cases are all errors


@pytest.mark.parametrize("case", CASES, ids=[c["name"] for c in CASES])
def test_error_case(port, case):
    status, raw = request(port, case)
    assert status == case["status"], raw[:300]
    body = json.loads(raw)
    assert set(body) == {"error"}, body
    err = body["error"]
    assert set(err) == {"message", "type", "param", "code"}, err
    assert isinstance(err["message"], str) and err["message"]
    for k in ("type", "code", "param"):
        if k in case:
            assert err[k] == case[k], (k, err)
