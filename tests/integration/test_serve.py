"""test_serve.py: `roofline serve` against the real openai SDK (and urllib for raw statuses).

Started once per module on a free port with the small smollm2-135m model; every request is
greedy and short so the whole file runs in well under a minute on two cores."""
import concurrent.futures
import json
import math
import os
import subprocess
import sys
import time
import urllib.error
import urllib.request

import openai
import pytest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "tools"))
from benchlib import free_port, prom_samples  # noqa: E402  (the repo's helpers)
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from serve_proc import BIN, serve, wait_healthy  # noqa: E402

MODEL = os.environ.get("ROOFLINE_SERVE_MODEL", "models/smollm2-135m-instruct-q4_1.gguf")
MODEL_ID = "smollm2-135m-instruct-q4_1"
KEY = "sk-test-key"
MSGS = [{"role": "user", "content": "Say hello."}]


def raw(base, path, body=None, method=None, key=KEY, data=None):
    """(status, parsed JSON body, headers) of one request."""
    if data is None and body is not None:
        data = json.dumps(body).encode()
    req = urllib.request.Request(base + path, data=data, method=method)
    req.add_header("Content-Type", "application/json")
    if key:
        req.add_header("Authorization", "Bearer " + key)
    try:
        with urllib.request.urlopen(req, timeout=60) as r:
            return r.status, json.loads(r.read()), r.headers
    except urllib.error.HTTPError as e:
        return e.code, json.loads(e.read()), e.headers


@pytest.fixture(scope="module")
def server():
    with serve(["-m", MODEL, "--parallel", "16", "--ctx", "512", "--api-key", KEY,
                "--body-max", "65536"]) as s:
        yield s["base"]
    assert "serve: req=" in s["log"]  # one log line per request
    assert "(client gone)" in s["log"]  # test_disconnect_cancels's stream was seen to go


@pytest.fixture(scope="module")
def client(server):
    return openai.OpenAI(base_url=server + "/v1", api_key=KEY, max_retries=0)


def count_tokens(server, text, add_special):
    st, body, _ = raw(server, "/tokenize", {"content": text, "add_special": add_special})
    assert st == 200
    return len(body["tokens"])


def test_health_and_models(server, client):
    st, body, _ = raw(server, "/health", key=None)
    assert st == 200 and body == {"status": "ok"}
    models = client.models.list()
    assert models.data[0].id == MODEL_ID
    assert raw(server, "/v1/models")[1]["data"][0]["root"] == MODEL_ID


def test_chat_non_stream(server, client):
    r = client.chat.completions.create(model=MODEL_ID, messages=MSGS, max_tokens=6,
                                       temperature=0, extra_body={"ignore_eos": True})
    assert r.object == "chat.completion" and r.choices[0].message.role == "assistant"
    assert r.choices[0].finish_reason == "length"
    assert r.usage.completion_tokens == 6
    assert r.usage.total_tokens == r.usage.prompt_tokens + 6
    assert r.usage.prompt_tokens > count_tokens(server, MSGS[0]["content"], False)
    t = r.model_extra["timings"]
    for k in ("prompt_n", "prompt_ms", "prompt_per_token_ms", "prompt_per_second", "predicted_n",
              "predicted_ms", "predicted_per_token_ms", "predicted_per_second", "cache_n"):
        assert k in t
    assert t["prompt_n"] + t["cache_n"] == r.usage.prompt_tokens and t["predicted_n"] == 6


