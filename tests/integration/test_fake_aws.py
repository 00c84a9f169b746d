"""test_fake_aws.py: the fake AWS endpoint (fake_aws.py) checked against an independent signer and
parser, botocore: requests botocore signs pass its SigV4 verifier, tampered ones fail with AWS's
403; its event-stream frames parse with botocore's own decoder; its replies parse with botocore's
service models (Converse, ConverseStream, InvokeEndpoint, the response stream, GetProducts)."""
import json
import os
import sys
import time
import urllib.error
import urllib.request

import pytest

botocore = pytest.importorskip("botocore")
import botocore.auth  # noqa: E402
import botocore.awsrequest  # noqa: E402
import botocore.config  # noqa: E402
import botocore.credentials  # noqa: E402
import botocore.eventstream  # noqa: E402
import botocore.exceptions  # noqa: E402
import botocore.session  # noqa: E402

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import fake_aws  # noqa: E402
from fake_aws import TEST_ACCESS_KEY, TEST_SECRET_KEY, TEST_SESSION_TOKEN  # noqa: E402

NOVA = "amazon.nova-micro-v1:0"
ARN = "arn:aws:bedrock:us-east-1:123456789012:inference-profile/us.amazon.nova-micro-v1:0"
MSG = [{"role": "user", "content": [{"text": "What is the capital of France?"}]}]
NO_RETRY = botocore.config.Config(retries={"total_max_attempts": 1})


@pytest.fixture(params=[None, TEST_SESSION_TOKEN], ids=["keys", "session-token"])
def fake(request):
    with fake_aws.FakeAws(session_token=request.param, gap_s=0) as f:
        yield f


SESSION = botocore.session.Session()  # one session: its loader keeps the service models


def client(fake, service, region="us-east-1", token="same", config=NO_RETRY, secret=None):
    return SESSION.create_client(service, region_name=region, endpoint_url=fake.url,
                           aws_access_key_id=TEST_ACCESS_KEY,
                           aws_secret_access_key=secret or TEST_SECRET_KEY,
                           aws_session_token=fake.session_token if token == "same" else token,
                           config=config)


def status_of(exc):
    return exc.response["ResponseMetadata"]["HTTPStatusCode"], exc.response["Error"]["Code"]


# ---------------------------------------------------------------- botocore-signed requests pass

@pytest.mark.parametrize("model", [NOVA, ARN, "us.amazon.nova-micro-v1:0"])
def test_converse_signed_by_botocore_passes(fake, model):
    r = client(fake, "bedrock-runtime").converse(modelId=model, messages=MSG,
                                                 inferenceConfig={"maxTokens": 64})
    assert r["stopReason"] == "end_turn"
    assert "Paris" in r["output"]["message"]["content"][0]["text"]
    assert r["usage"]["outputTokens"] == len(r["output"]["message"]["content"][0]["text"].split())
    log = fake.log[-1]
    assert log["status"] == 200 and log["name"] == model and log["op"] == "Converse"
    assert ("x-amz-security-token" in log["signed_headers"]) == (fake.session_token is not None)


def test_converse_stream_parses_with_botocore(fake):
    r = client(fake, "bedrock-runtime").converse_stream(modelId=NOVA, messages=MSG)
    events = list(r["stream"])
    kinds = [next(iter(e)) for e in events]
    assert kinds[0] == "messageStart" and kinds[-2:] == ["messageStop", "metadata"]
    text = "".join(e["contentBlockDelta"]["delta"]["text"] for e in events
                   if "contentBlockDelta" in e)
    assert text == fake_aws.load_recorded("converse_text.json")["response"]["output"][
        "message"]["content"][0]["text"]
    assert events[-1]["metadata"]["usage"]["outputTokens"] == len(text.split())