def test_chat_stream_usage(client):
    ref = client.chat.completions.create(model=MODEL_ID, messages=MSGS, max_tokens=6,
                                         temperature=0)
    stream = client.chat.completions.create(model=MODEL_ID, messages=MSGS, max_tokens=6,
                                            temperature=0, stream=True,
                                            stream_options={"include_usage": True})
    chunks = list(stream)
    assert chunks[0].choices[0].delta.role == "assistant"
    assert chunks[-1].choices == [] and chunks[-1].usage is not None
    final = chunks[-2]
    assert final.choices[0].finish_reason in ("stop", "length")
    assert "timings" in final.model_extra
    assert all(c.usage is None for c in chunks[:-1])
    assert len({c.id for c in chunks}) == 1
    text = "".join(c.choices[0].delta.content or "" for c in chunks if c.choices)
    assert text == ref.choices[0].message.content  # greedy: the same reply
    assert chunks[-1].usage.prompt_tokens == ref.usage.prompt_tokens
    assert chunks[-1].usage.completion_tokens == ref.usage.completion_tokens


def test_completions(server, client):
    prompt = "The capital of France is"
    r = client.completions.create(model=MODEL_ID, prompt=prompt, max_tokens=5, temperature=0,
                                  extra_body={"ignore_eos": True})
    assert r.object == "text_completion" and r.choices[0].finish_reason == "length"
    assert r.usage.prompt_tokens == count_tokens(server, prompt, True)
    assert r.usage.completion_tokens == 5
    s = list(client.completions.create(model=MODEL_ID, prompt=prompt, max_tokens=5,
                                       temperature=0, stream=True,
                                       extra_body={"ignore_eos": True}))
    assert "".join(c.choices[0].text for c in s if c.choices) == r.choices[0].text


def check_chat_entries(content, top_n):
    """Each logprobs.content entry: logprob <= 0, top_n alternatives in descending order whose
    probabilities sum to at most 1, the greedy token first; bytes are the token's UTF-8."""
    for t in content:
        assert t.logprob <= 0 and len(t.top_logprobs) == top_n
        alts = [a.logprob for a in t.top_logprobs]
        assert alts == sorted(alts, reverse=True) and all(a <= 0 for a in alts)
        assert sum(math.exp(a) for a in alts) <= 1 + 1e-6
        assert t.top_logprobs[0].token == t.token and t.top_logprobs[0].logprob == t.logprob
        if "\ufffd" not in t.token:
            assert bytes(t.bytes).decode() == t.token


def test_chat_logprobs(client):
    kw = dict(model=MODEL_ID, messages=MSGS, max_tokens=8, temperature=0)
    plain = client.chat.completions.create(**kw)
    assert plain.choices[0].logprobs is None
    r = client.chat.completions.create(**kw, logprobs=True, top_logprobs=3)
    content = r.choices[0].logprobs.content
    assert len(content) == r.usage.completion_tokens
    assert "".join(t.token for t in content) == r.choices[0].message.content
    assert r.choices[0].message.content == plain.choices[0].message.content  # no token changed
    check_chat_entries(content, 3)
    # stream: each chunk carries the logprobs of the tokens whose events it holds
    chunks = list(client.chat.completions.create(**kw, logprobs=True, top_logprobs=3,
                                                 stream=True,
                                                 stream_options={"include_usage": True}))
    streamed = [t for c in chunks if c.choices and c.choices[0].logprobs
                for t in c.choices[0].logprobs.content]
    text = "".join(c.choices[0].delta.content or "" for c in chunks if c.choices)
    assert len(streamed) == chunks[-1].usage.completion_tokens == r.usage.completion_tokens
    assert "".join(t.token for t in streamed) == text == r.choices[0].message.content
    assert [t.logprob for t in streamed] == pytest.approx([t.logprob for t in content], abs=1e-5)
    check_chat_entries(streamed, 3)
    # logprobs alone: the token's own, no alternatives
    one = client.chat.completions.create(**kw, logprobs=True)
    assert all(t.top_logprobs == [] for t in one.choices[0].logprobs.content)
    with pytest.raises(openai.BadRequestError) as e:
        client.chat.completions.create(**kw, top_logprobs=2)
    assert e.value.body["param"] == "top_logprobs"


def test_completions_logprobs(client):
    prompt = "The capital of France is"
    r = client.completions.create(model=MODEL_ID, prompt=prompt, max_tokens=6, temperature=0,
                                  logprobs=2, extra_body={"ignore_eos": True})
    lp = r.choices[0].logprobs
    assert len(lp.tokens) == len(lp.token_logprobs) == len(lp.top_logprobs) == 6
    assert "".join(lp.tokens) == r.choices[0].text
    assert lp.text_offset == [sum(len(t) for t in lp.tokens[:i]) for i in range(6)]
    for tok, tlp, alts in zip(lp.tokens, lp.token_logprobs, lp.top_logprobs):
        assert tlp <= 0 and 1 <= len(alts) <= 3 and alts[tok] == tlp  # greedy: the best one


def test_penalties(client):
    kw = dict(model=MODEL_ID, max_tokens=24, temperature=0, logprobs=0,
              extra_body={"ignore_eos": True})

    def tokens(**more):  # the generated tokens, from the logprobs
        return client.completions.create(prompt="1, 2, 1, 2, 1, 2, 1, 2,", **kw,
                                         **more).choices[0].logprobs.tokens

    def repeats(toks):
        return len(toks) - len(set(toks))

    base = tokens()
    assert repeats(base) > 10  # greedy keeps counting "1, 2,"
    assert tokens(presence_penalty=0, frequency_penalty=0) == base  # accepted; 0 changes nothing
    pen = tokens(frequency_penalty=2)
    assert pen != base and repeats(pen) < repeats(base)
    chat = client.chat.completions.create(model=MODEL_ID, messages=MSGS, max_tokens=6,
                                          temperature=0, presence_penalty=0)
    ref = client.chat.completions.create(model=MODEL_ID, messages=MSGS, max_tokens=6,
                                         temperature=0)
    assert chat.choices[0].message.content == ref.choices[0].message.content


def test_tokenize_round_trip(server):
    text = "Hello world, tokens!"
    st, body, _ = raw(server, "/tokenize", {"content": text})
    assert st == 200 and all(isinstance(t, int) for t in body["tokens"])
    st, back, _ = raw(server, "/detokenize", {"tokens": body["tokens"]})
    assert st == 200 and back["content"] == text
    assert raw(server, "/detokenize", {"tokens": [-1]})[0] == 400


def test_errors(server, client):
    with pytest.raises(openai.BadRequestError) as e:
        client.chat.completions.create(model=MODEL_ID, messages=MSGS, temperature=3)
    assert e.value.body["param"] == "temperature"
    with pytest.raises(openai.BadRequestError) as e:
        client.chat.completions.create(model=MODEL_ID, messages=MSGS, n=2)
    assert e.value.body["param"] == "n"
    with pytest.raises(openai.NotFoundError) as e:
        client.chat.completions.create(model="no-such-model", messages=MSGS)
    assert e.value.body["code"] == "model_not_found"
    with pytest.raises(openai.BadRequestError) as e:
        client.chat.completions.create(model=MODEL_ID, messages=MSGS, tools=[
            {"type": "function", "function": {"name": "f", "parameters": {}}}],
            tool_choice={"type": "function", "function": {"name": "g"}})
    assert e.value.body["param"] == "tool_choice.function.name"
    with pytest.raises(openai.BadRequestError) as e:
        client.chat.completions.create(model=MODEL_ID, messages=[
            {"role": "user", "content": "word " * 600}], max_tokens=4)
    assert e.value.body["code"] == "context_length_exceeded"
    bad = openai.OpenAI(base_url=server + "/v1", api_key="wrong", max_retries=0)
    with pytest.raises(openai.AuthenticationError):
        bad.models.list()
    st, body, _ = raw(server, "/v1/models", key=None)
    assert st == 401 and body["error"]["code"] == "invalid_api_key"
    st, body, _ = raw(server, "/nope")
    assert st == 404 and "error" in body
    st, body, hdr = raw(server, "/v1/chat/completions", method="GET")
    assert st == 405 and hdr["Allow"] == "POST"
    st, body, _ = raw(server, "/v1/chat/completions", data=b"x" * 70000)
    assert st == 413 and "error" in body
    st, body, _ = raw(server, "/v1/chat/completions", data=b"{not json")
    assert st == 400 and body["error"]["code"] == "invalid_json"