def test_converse_tool_use_stream(fake):
    tools = {"tools": [{"toolSpec": {"name": "count_ids", "description": "count",
                                     "inputSchema": {"json": {"type": "object"}}}}]}
    r = client(fake, "bedrock-runtime").converse_stream(modelId=NOVA, messages=MSG,
                                                        toolConfig=tools)
    events = list(r["stream"])
    start = [e["contentBlockStart"] for e in events if "contentBlockStart" in e]
    assert start and start[0]["start"]["toolUse"]["name"] == "count_ids"
    idx = start[0]["contentBlockIndex"]
    args = "".join(e["contentBlockDelta"]["delta"]["toolUse"]["input"] for e in events
                   if "contentBlockDelta" in e and e["contentBlockDelta"]["contentBlockIndex"] == idx)
    assert json.loads(args) == {"ids": [12, 3, 27, 10, 9, 41, 15, 7, 33, 13, 20], "op": ">=",
                                "threshold": 10}
    assert events[-2]["messageStop"]["stopReason"] == "tool_use"
    # the turn after the tool's result
    msgs = MSG + [{"role": "assistant", "content": [{"toolUse": {
        "toolUseId": start[0]["start"]["toolUse"]["toolUseId"], "name": "count_ids",
        "input": json.loads(args)}}]},
                  {"role": "user", "content": [{"toolResult": {
                      "toolUseId": start[0]["start"]["toolUse"]["toolUseId"],
                      "content": [{"text": "8"}]}}]}]
    r = client(fake, "bedrock-runtime").converse(modelId=NOVA, messages=msgs, toolConfig=tools)
    assert r["output"]["message"]["content"][0]["text"].startswith("8 of the ids")


def test_sagemaker_invoke_endpoint(fake):
    body = json.dumps({"messages": [{"role": "user", "content": "hi"}], "max_tokens": 64})
    r = client(fake, "sagemaker-runtime").invoke_endpoint(
        EndpointName="my-endpoint", Body=body, ContentType="application/json")
    out = json.loads(r["Body"].read())
    assert out["object"] == "chat.completion" and "Paris" in out["choices"][0]["message"]["content"]
    assert out["usage"]["completion_tokens"] > 1


def test_sagemaker_response_stream_payload_parts(fake):
    body = json.dumps({"messages": [{"role": "user", "content": "hi"}], "stream": True})
    r = client(fake, "sagemaker-runtime").invoke_endpoint_with_response_stream(
        EndpointName="my.endpoint-1", Body=body, ContentType="application/json")
    parts = [e["PayloadPart"]["Bytes"] for e in r["Body"]]
    assert len(parts) > 10  # cut at awkward offsets
    sse = b"".join(parts).decode("utf-8")  # a character cut between parts joins again
    datas = [ln[6:] for ln in sse.split("\n") if ln.startswith("data: ")]
    assert datas[-1] == "[DONE]"
    text = "".join(c["choices"][0]["delta"].get("content", "")
                   for c in map(json.loads, datas[:-1]) if c["choices"])
    assert "Café" in text and "4€" in text
    assert json.loads(datas[-2])["usage"]["completion_tokens"] > 1


def test_get_products_paged(fake):
    pricing = client(fake, "pricing")
    pages = list(pricing.get_paginator("get_products").paginate(
        ServiceCode="AmazonEC2", FormatVersion="aws_v1",
        Filters=[{"Type": "TERM_MATCH", "Field": "instanceType", "Value": "g6.xlarge"},
                 {"Type": "TERM_MATCH", "Field": "regionCode", "Value": "us-east-1"}]))
    assert len(pages) >= 2  # the fake pages by 2: NextToken was followed
    products = [json.loads(s) for p in pages for s in p["PriceList"]]
    linux = [p for p in products if p["product"]["attributes"]["operatingSystem"] == "Linux"
             and p["product"]["attributes"]["capacitystatus"] == "Used"]
    assert len(linux) == 1
    (term,) = linux[0]["terms"]["OnDemand"].values()
    (dim,) = term["priceDimensions"].values()
    assert float(dim["pricePerUnit"]["USD"]) == 0.8048 and dim["unit"] == "Hrs"


# ---------------------------------------------------------------- tampered requests fail

def _tamper(fake, fn, model=NOVA):
    c = client(fake, "bedrock-runtime")
    c.meta.events.register("before-send.bedrock-runtime.Converse", fn)
    with pytest.raises(botocore.exceptions.ClientError) as e:
        c.converse(modelId=model, messages=MSG)
    return e.value


def test_body_byte_changed_fails(fake):
    def fn(request, **kw):
        b = bytearray(request.body)
        b[b.index(b"capital")] = ord("C")
        request.body = bytes(b)
    e = _tamper(fake, fn)
    assert status_of(e) == (403, "InvalidSignatureException")
    assert "signature we calculated does not match" in e.response["Error"]["Message"]