def test_response_format(client):
    schema = {"type": "object", "properties": {"city": {"type": "string", "maxLength": 30},
                                               "population": {"type": "integer"}},
              "required": ["city", "population"]}
    r = client.chat.completions.create(
        model=MODEL_ID, max_tokens=60, temperature=0,
        messages=[{"role": "user", "content": "Give a city and its population as JSON."}],
        response_format={"type": "json_schema", "json_schema": {"name": "c", "schema": schema}})
    assert r.choices[0].finish_reason == "stop"
    v = json.loads(r.choices[0].message.content)
    assert set(v) == {"city", "population"}
    assert isinstance(v["city"], str) and isinstance(v["population"], int)
    r = client.chat.completions.create(model=MODEL_ID, messages=MSGS, max_tokens=40, seed=1,
                                       response_format={"type": "json_object"})
    assert r.choices[0].message.content.startswith("{")
    if r.choices[0].finish_reason == "stop":
        assert isinstance(json.loads(r.choices[0].message.content), dict)
    with pytest.raises(openai.BadRequestError) as e:
        client.chat.completions.create(
            model=MODEL_ID, messages=MSGS,
            response_format={"type": "json_schema", "json_schema": {
                "name": "p", "schema": {"type": "string", "pattern": "^a"}}})
    assert e.value.body["param"] == "response_format" and "pattern" in e.value.body["message"]


def test_concurrent_streams(client):
    def one(i):
        s = client.chat.completions.create(
            model=MODEL_ID, messages=[{"role": "user", "content": f"Count to {i}."}],
            max_tokens=8, temperature=0, stream=True, stream_options={"include_usage": True},
            extra_body={"ignore_eos": True})
        chunks = list(s)
        return chunks[-1].usage, "".join(c.choices[0].delta.content or ""
                                         for c in chunks if c.choices)

    with concurrent.futures.ThreadPoolExecutor(16) as ex:
        results = list(ex.map(one, range(16)))
    for usage, text in results:
        assert usage.completion_tokens == 8 and usage.prompt_tokens > 0
        assert usage.total_tokens == usage.prompt_tokens + 8


def test_disconnect_cancels(server, client):
    s = client.chat.completions.create(model=MODEL_ID, messages=MSGS, max_tokens=400,
                                       temperature=0, stream=True,
                                       extra_body={"ignore_eos": True})
    next(iter(s))
    s.close()  # the server must cancel; the next request is served promptly
    r = client.chat.completions.create(model=MODEL_ID, messages=MSGS, max_tokens=2,
                                       temperature=0)
    assert r.usage.completion_tokens >= 1