def test_header_changed_after_signing_fails(fake):
    def fn(request, **kw):
        request.headers["Content-Type"] = "application/x-amz-json-1.0"
    assert status_of(_tamper(fake, fn)) == (403, "InvalidSignatureException")


def test_signed_header_removed_fails(fake):
    def fn(request, **kw):
        del request.headers["Content-Type"]
    assert status_of(_tamper(fake, fn))[0] == 403


def test_wrong_secret_fails(fake):
    with pytest.raises(botocore.exceptions.ClientError) as e:
        client(fake, "bedrock-runtime", secret="x" + TEST_SECRET_KEY[1:]).converse(
            modelId=NOVA, messages=MSG)
    assert status_of(e.value) == (403, "InvalidSignatureException")


def test_wrong_region_fails(fake):
    with pytest.raises(botocore.exceptions.ClientError) as e:
        client(fake, "bedrock-runtime", region="us-west-2").converse(modelId=NOVA, messages=MSG)
    assert status_of(e.value) == (403, "InvalidSignatureException")
    assert "region" in e.value.response["Error"]["Message"]


def test_session_token_checked(fake):
    wrong = None if fake.session_token else TEST_SESSION_TOKEN
    with pytest.raises(botocore.exceptions.ClientError) as e:
        client(fake, "bedrock-runtime", token=wrong).converse(modelId=NOVA, messages=MSG)
    assert status_of(e.value) == (403, "UnrecognizedClientException")


def _signed(fake, auth_cls, service, path, body=b"{}", when=None):
    """A request signed by botocore's signer class auth_cls, sent with urllib; (status, body)."""
    creds = botocore.credentials.Credentials(TEST_ACCESS_KEY, TEST_SECRET_KEY,
                                             fake.session_token)
    req = botocore.awsrequest.AWSRequest(method="POST", url=fake.url + path, data=body,
                                         headers={"Content-Type": "application/json"})
    signer = auth_cls(creds, service, "us-east-1")
    signer.add_auth(req)
    p = req.prepare()
    rq = urllib.request.Request(p.url, data=p.body, headers=dict(p.headers), method="POST")
    try:
        with urllib.request.urlopen(rq) as r:
            return r.status, json.loads(r.read())
    except urllib.error.HTTPError as e:
        return e.code, json.loads(e.read())


def test_path_encoded_once_fails_twice_passes(fake):
    # ':' in a model id is %3A on the wire; AWS signs the path encoded again (%253A). A signer
    # that puts the path in the canonical request as sent (S3's rule; libcurl 7.88) is refused.
    path = "/model/amazon.nova-micro-v1%3A0/converse"
    body = json.dumps({"messages": MSG}).encode()
    st, out = _signed(fake, botocore.auth.SigV4Auth, "bedrock", path, body)
    assert st == 200 and out["stopReason"] == "end_turn"
    st, out = _signed(fake, botocore.auth.S3SigV4Auth, "bedrock", path, body)
    assert st == 403 and "does not match" in out["message"]
    assert "/model/amazon.nova-micro-v1%253A0/converse" in out["message"]  # what AWS wanted
    # a path with nothing to escape is the same either way
    st, _ = _signed(fake, botocore.auth.S3SigV4Auth, "bedrock", "/model/plain/converse", body)
    assert st == 200


def test_wrong_service_fails(fake):
    st, out = _signed(fake, botocore.auth.SigV4Auth, "sagemaker",
                      "/model/amazon.nova-micro-v1%3A0/converse", json.dumps({"messages": MSG}).encode())
    assert st == 403 and "service" in out["message"]


def test_date_skew_fails(fake):
    creds = botocore.credentials.Credentials(TEST_ACCESS_KEY, TEST_SECRET_KEY, fake.session_token)
    req = botocore.awsrequest.AWSRequest(method="POST", url=fake.url + "/model/x/converse",
                                         data=b"{}", headers={"Content-Type": "application/json"})
    botocore.auth.SigV4Auth(creds, "bedrock", "us-east-1").add_auth(req)
    p = req.prepare()
    items = list(p.headers.items()) + [("Host", fake.url[7:])]
    kw = dict(access_key=TEST_ACCESS_KEY, secret_key=TEST_SECRET_KEY, region="us-east-1",
              service="bedrock", session_token=fake.session_token)
    fake_aws.verify_sigv4("POST", "/model/x/converse", "", items, b"{}", **kw)
    with pytest.raises(fake_aws.SigError) as e:
        fake_aws.verify_sigv4("POST", "/model/x/converse", "", items, b"{}",
                              now=time.time() + 3600, **kw)
    assert e.value.status == 403 and "Signature expired" in e.value.message
    with pytest.raises(fake_aws.SigError):
        fake_aws.verify_sigv4("POST", "/model/x/converse", "", items, b"{}",
                              now=time.time() - 3600, **kw)


def test_query_string_signed(fake):
    creds = botocore.credentials.Credentials(TEST_ACCESS_KEY, TEST_SECRET_KEY, fake.session_token)
    url = fake.url + "/model/x/converse?b=2&a=%2F1&a=0"
    req = botocore.awsrequest.AWSRequest(method="POST", url=url, data=b"{}", headers={})
    botocore.auth.SigV4Auth(creds, "bedrock", "us-east-1").add_auth(req)
    p = req.prepare()
    kw = dict(access_key=TEST_ACCESS_KEY, secret_key=TEST_SECRET_KEY, region="us-east-1",
              service="bedrock", session_token=fake.session_token)
    items = list(p.headers.items()) + [("Host", fake.url[7:])]
    fake_aws.verify_sigv4("POST", "/model/x/converse", "b=2&a=%2F1&a=0", items, b"{}", **kw)
    with pytest.raises(fake_aws.SigError):
        fake_aws.verify_sigv4("POST", "/model/x/converse", "b=3&a=%2F1&a=0", items, b"{}", **kw)


def test_aws_sigv4_test_vector():
    # AWS's published SigV4 suite, "get-vanilla-query-order-key-case"
    items = [("Host", "example.amazonaws.com"), ("X-Amz-Date", "20150830T123600Z"),
             ("Authorization", "AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE/20150830/us-east-1/"
              "service/aws4_request, SignedHeaders=host;x-amz-date, Signature="
              "b97d918cfa904a5beff61c982a1b6f458b799221646efd99d3219ec94cdf2500")]
    fake_aws.verify_sigv4("GET", "/", "Param2=value2&Param1=value1", items, b"",
                          access_key="AKIDEXAMPLE", secret_key=TEST_SECRET_KEY,
                          region="us-east-1", service="service",
                          now=1440938160)


def test_unsigned_request_refused(fake):
    rq = urllib.request.Request(fake.url + "/model/x/converse", data=b"{}", method="POST")
    with pytest.raises(urllib.error.HTTPError) as e:
        urllib.request.urlopen(rq)
    assert e.value.code == 403
    assert e.value.headers["x-amzn-ErrorType"].startswith("MissingAuthenticationTokenException")
    assert e.value.headers["x-amzn-RequestId"]


# ---------------------------------------------------------------- scenarios

@pytest.mark.parametrize("step,status,code", [
    ("throttle", 429, "ThrottlingException"), ("not_ready", 429, "ModelNotReadyException"),
    ("validation", 400, "ValidationException"), ("access_denied", 403, "AccessDeniedException"),
    ("model_error", 424, "ModelErrorException"), ("unavailable", 503,
                                                  "ServiceUnavailableException")])
def test_bedrock_error_steps(fake, step, status, code):
    fake.script(NOVA, [step])
    with pytest.raises(botocore.exceptions.ClientError) as e:
        client(fake, "bedrock-runtime").converse(modelId=NOVA, messages=MSG)
    assert status_of(e.value) == (status, code)
    assert e.value.response["ResponseMetadata"]["RequestId"]


def test_throttles_then_success_with_botocore_retries(fake):
    fake.script(NOVA, ["throttle", "throttle"])
    c = client(fake, "bedrock-runtime", config=botocore.config.Config(
        retries={"total_max_attempts": 4, "mode": "standard"}))
    r = c.converse(modelId=NOVA, messages=MSG)
    assert r["ResponseMetadata"]["RetryAttempts"] == 2
    assert [e["step"] for e in fake.log] == ["throttle", "throttle", "ok"]


def test_sagemaker_model_error(fake):
    fake.script("my-endpoint", ["model_error"])
    with pytest.raises(botocore.exceptions.ClientError) as e:
        client(fake, "sagemaker-runtime").invoke_endpoint(EndpointName="my-endpoint", Body=b"{}")
    assert status_of(e.value) == (424, "ModelError")
    assert e.value.response["OriginalStatusCode"] == 500


@pytest.mark.parametrize("step,code", [("stream_error", "modelStreamErrorException"),
                                       ("stream_failure", "internalServerException")])