def test_sigterm_drains():
    """SIGTERM while a request runs: it completes, new connections are refused, exit 0."""
    port = free_port()
    proc = subprocess.Popen([BIN, "serve", "-m", MODEL, "--port", str(port), "--ctx", "256",
                             "--drain-ms", "120000"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    base = f"http://127.0.0.1:{port}"
    wait_healthy(proc, base)
    c = openai.OpenAI(base_url=base + "/v1", api_key="x", max_retries=0)
    with concurrent.futures.ThreadPoolExecutor(1) as ex:
        fut = ex.submit(c.chat.completions.create, model=MODEL_ID, messages=MSGS, max_tokens=12,
                        temperature=0, extra_body={"ignore_eos": True})
        time.sleep(0.5)
        proc.terminate()
        r = fut.result(timeout=60)
    assert r.usage.completion_tokens == 12
    out, err = proc.communicate(timeout=30)
    assert proc.returncode == 0, err
    assert "draining" in err


def test_full_queue_429():
    """One slot and a queue of one: of several simultaneous requests some get 429 with
    Retry-After, the others complete."""
    port = free_port()
    proc = subprocess.Popen([BIN, "serve", "-m", MODEL, "--port", str(port), "--ctx", "256",
                             "--parallel", "1", "--max-queue", "1"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    base = f"http://127.0.0.1:{port}"
    try:
        wait_healthy(proc, base)
        body = {"messages": MSGS, "max_tokens": 16, "temperature": 0, "ignore_eos": True}
        with concurrent.futures.ThreadPoolExecutor(6) as ex:
            res = list(ex.map(lambda _: raw(base, "/v1/chat/completions", body), range(6)))
        statuses = sorted(r[0] for r in res)
        assert 429 in statuses and 200 in statuses, statuses
        for st, b, hdr in res:
            if st == 429:
                assert hdr["Retry-After"] == "1"
                assert b["error"]["code"] == "server_is_overloaded"
            else:
                assert st == 200 and b["usage"]["completion_tokens"] == 16
    finally:
        proc.terminate()
        proc.communicate(timeout=30)
    assert proc.returncode == 0


def metrics(base):
    """/metrics as {sample name with labels: value} (open like /health: no key)."""
    with urllib.request.urlopen(base + "/metrics", timeout=10) as r:
        assert r.status == 200 and r.headers["Content-Type"].startswith("text/plain")
        return prom_samples(r.read().decode())


def test_metrics_after_disconnects(server, client):
    """100 streaming clients each go away after their first content chunk: the engine's
    running and waiting gauges return to 0 within seconds and the server still answers."""
    before = metrics(server)

    def one(i):
        s = client.chat.completions.create(
            model=MODEL_ID, messages=[{"role": "user", "content": f"Tell a story about {i}."}],
            max_tokens=400, temperature=0, stream=True, extra_body={"ignore_eos": True})
        try:
            for c in s:
                if c.choices and c.choices[0].delta.content:
                    return True
            return False
        finally:
            s.close()

    with concurrent.futures.ThreadPoolExecutor(100) as ex:
        got = list(ex.map(one, range(100)))
    assert all(got)
    deadline = time.time() + 10
    while True:
        m = metrics(server)
        if m["roofline:num_requests_running"] == 0 and m["roofline:num_requests_waiting"] == 0:
            break
        assert time.time() < deadline, f"still running/waiting: {m}"
        time.sleep(0.1)
    key = 'roofline:request_success_total{finished_reason="abort"}'
    assert m[key] - before[key] == 100
    r = client.chat.completions.create(model=MODEL_ID, messages=MSGS, max_tokens=2,
                                       temperature=0)
    assert r.usage.completion_tokens >= 1


def test_prefix_cache_over_http(server, client):
    """A conversation re-sent with one more turn reuses the KV of the first reply's prompt."""
    msgs = [{"role": "user", "content": "Name three colours."}]
    r1 = client.chat.completions.create(model=MODEL_ID, messages=msgs, max_tokens=8,
                                        temperature=0)
    hits = metrics(server)["roofline:prefix_cache_hits_total"]
    msgs += [{"role": "assistant", "content": r1.choices[0].message.content},
             {"role": "user", "content": "And three more."}]
    r2 = client.chat.completions.create(model=MODEL_ID, messages=msgs, max_tokens=8,
                                        temperature=0)
    cache_n = r2.model_extra["timings"]["cache_n"]
    assert 0 < cache_n < r2.usage.prompt_tokens
    assert r2.model_extra["timings"]["prompt_n"] == r2.usage.prompt_tokens - cache_n
    assert cache_n >= r1.usage.prompt_tokens - 1  # at least the first turn's prompt
    m = metrics(server)
    assert m["roofline:prefix_cache_hits_total"] - hits >= cache_n
    assert m["roofline:prompt_tokens_total"] >= r1.usage.prompt_tokens + r2.usage.prompt_tokens