def test_bedrock_stream_exception_frame(fake, step, code):
    fake.script(NOVA, [step])
    r = client(fake, "bedrock-runtime").converse_stream(modelId=NOVA, messages=MSG)
    got = []
    with pytest.raises(botocore.exceptions.EventStreamError) as e:
        for ev in r["stream"]:
            got.append(ev)
    assert len(got) == 2 and e.value.response["Error"]["Code"] == code


@pytest.mark.parametrize("step,code", [("stream_error", "ModelStreamError"),
                                       ("stream_failure", "InternalStreamFailure")])
def test_sagemaker_stream_exception_frame(fake, step, code):
    fake.script("ep", [step])
    r = client(fake, "sagemaker-runtime").invoke_endpoint_with_response_stream(
        EndpointName="ep", Body=b"{}")
    with pytest.raises(botocore.exceptions.EventStreamError) as e:
        for _ in r["Body"]:
            pass
    assert e.value.response["Error"]["Code"] == code


def test_corrupted_frame_fails_crc(fake):
    fake.script(NOVA, ["bad_crc"])
    r = client(fake, "bedrock-runtime").converse_stream(modelId=NOVA, messages=MSG)
    with pytest.raises(botocore.eventstream.ChecksumMismatch):
        for _ in r["stream"]:
            pass


# ---------------------------------------------------------------- the encoder, by botocore

def test_event_stream_encoder_round_trips():
    frames = [fake_aws.es_event("contentBlockDelta", {"contentBlockIndex": 0,
                                                      "delta": {"text": "é€😀"}}),
              fake_aws.es_event("PayloadPart", b"data: {\"x\":1}\n\n", "application/octet-stream"),
              fake_aws.es_exception("ModelStreamError", {"Message": "m"}),
              fake_aws.es_event("empty", b"")]
    buf = botocore.eventstream.EventStreamBuffer()
    for piece in fake_aws.awkward_cuts(b"".join(frames), (1, 3, 7)):
        buf.add_data(piece)
    msgs = list(buf)
    assert len(msgs) == 4
    assert msgs[0].headers[":event-type"] == "contentBlockDelta"
    assert json.loads(msgs[0].payload)["delta"]["text"] == "é€😀"
    assert msgs[1].payload == b"data: {\"x\":1}\n\n"
    assert msgs[2].headers[":message-type"] == "exception"
    assert msgs[3].payload == b""
    bad = botocore.eventstream.EventStreamBuffer()
    bad.add_data(fake_aws.es_frame([(":event-type", "x")], b"{}", corrupt=True))
    with pytest.raises(botocore.eventstream.ChecksumMismatch):
        list(bad)


# ---------------------------------------------------------------- the translation to OpenAI

def test_converse_openai_translation():
    req = {"system": [{"text": "sys"}], "messages": MSG + [
        {"role": "assistant", "content": [{"toolUse": {"toolUseId": "t1", "name": "f",
                                                       "input": {"a": 1}}}]},
        {"role": "user", "content": [{"toolResult": {"toolUseId": "t1",
                                                     "content": [{"text": "3"}]}}]}],
           "inferenceConfig": {"maxTokens": 5, "temperature": 0},
           "toolConfig": {"tools": [{"toolSpec": {"name": "f", "inputSchema": {"json": {}}}}],
                          "toolChoice": {"any": {}}}}
    body = fake_aws.converse_to_openai(req, "m", True)
    assert [m["role"] for m in body["messages"]] == ["system", "user", "assistant", "tool"]
    assert body["messages"][2]["tool_calls"][0]["function"] == {"name": "f",
                                                                "arguments": '{"a": 1}'}
    assert body["tool_choice"] == "required" and body["max_tokens"] == 5
    chunks = ['{"choices":[{"delta":{"content":"he"}}]}',
              '{"choices":[{"delta":{"tool_calls":[{"index":0,"id":"c","function":'
              '{"name":"f","arguments":"{\\"a\\""}}]}}]}',
              '{"choices":[{"delta":{"tool_calls":[{"index":0,"function":{"arguments":":1}"}}]},'
              '"finish_reason":"tool_calls"}]}',
              '{"choices":[],"usage":{"prompt_tokens":3,"completion_tokens":4,"total_tokens":7}}',
              "[DONE]"]
    ev = list(fake_aws.openai_stream_to_converse(iter(chunks)))
    kinds = [k for k, _ in ev]
    assert kinds[0] == "messageStart" and kinds[-1] == "metadata"
    assert ev[-2][1]["stopReason"] == "tool_use" and ev[-1][1]["usage"]["outputTokens"] == 4
    args = "".join(p["delta"]["toolUse"]["input"] for k, p in ev
                   if k == "contentBlockDelta" and "toolUse" in p["delta"])
    assert json.loads(args) == {"a": 1}


# ---------------------------------------------------------------- --upstream: an OpenAI server

@pytest.fixture
def upstream():
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..",
                                    "tools"))
    import benchlib
    if not os.path.exists(benchlib.ROOFLINE):
        pytest.skip(f"{benchlib.ROOFLINE} is not built")
    import tempfile
    with tempfile.NamedTemporaryFile(suffix=".log") as log:
        fs = benchlib.FakeServer(["--ttft-ms", "1", "--gap-ms", "1"], log.name)
        try:
            with fake_aws.FakeAws(upstream=fs.url, gap_s=0) as f:
                yield f
        finally:
            fs.stop()


def test_upstream_converse_and_sagemaker(upstream):
    br = client(upstream, "bedrock-runtime")
    r = br.converse(modelId=NOVA, messages=MSG, inferenceConfig={"maxTokens": 5})
    assert r["output"]["message"]["content"][0]["text"].split() == ["tok"] * 5
    assert r["usage"]["outputTokens"] == 5 and r["stopReason"] in ("end_turn", "max_tokens")
    r = br.converse_stream(modelId=NOVA, messages=MSG, inferenceConfig={"maxTokens": 4})
    ev = list(r["stream"])
    text = "".join(e["contentBlockDelta"]["delta"].get("text", "") for e in ev
                   if "contentBlockDelta" in e)
    assert text.split() == ["tok"] * 4 and ev[-1]["metadata"]["usage"]["outputTokens"] == 4
    # a tool call the upstream makes (the fake backend's "fake" field, sent through
    # additionalModelRequestFields) comes back as a toolUse block
    tools = {"tools": [{"toolSpec": {"name": "count_ids", "inputSchema": {"json": {
        "type": "object"}}}}]}
    r = br.converse_stream(modelId=NOVA, messages=MSG, toolConfig=tools,
                           additionalModelRequestFields={"fake": {"tool_call": {
                               "name": "count_ids", "arguments": {"op": ">=", "threshold": 10}}}})
    ev = list(r["stream"])
    start = [e["contentBlockStart"]["start"]["toolUse"] for e in ev if "contentBlockStart" in e]
    assert start and start[0]["name"] == "count_ids"
    args = "".join(e["contentBlockDelta"]["delta"]["toolUse"]["input"] for e in ev
                   if "contentBlockDelta" in e and "toolUse" in e["contentBlockDelta"]["delta"])
    assert json.loads(args) == {"op": ">=", "threshold": 10}
    assert ev[-2]["messageStop"]["stopReason"] == "tool_use"
    sm = client(upstream, "sagemaker-runtime")
    body = json.dumps({"model": "m", "messages": [{"role": "user", "content": "hi"}],
                       "max_tokens": 3})
    out = json.loads(sm.invoke_endpoint(EndpointName="ep", Body=body,
                                        ContentType="application/json")["Body"].read())
    assert out["choices"][0]["message"]["content"].split() == ["tok"] * 3
    r = sm.invoke_endpoint_with_response_stream(EndpointName="ep", Body=body,
                                                ContentType="application/json")
    sse = b"".join(e["PayloadPart"]["Bytes"] for e in r["Body"]).decode()
    datas = [ln[6:] for ln in sse.split("\n") if ln.startswith("data: ")]
    assert datas[-1] == "[DONE]"
    text = "".join(c["choices"][0]["delta"].get("content") or "" for c in map(json.loads, datas[:-1])
                   if c.get("choices"))
    assert text.split() == ["tok"] * 3


def test_recorded_tool_result_quotes_the_count():
    assert fake_aws.tool_result_value({"content": [{"text": '{"count": 8, "filter": "id >= 10"}'}]}) == "8"
    assert fake_aws.tool_result_value({"content": [{"json": {"count": 3}}]}) == "3"
    assert fake_aws.tool_result_value({"content": [{"text": "seven"}]}) == "seven"
