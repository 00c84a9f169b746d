#!/usr/bin/env python3
"""fake_aws.py: a local fake of the AWS endpoints the bench talks to (Bedrock Runtime Converse and
ConverseStream, SageMaker Runtime InvokeEndpoint and InvokeEndpointWithResponseStream, the Price
List GetProducts), on loopback, for tests only.

Every request is checked as AWS checks it: the SigV4 signature is recomputed from the request as
received (method, path encoded a second time as AWS does for every service but S3, query,
headers, body hash), with the test credentials, the expected region and the service the route
belongs to; a session token must match when one is configured; the date must be within the
allowed skew. A request that fails gets AWS's error shape (403 InvalidSignatureException with
{"message": "The request signature we calculated does not match ..."}, x-amzn-ErrorType,
x-amzn-RequestId). The verifier is written from the SigV4 specification, not from botocore, so
that botocore can check it (tests/integration/test_fake_aws.py).

Replies: without --upstream, recorded replies (tests/data/aws_fake/*.json, in the shapes of the
botocore service models); with --upstream URL (an OpenAI-compatible server: `roofline
fake-backend`, `roofline serve`), Converse is translated to chat/completions and back, and
SageMaker bodies are passed through (the AWS vLLM container takes an OpenAI chat body), the
stream's SSE bytes wrapped in PayloadPart frames cut at awkward offsets.

Scenario controls (unsigned, under /_fake/, loopback only):
  POST /_fake/script  {"name": NAME, "steps": [STEP, ...]}  the next requests for NAME (a model
                      id or endpoint name, "*" for any) take these steps, one each, in order
  POST /_fake/always  {"name": NAME, "step": STEP}          every request for NAME takes STEP
  POST /_fake/reset   forget scripts and the log
  GET  /_fake/log     every request: {service, op, name, step, status, error, signed_headers}
Steps: ok, tool (a tool call even without tools), throttle (429 ThrottlingException), not_ready
(429 ModelNotReadyException), validation (400), access_denied (403), model_error (424),
unavailable (503), internal (500); streams only (a non-stream request takes them as ok):
stream_error (ModelStreamErrorException / ModelStreamError after two events),
stream_failure (InternalServerException / InternalStreamFailure after two events), bad_crc (a
frame whose message CRC is wrong, after two events).

Run alone: python3 tests/integration/fake_aws.py [--port 0] [--region us-east-1]
[--session-token TOKEN] [--upstream http://127.0.0.1:PORT/v1] [--script NAME=STEP,STEP]
[--always NAME=STEP]; it prints "listening on http://127.0.0.1:PORT" and serves until SIGINT.
The credentials it accepts are TEST_ACCESS_KEY / TEST_SECRET_KEY below (or --access-key /
--secret-key).
"""
import argparse
import binascii
import calendar
import collections
import copy
import hashlib
import hmac
import http.server
import json
import os
import re
import struct
import sys
import threading
import time
import urllib.parse
import urllib.request
import uuid
import zlib

HERE = os.path.dirname(os.path.abspath(__file__))
DATA = os.path.join(HERE, "..", "data", "aws_fake")

# AWS's own published example credentials (the SigV4 test suite's): never real ones.
TEST_ACCESS_KEY = "AKIDEXAMPLE"
TEST_SECRET_KEY = "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY"
TEST_SESSION_TOKEN = "IQoJb3JpZ2luX2VjEFAKE//roofline+test/session=token"

SIG_MISMATCH = ("The request signature we calculated does not match the signature you provided. "
                "Check your AWS Secret Access Key and signing method. Consult the service "
                "documentation for details.")

# ------------------------------------------------------------------ SigV4, from the specification

_UNRESERVED = frozenset(b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_.~")


def uri_encode(data, keep_slash):
    """SigV4's UriEncode: every byte but the unreserved ones as %XY (upper-case hex); '/' kept
    when encoding a path."""
    if isinstance(data, str):
        data = data.encode("utf-8")
    out = []
    for b in data:
        if b in _UNRESERVED or (keep_slash and b == 0x2F):
            out.append(chr(b))
        else:
            out.append("%%%02X" % b)
    return "".join(out)


def normalize_path(path):
    """RFC 3986 normalization as SigV4 asks for it: '.' and empty segments dropped, '..' removes
    the one before; a trailing '/' kept."""
    segs = []
    for s in path.split("/"):
        if s in ("", "."):
            continue
        if s == "..":
            if segs:
                segs.pop()
            continue
        segs.append(s)
    out = "/" + "/".join(segs)
    if path.endswith("/") and out != "/":
        out += "/"
    return out


def canonical_uri(raw_path):
    """The path as the client sent it (already URI-encoded once), normalized and URI-encoded a
    second time: AWS's rule for every service except S3."""
    return uri_encode(normalize_path(raw_path or "/"), keep_slash=True)


def canonical_query(raw_query):
    """Parameters decoded, encoded again with UriEncode, sorted by name then value."""
    pairs = []
    for part in raw_query.split("&") if raw_query else []:
        k, _, v = part.partition("=")
        k = uri_encode(urllib.parse.unquote_to_bytes(k), keep_slash=False)
        v = uri_encode(urllib.parse.unquote_to_bytes(v), keep_slash=False)
        pairs.append((k, v))
    pairs.sort()
    return "&".join(f"{k}={v}" for k, v in pairs)


def canonical_headers(header_items, signed):
    """header_items: (name, value) as received. Names lower-cased, values trimmed with inner runs
    of spaces collapsed, repeated headers joined with ','."""
    vals = collections.defaultdict(list)
    for name, value in header_items:
        vals[name.strip().lower()].append(" ".join(value.split()))
    lines = []
    for name in signed:
        if name not in vals:
            return None, name
        lines.append(f"{name}:{','.join(vals[name])}\n")
    return "".join(lines), None


def signing_key(secret, date, region, service):
    k = hmac.new(("AWS4" + secret).encode(), date.encode(), hashlib.sha256).digest()
    for part in (region, service, "aws4_request"):
        k = hmac.new(k, part.encode(), hashlib.sha256).digest()
    return k


class SigError(Exception):
    def __init__(self, status, code, message):
        super().__init__(message)
        self.status, self.code, self.message = status, code, message


_AUTH_RE = re.compile(r"^AWS4-HMAC-SHA256\s+(.*)$")


def parse_authorization(value):
    m = _AUTH_RE.match(value or "")
    if not m:
        raise SigError(400, "IncompleteSignatureException",
                       "Authorization header requires 'Credential' parameter. Authorization "
                       "header requires 'Signature' parameter. Authorization header requires "
                       "'SignedHeaders' parameter.")
    fields = {}
    for part in m.group(1).split(","):
        k, sep, v = part.strip().partition("=")
        if sep:
            fields[k] = v
    for need in ("Credential", "SignedHeaders", "Signature"):
        if need not in fields:
            raise SigError(400, "IncompleteSignatureException",
                           f"Authorization header requires '{need}' parameter.")
    scope = fields["Credential"].split("/")
    if len(scope) != 5 or scope[4] != "aws4_request":
        raise SigError(400, "IncompleteSignatureException",
                       "Credential should be scoped with a valid terminator: 'aws4_request'")
    return scope, fields["SignedHeaders"].split(";"), fields["Signature"]


def verify_sigv4(method, raw_path, raw_query, header_items, body, *, access_key, secret_key,
                 region, service, session_token=None, max_skew_s=300, now=None):
    """Checks one request as AWS does; returns the canonical request on success, raises SigError
    with AWS's status, error type and message otherwise."""
    hdr = {}
    for name, value in header_items:
        hdr.setdefault(name.lower(), value)
    auth = hdr.get("authorization")
    if not auth:
        raise SigError(403, "MissingAuthenticationTokenException", "Missing Authentication Token")
    scope, signed, signature = parse_authorization(auth)
    akid, sdate, sregion, sservice, _ = scope
    if akid != access_key:
        raise SigError(403, "UnrecognizedClientException",
                       "The security token included in the request is invalid.")
    token = hdr.get("x-amz-security-token")
    if session_token is not None and token != session_token:
        raise SigError(403, "UnrecognizedClientException",
                       "The security token included in the request is invalid.")
    if session_token is None and token is not None:
        raise SigError(403, "UnrecognizedClientException",
                       "The security token included in the request is invalid.")
    amzdate = hdr.get("x-amz-date")
    if not amzdate or not re.fullmatch(r"\d{8}T\d{6}Z", amzdate):
        raise SigError(400, "IncompleteSignatureException",
                       "Authorization header requires existence of either a 'X-Amz-Date' or a "
                       "'Date' header.")
    t = calendar.timegm(time.strptime(amzdate, "%Y%m%dT%H%M%SZ"))
    now = time.time() if now is None else now
    if abs(now - t) > max_skew_s:
        fmt = lambda x: time.strftime("%Y%m%dT%H%M%SZ", time.gmtime(x))  # noqa: E731
        raise SigError(403, "InvalidSignatureException",
                       f"Signature expired: {amzdate} is now earlier than "
                       f"{fmt(now - max_skew_s)} ({fmt(now)} - {max_skew_s // 60} min.)"
                       if t < now else
                       f"Signature not yet current: {amzdate} is still later than "
                       f"{fmt(now + max_skew_s)} ({fmt(now)} + {max_skew_s // 60} min.)")
    if sdate != amzdate[:8]:
        raise SigError(403, "InvalidSignatureException",
                       f"Date in Credential scope does not match YYYYMMDD from ISO-8601 version of "
                       f"date from HTTP: '{sdate}' != '{amzdate[:8]}', from '{amzdate}'.")
    if sregion != region:
        raise SigError(403, "InvalidSignatureException",
                       f"Credential should be scoped to a valid region, not '{sregion}'. ")
    if sservice != service:
        raise SigError(403, "InvalidSignatureException",
                       f"Credential should be scoped to correct service: '{service}'. ")
    if signed != sorted(signed) or len(set(signed)) != len(signed) or \
            any(s != s.lower() for s in signed):
        raise SigError(403, "InvalidSignatureException", SIG_MISMATCH)
    if "host" not in signed:
        raise SigError(403, "InvalidSignatureException",
                       "'Host' or ':authority' must be a 'SignedHeader' in the AWS Authorization.")
    if "x-amz-date" not in signed:
        raise SigError(403, "InvalidSignatureException",
                       "'X-Amz-Date' must be a 'SignedHeader' in the AWS Authorization.")
    body_hash = hashlib.sha256(body).hexdigest()
    claimed = hdr.get("x-amz-content-sha256")
    if claimed is not None and claimed != body_hash:
        raise SigError(400, "XAmzContentSHA256Mismatch",
                       "The provided 'x-amz-content-sha256' header does not match what was "
                       "computed.")
    ch, missing = canonical_headers(header_items, signed)
    if ch is None:
        raise SigError(403, "InvalidSignatureException", SIG_MISMATCH +
                       f" (signed header '{missing}' is not in the request)")
    creq = "\n".join([method.upper(), canonical_uri(raw_path), canonical_query(raw_query), ch,
                      ";".join(signed), body_hash])
    sts = "\n".join(["AWS4-HMAC-SHA256", amzdate, "/".join(scope[1:]),
                     hashlib.sha256(creq.encode("utf-8")).hexdigest()])
    want = hmac.new(signing_key(secret_key, sdate, sregion, sservice), sts.encode(),
                    hashlib.sha256).hexdigest()
    if not hmac.compare_digest(want, signature):
        # as AWS's JSON services do, the message shows what the server signed
        raise SigError(403, "InvalidSignatureException",
                       f"{SIG_MISMATCH}\n\nThe Canonical String for this request should have "
                       f"been\n'{creq}'\n\nThe String-to-Sign should have been\n'{sts}'\n")
    return creq


# ------------------------------------------------------------------ event stream encoding

def _header_bytes(headers):
    out = bytearray()
    for name, value in headers:
        n, v = name.encode(), value.encode()
        out += struct.pack(">B", len(n)) + n + b"\x07" + struct.pack(">H", len(v)) + v
    return bytes(out)


def es_frame(headers, payload, corrupt=False):
    """One application/vnd.amazon.eventstream message: total length, headers length, prelude
    CRC32, headers (string values, type 7), payload, message CRC32 (big-endian). corrupt: the
    payload's first byte is flipped after the CRC is computed."""
    hb = _header_bytes(headers)
    total = 12 + len(hb) + len(payload) + 4
    prelude = struct.pack(">II", total, len(hb))
    prelude += struct.pack(">I", zlib.crc32(prelude) & 0xFFFFFFFF)
    msg = prelude + hb + payload
    msg += struct.pack(">I", zlib.crc32(msg) & 0xFFFFFFFF)
    if corrupt:
        b = bytearray(msg)
        b[12 + len(hb)] ^= 0x20
        msg = bytes(b)
    return msg


def es_event(event_type, payload, content_type="application/json"):
    if isinstance(payload, (dict, list)):
        payload = json.dumps(payload, separators=(",", ":")).encode()
    return es_frame([(":event-type", event_type), (":content-type", content_type),
                     (":message-type", "event")], payload)


def es_exception(exc_type, payload):
    return es_frame([(":exception-type", exc_type), (":content-type", "application/json"),
                     (":message-type", "exception")], json.dumps(payload).encode())


def awkward_cuts(data, sizes=(7, 1, 13, 2, 31, 3, 64)):
    """data cut into pieces of the given sizes, cycled (pieces end inside frames, JSON and UTF-8
    characters)."""
    out, i, k = [], 0, 0
    while i < len(data):
        n = sizes[k % len(sizes)]
        out.append(data[i:i + n])
        i += n
        k += 1
    return out


# ------------------------------------------------------------------ recorded replies and prices

def load_recorded(name):
    with open(os.path.join(DATA, name), encoding="utf-8") as f:
        return json.load(f)


LOCATIONS = {"us-east-1": "US East (N. Virginia)", "us-east-2": "US East (Ohio)",
             "us-west-2": "US West (Oregon)"}
PREFIX = {"us-east-1": "USE1", "us-east-2": "USE2", "us-west-2": "USW2"}

# The seeds' on-demand figures (aws-facts.md), offered in these regions: the fake's catalogue
EC2_PRICES = {"g6.xlarge": "0.8048", "g5g.2xlarge": "0.556", "inf2.xlarge": "0.7582",
              "trn1.2xlarge": "1.3438"}
SAGEMAKER_PRICES = {"ml.g6.xlarge": "1.1267"}
BEDROCK_PRICES = {"Nova Micro": ("0.000035", "0.00014")}  # $ per 1K input / output tokens
FAKE_DATE = "2026-11-01T00:00:00Z"


def _sku(*parts):
    return hashlib.sha1("/".join(parts).encode()).hexdigest()[:16].upper()


def _product(service, family, attrs, usd, unit, description, reserved=False):
    sku = _sku(service, json.dumps(attrs, sort_keys=True))
    term = "JRTCKXETXF"
    dim = {"unit": unit, "endRange": "Inf", "description": description, "appliesTo": [],
           "rateCode": f"{sku}.{term}.6YS6EN2CT7", "beginRange": "0",
           "pricePerUnit": {"USD": usd}}
    terms = {"OnDemand": {f"{sku}.{term}": {
        "priceDimensions": {dim["rateCode"]: dim}, "sku": sku, "effectiveDate": FAKE_DATE,
        "offerTermCode": term, "termAttributes": {}}}}
    if reserved:  # a cheaper reserved term beside it: a reader must take OnDemand
        rt = "4NA7Y494T4"
        rdim = dict(dim, rateCode=f"{sku}.{rt}.6YS6EN2CT7",
                    pricePerUnit={"USD": "%.10f" % (float(usd) * 0.6)})
        terms["Reserved"] = {f"{sku}.{rt}": {
            "priceDimensions": {rdim["rateCode"]: rdim}, "sku": sku, "effectiveDate": FAKE_DATE,
            "offerTermCode": rt, "termAttributes": {"LeaseContractLength": "1yr",
                                                    "OfferingClass": "standard",
                                                    "PurchaseOption": "No Upfront"}}}
    return {"product": {"productFamily": family, "attributes": dict(attrs, servicecode=service),
                        "sku": sku},
            "serviceCode": service, "terms": terms, "version": "20261101000000",
            "publicationDate": FAKE_DATE}


def price_catalogue():
    """Products in the Price List's aws_v1 shape: the priced ones plus decoys a reader that
    filters too little would pick (Windows, a capacity reservation, training, batch)."""
    out = []
    for region, loc in LOCATIONS.items():
        for inst, usd in EC2_PRICES.items():
            base = {"instanceType": inst, "location": loc, "regionCode": region,
                    "locationType": "AWS Region", "operatingSystem": "Linux", "tenancy": "Shared",
                    "preInstalledSw": "NA", "capacitystatus": "Used",
                    "licenseModel": "No License required", "operation": "RunInstances",
                    "usagetype": f"{PREFIX[region]}-BoxUsage:{inst}"}
            out.append(_product("AmazonEC2", "Compute Instance", base, usd + "000000", "Hrs",
                                f"${usd} per On Demand Linux {inst} Instance Hour", reserved=True))
            out.append(_product("AmazonEC2", "Compute Instance",
                                dict(base, operatingSystem="Windows",
                                     operation="RunInstances:0002"), "99.0000000000", "Hrs",
                                f"$99 per On Demand Windows {inst} Instance Hour"))
            out.append(_product("AmazonEC2", "Compute Instance",
                                dict(base, capacitystatus="UnusedCapacityReservation"),
                                "98.0000000000", "Hrs",
                                f"$98 per Unused Reservation Linux {inst} Instance Hour"))
        for inst, usd in SAGEMAKER_PRICES.items():
            base = {"instanceName": inst, "instanceType": inst, "component": "Hosting",
                    "computeType": "Instance", "location": loc, "regionCode": region,
                    "locationType": "AWS Region", "operation": "RunInstance",
                    "usagetype": f"{PREFIX[region]}-Host:{inst}"}
            out.append(_product("AmazonSageMaker", "ML Instance", base, usd + "000000", "Hrs",
                                f"${usd} per Hosting {inst} hour in {loc}"))
            out.append(_product("AmazonSageMaker", "ML Instance",
                                dict(base, component="Training",
                                     usagetype=f"{PREFIX[region]}-Train:{inst}"),
                                "97.0000000000", "Hrs", f"$97 per Training {inst} hour"))
        for model, (pin, pout) in BEDROCK_PRICES.items():
            key = model.replace(" ", "")
            for kind, usd in (("Input tokens", pin), ("Output tokens", pout)):
                word = kind.split()[0].lower()
                base = {"model": model, "provider": "Amazon", "feature": "On-demand Inference",
                        "inferenceType": kind, "location": loc, "regionCode": region,
                        "locationType": "AWS Region",
                        "usagetype": f"{PREFIX[region]}-{key}-{word}-tokens"}
                out.append(_product("AmazonBedrock", "Amazon Bedrock", base, usd, "1K tokens",
                                    f"${usd} per 1K {word} tokens for {model} in {loc}"))
                out.append(_product("AmazonBedrock", "Amazon Bedrock",
                                    dict(base, feature="Batch Inference",
                                         usagetype=f"{PREFIX[region]}-{key}-{word}-tokens-batch"),
                                    "0.0000010000", "1K tokens",
                                    f"batch {word} tokens for {model}"))
    return out


def term_match(product, filters):
    attrs = product["product"]["attributes"]
    for f in filters:
        field, value = f.get("Field"), f.get("Value")
        if f.get("Type") != "TERM_MATCH":
            return False
        if field == "ServiceCode":
            if product["serviceCode"] != value:
                return False
        elif attrs.get(field) != value:
            return False
    return True


# ------------------------------------------------------------------ Converse <-> OpenAI chat

def converse_to_openai(req, model, stream):
    """A Converse request as an OpenAI chat/completions body."""
    msgs = [{"role": "system", "content": s["text"]} for s in req.get("system", []) if "text" in s]
    for m in req.get("messages", []):
        text = "".join(b["text"] for b in m["content"] if "text" in b)
        uses = [b["toolUse"] for b in m["content"] if "toolUse" in b]
        results = [b["toolResult"] for b in m["content"] if "toolResult" in b]
        for r in results:
            content = "".join(c.get("text", json.dumps(c.get("json"))) for c in r["content"])
            msgs.append({"role": "tool", "tool_call_id": r["toolUseId"], "content": content})
        if uses:
            msgs.append({"role": "assistant", "content": text or None, "tool_calls": [
                {"id": u["toolUseId"], "type": "function",
                 "function": {"name": u["name"], "arguments": json.dumps(u["input"])}}
                for u in uses]})
        elif text or not results:
            msgs.append({"role": m["role"], "content": text})
    body = {"model": model, "messages": msgs, "stream": stream}
    if stream:
        body["stream_options"] = {"include_usage": True}
    ic = req.get("inferenceConfig", {})
    for k, o in (("maxTokens", "max_tokens"), ("temperature", "temperature"), ("topP", "top_p"),
                 ("stopSequences", "stop")):
        if k in ic:
            body[o] = ic[k]
    tc = req.get("toolConfig")
    if tc:
        body["tools"] = [{"type": "function", "function": {
            "name": t["toolSpec"]["name"], "description": t["toolSpec"].get("description", ""),
            "parameters": t["toolSpec"]["inputSchema"]["json"]}} for t in tc["tools"]]
        ch = tc.get("toolChoice", {})
        if "any" in ch:
            body["tool_choice"] = "required"
        elif "tool" in ch:
            body["tool_choice"] = {"type": "function", "function": {"name": ch["tool"]["name"]}}
        elif "auto" in ch:
            body["tool_choice"] = "auto"
    extra = req.get("additionalModelRequestFields")
    if isinstance(extra, dict):
        body.update(extra)
    return body


STOP = {"stop": "end_turn", "length": "max_tokens", "tool_calls": "tool_use"}


def openai_to_converse(resp, latency_ms):
    ch = resp["choices"][0]
    msg = ch["message"]
    content = []
    if msg.get("content"):
        content.append({"text": msg["content"]})
    for tc in msg.get("tool_calls") or []:
        try:
            inp = json.loads(tc["function"]["arguments"] or "{}")
        except ValueError:
            inp = {}
        content.append({"toolUse": {"toolUseId": tc["id"], "name": tc["function"]["name"],
                                    "input": inp}})
    u = resp.get("usage") or {}
    return {"output": {"message": {"role": "assistant", "content": content}},
            "stopReason": STOP.get(ch.get("finish_reason"), "end_turn"),
            "usage": {"inputTokens": u.get("prompt_tokens", 0),
                      "outputTokens": u.get("completion_tokens", 0),
                      "totalTokens": u.get("total_tokens", 0)},
            "metrics": {"latencyMs": latency_ms}}


def sse_events(resp):
    """The data: payloads of an SSE response, as they arrive."""
    buf = b""
    while True:
        chunk = resp.read1(65536) if hasattr(resp, "read1") else resp.read(65536)
        if not chunk:
            break
        buf += chunk
        while b"\n\n" in buf:
            ev, buf = buf.split(b"\n\n", 1)
            for line in ev.split(b"\n"):
                if line.startswith(b"data:"):
                    yield line[5:].strip().decode("utf-8")


def openai_stream_to_converse(events):
    """OpenAI chunks -> (event type, payload) of ConverseStream."""
    yield "messageStart", {"role": "assistant"}
    text_open = False
    tools = {}  # OpenAI tool index -> Converse block index
    stop, usage = "end_turn", None
    for data in events:
        if data == "[DONE]":
            break
        c = json.loads(data)
        if c.get("usage"):
            usage = c["usage"]
        for ch in c.get("choices", []):
            d = ch.get("delta", {})
            if d.get("content"):
                text_open = True
                yield "contentBlockDelta", {"contentBlockIndex": 0, "delta": {"text": d["content"]}}
            for tc in d.get("tool_calls") or []:
                i = tc.get("index", 0)
                if i not in tools:
                    tools[i] = len(tools) + 1
                    yield "contentBlockStart", {"contentBlockIndex": tools[i], "start": {
                        "toolUse": {"toolUseId": tc.get("id") or f"tooluse_{i}",
                                    "name": tc["function"]["name"]}}}
                args = (tc.get("function") or {}).get("arguments")
                if args:
                    yield "contentBlockDelta", {"contentBlockIndex": tools[i],
                                                "delta": {"toolUse": {"input": args}}}
            if ch.get("finish_reason"):
                stop = STOP.get(ch["finish_reason"], "end_turn")
    if text_open:
        yield "contentBlockStop", {"contentBlockIndex": 0}
    for i in sorted(tools.values()):
        yield "contentBlockStop", {"contentBlockIndex": i}
    yield "messageStop", {"stopReason": stop}
    u = usage or {}
    yield "metadata", {"usage": {"inputTokens": u.get("prompt_tokens", 0),
                                 "outputTokens": u.get("completion_tokens", 0),
                                 "totalTokens": u.get("total_tokens", 0)},
                       "metrics": {"latencyMs": 0}}


# ------------------------------------------------------------------ recorded Converse replies

def _words(text):
    return re.findall(r"\S+\s*", text)


def tool_result_value(result):
    """What the recorded answer quotes from a toolResult: its "count" when the content is (or
    holds as text) a JSON object with one, else the text itself."""
    parts = []
    for c in result.get("content", []):
        v = c.get("json")
        if v is None:
            try:
                v = json.loads(c.get("text", ""))
            except ValueError:
                v = c.get("text", "")
        parts.append(v)
    for v in parts:
        if isinstance(v, dict) and "count" in v:
            return str(v["count"])
    return " ".join(p if isinstance(p, str) else json.dumps(p) for p in parts).strip()


def recorded_converse(req, force_tool=False):
    """The recorded reply for a Converse request (a ConverseResponse dict)."""
    tools = (req.get("toolConfig") or {}).get("tools") or []
    msgs = req.get("messages") or []
    last = msgs[-1]["content"] if msgs else []
    results = [b["toolResult"] for b in last if "toolResult" in b]
    if tools or force_tool:
        rec = load_recorded("converse_tool_use.json")
        if results:
            r = copy.deepcopy(rec["after_result"])
            blk = r["output"]["message"]["content"][0]
            blk["text"] = blk["text"].replace("{result}", tool_result_value(results[0]))
            return r
        r = copy.deepcopy(rec["tool_use"])
        if tools:
            for b in r["output"]["message"]["content"]:
                if "toolUse" in b:
                    b["toolUse"]["name"] = tools[0]["toolSpec"]["name"]
        return r
    r = copy.deepcopy(load_recorded("converse_text.json")["response"])
    text = r["output"]["message"]["content"][0]["text"]
    cap = (req.get("inferenceConfig") or {}).get("maxTokens")
    words = _words(text)
    if cap and len(words) > cap:
        text = "".join(words[:cap]).rstrip()
        r["stopReason"] = "max_tokens"
        r["output"]["message"]["content"][0]["text"] = text
    n = len(_words(text))
    r["usage"]["outputTokens"] = n
    r["usage"]["totalTokens"] = r["usage"]["inputTokens"] + n
    return r


def converse_events(resp):
    """A ConverseResponse as the ConverseStream events that would have carried it."""
    yield "messageStart", {"role": "assistant"}
    for i, b in enumerate(resp["output"]["message"]["content"]):
        if "text" in b:
            for w in _words(b["text"]):
                yield "contentBlockDelta", {"contentBlockIndex": i, "delta": {"text": w}}
        else:
            u = b["toolUse"]
            yield "contentBlockStart", {"contentBlockIndex": i, "start": {
                "toolUse": {"toolUseId": u["toolUseId"], "name": u["name"]}}}
            args = json.dumps(u["input"], separators=(",", ":"))
            for piece in awkward_cuts(args, (9, 4, 17)):
                yield "contentBlockDelta", {"contentBlockIndex": i,
                                            "delta": {"toolUse": {"input": piece}}}
        yield "contentBlockStop", {"contentBlockIndex": i}
    yield "messageStop", {"stopReason": resp["stopReason"]}
    yield "metadata", {"usage": resp["usage"], "metrics": resp["metrics"]}


def recorded_chat(body):
    """The recorded container reply for an OpenAI chat body (SageMaker)."""
    r = copy.deepcopy(load_recorded("sagemaker_chat.json")["response"])
    conv = {"messages": [], "toolConfig": None, "inferenceConfig": {}}
    if body.get("tools"):
        conv["toolConfig"] = {"tools": [{"toolSpec": {"name": t["function"]["name"]}}
                                        for t in body["tools"]]}
    last = (body.get("messages") or [{}])[-1]
    if last.get("role") == "tool":
        conv["messages"] = [{"role": "user", "content": [{"toolResult": {
            "toolUseId": last.get("tool_call_id", ""),
            "content": [{"text": str(last.get("content", ""))}]}}]}]
    if body.get("max_tokens"):
        conv["inferenceConfig"]["maxTokens"] = body["max_tokens"]
    c = recorded_converse(conv)
    ch = r["choices"][0]
    text = "".join(b.get("text", "") for b in c["output"]["message"]["content"])
    calls = [b["toolUse"] for b in c["output"]["message"]["content"] if "toolUse" in b]
    ch["message"]["content"] = text
    ch["message"]["tool_calls"] = [{"id": "chatcmpl-tool-" + u["toolUseId"][8:], "type": "function",
                                    "function": {"name": u["name"],
                                                 "arguments": json.dumps(u["input"])}}
                                   for u in calls]
    ch["finish_reason"] = {"tool_use": "tool_calls", "max_tokens": "length"}.get(
        c["stopReason"], "stop")
    r["usage"] = {"prompt_tokens": c["usage"]["inputTokens"],
                  "completion_tokens": c["usage"]["outputTokens"],
                  "total_tokens": c["usage"]["totalTokens"], "prompt_tokens_details": None}
    r["model"] = body.get("model") or r["model"]
    return r


def chat_sse(resp):
    """A chat.completion as the SSE stream vLLM would have sent (with include_usage)."""
    base = {"id": resp["id"], "object": "chat.completion.chunk", "created": resp["created"],
            "model": resp["model"]}
    ch = resp["choices"][0]
    out = []

    def add(delta, finish=None, usage=None):
        c = dict(base, choices=[{"index": 0, "delta": delta, "logprobs": None,
                                 "finish_reason": finish}] if usage is None else [])
        if usage is not None:
            c["usage"] = usage
        out.append(b"data: " + json.dumps(c, ensure_ascii=False).encode() + b"\n\n")

    add({"role": "assistant", "content": ""})
    for w in _words(ch["message"]["content"] or ""):
        add({"content": w})
    for i, tc in enumerate(ch["message"].get("tool_calls") or []):
        add({"tool_calls": [{"index": i, "id": tc["id"], "type": "function",
                             "function": {"name": tc["function"]["name"], "arguments": ""}}]})
        for piece in awkward_cuts(tc["function"]["arguments"], (9, 4, 17)):
            add({"tool_calls": [{"index": i, "function": {"arguments": piece}}]})
    add({}, ch["finish_reason"])
    add(None, usage=resp["usage"])
    out.append(b"data: [DONE]\n\n")
    return b"".join(out)


# ------------------------------------------------------------------ the server

ERRORS = {  # step -> (status, Bedrock type, SageMaker type, message)
    "throttle": (429, "ThrottlingException", "ThrottlingException",
                 "Too many requests, please wait before trying again."),
    "not_ready": (429, "ModelNotReadyException", "ModelNotReadyException",
                  "Model is not ready to serve inference requests. The AWS SDK will "
                  "automatically retry the operation up to 5 times."),
    "validation": (400, "ValidationException", "ValidationError",
                   "The provided request is not valid"),
    "access_denied": (403, "AccessDeniedException", "AccessDeniedException",
                      "You don't have access to the model with the specified model ID."),
    "model_error": (424, "ModelErrorException", "ModelError",
                    "Received server error (500) from primary with message \"model crashed\"."),
    "unavailable": (503, "ServiceUnavailableException", "ServiceUnavailable",
                    "Service Unavailable"),
    "internal": (500, "InternalServerException", "InternalFailure", "Internal Server Error"),
}
STREAM_STEPS = ("stream_error", "stream_failure", "bad_crc")
STEPS = ("ok", "tool") + tuple(ERRORS) + STREAM_STEPS


class FakeAws:
    """The fake's state: credentials, scripts, the request log. Thread-safe."""

    def __init__(self, region="us-east-1", access_key=TEST_ACCESS_KEY, secret_key=TEST_SECRET_KEY,
                 session_token=None, upstream=None, pricing_region="us-east-1", page_size=2,
                 max_skew_s=300, gap_s=0.002):
        self.region, self.pricing_region = region, pricing_region
        self.access_key, self.secret_key, self.session_token = access_key, secret_key, session_token
        self.upstream = upstream.rstrip("/") if upstream else None
        self.page_size, self.max_skew_s, self.gap_s = page_size, max_skew_s, gap_s
        self.lock = threading.Lock()
        self.scripts = collections.defaultdict(collections.deque)
        self.always = {}
        self.log = []
        self.catalogue = price_catalogue()
        self.httpd = None

    def upstream_model(self):
        """The model the upstream serves (its GET /models' first id), asked once: a Bedrock
        model id means nothing to it."""
        with self.lock:
            if getattr(self, "_upstream_model", None) is None:
                try:
                    with urllib.request.urlopen(self.upstream + "/models", timeout=30) as r:
                        self._upstream_model = json.loads(r.read())["data"][0]["id"]
                except (OSError, ValueError, KeyError, IndexError):
                    self._upstream_model = ""
            return self._upstream_model

    def script(self, name, steps):
        for s in steps:
            if s not in STEPS:
                raise ValueError(f"unknown step '{s}' (one of {', '.join(STEPS)})")
        with self.lock:
            self.scripts[name].extend(steps)

    def set_always(self, name, step):
        if step not in STEPS:
            raise ValueError(f"unknown step '{step}' (one of {', '.join(STEPS)})")
        with self.lock:
            self.always[name] = step

    def reset(self):
        with self.lock:
            self.scripts.clear()
            self.always.clear()
            self.log.clear()

    def take(self, name):
        with self.lock:
            for key in (name, "*"):
                if self.scripts.get(key):
                    return self.scripts[key].popleft()
            return self.always.get(name, self.always.get("*", "ok"))

    def note(self, entry):
        with self.lock:
            self.log.append(entry)

    def start(self, port=0):
        handler = type("Handler", (_Handler,), {"fake": self})
        self.httpd = http.server.ThreadingHTTPServer(("127.0.0.1", port), handler)
        self.httpd.daemon_threads = True
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()
        return self

    @property
    def url(self):
        return f"http://127.0.0.1:{self.httpd.server_address[1]}"

    def stop(self):
        if self.httpd:
            self.httpd.shutdown()
            self.httpd.server_close()
            self.httpd = None

    def __enter__(self):
        return self if self.httpd else self.start()

    def __exit__(self, *exc):
        self.stop()


ROUTES = [
    (re.compile(r"^/model/([^/]+)/converse$"), "bedrock", "Converse"),
    (re.compile(r"^/model/([^/]+)/converse-stream$"), "bedrock", "ConverseStream"),
    (re.compile(r"^/endpoints/([^/]+)/invocations$"), "sagemaker", "InvokeEndpoint"),
    (re.compile(r"^/endpoints/([^/]+)/invocations-response-stream$"), "sagemaker",
     "InvokeEndpointWithResponseStream"),
]


class _Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    fake = None  # set by FakeAws.start

    def log_message(self, *args):
        pass

    # -------------------------------------------------------------- plumbing
    def _body(self):
        n = int(self.headers.get("Content-Length") or 0)
        return self.rfile.read(n) if n else b""

    def _send(self, status, body, ctype="application/json", headers=()):
        if isinstance(body, (dict, list)):
            body = json.dumps(body).encode()
        self.send_response(status)
        self.send_header("Content-Type", ctype)
        self.send_header("Content-Length", str(len(body)))
        self.send_header("x-amzn-RequestId", str(uuid.uuid4()))
        for k, v in headers:
            self.send_header(k, v)
        self.end_headers()
        self.wfile.write(body)

    def _error(self, status, code, message, json_protocol=False, extra=None):
        body = {"message": message}
        if json_protocol:
            body = {"__type": code, "message": message}
        if extra:
            body.update(extra)
        self._send(status, body, "application/json" if not json_protocol
                   else "application/x-amz-json-1.1",
                   [("x-amzn-ErrorType",
                     f"{code}:http://internal.amazon.com/coral/com.amazon.coral.service/")])

    def _start_stream(self, ctype, headers=()):
        self.send_response(200)
        self.send_header("Content-Type", ctype)
        self.send_header("Transfer-Encoding", "chunked")
        self.send_header("x-amzn-RequestId", str(uuid.uuid4()))
        for k, v in headers:
            self.send_header(k, v)
        self.end_headers()

    def _chunk(self, data):
        if data:
            self.wfile.write(b"%x\r\n%s\r\n" % (len(data), data))
            self.wfile.flush()

    def _end_stream(self):
        self.wfile.write(b"0\r\n\r\n")
        self.wfile.flush()

    # -------------------------------------------------------------- control
    def do_GET(self):
        if self.path == "/_fake/log":
            with self.fake.lock:
                return self._send(200, list(self.fake.log))
        if self.path == "/_fake/health":
            return self._send(200, {"ok": True})
        return self._error(404, "UnknownOperationException", "Unknown operation")

    def _control(self):
        body = json.loads(self._body() or b"{}")
        try:
            if self.path == "/_fake/script":
                self.fake.script(body["name"], body["steps"])
            elif self.path == "/_fake/always":
                self.fake.set_always(body["name"], body["step"])
            elif self.path == "/_fake/reset":
                self.fake.reset()
            else:
                return self._send(404, {"error": f"unknown control {self.path}"})
        except (KeyError, ValueError) as e:
            return self._send(400, {"error": str(e)})
        return self._send(200, {"ok": True})

    # -------------------------------------------------------------- AWS
    def do_POST(self):
        if self.path.startswith("/_fake/"):
            return self._control()
        body = self._body()
        raw_path, _, raw_query = self.path.partition("?")
        target = self.headers.get("X-Amz-Target")
        route = None
        for rx, service, op in ROUTES:
            m = rx.match(raw_path)
            if m:
                route = (service, op, urllib.parse.unquote(m.group(1)))
        if target == "AWSPriceListService.GetProducts" and raw_path == "/":
            route = ("pricing", "GetProducts", "")
        entry = {"service": route[0] if route else None, "op": route[1] if route else None,
                 "name": route[2] if route else None, "path": raw_path, "status": None,
                 "error": None, "step": None}
        auth = self.headers.get("Authorization") or ""
        sh = re.search(r"SignedHeaders=([^,\s]+)", auth)
        entry["signed_headers"] = sh.group(1).split(";") if sh else []
        if not route:
            entry.update(status=404, error="UnknownOperationException")
            self.fake.note(entry)
            return self._error(404, "UnknownOperationException", "Unknown operation " + raw_path)
        service, op, name = route
        region = self.fake.pricing_region if service == "pricing" else self.fake.region
        try:
            verify_sigv4("POST", raw_path, raw_query, self.headers.items(), body,
                         access_key=self.fake.access_key, secret_key=self.fake.secret_key,
                         region=region, service=service, session_token=self.fake.session_token,
                         max_skew_s=self.fake.max_skew_s)
        except SigError as e:
            entry.update(status=e.status, error=e.code)
            self.fake.note(entry)
            return self._error(e.status, e.code, e.message, json_protocol=service == "pricing")
        if service == "pricing":
            entry["status"] = 200
            self.fake.note(entry)
            return self._get_products(body)
        step = self.fake.take(name)
        entry["step"] = step
        stream = op.endswith("Stream")
        if step in ERRORS:
            status, btype, stype, msg = ERRORS[step]
            entry.update(status=status, error=btype if service == "bedrock" else stype)
            self.fake.note(entry)
            extra = None
            if step == "model_error":
                extra = ({"originalStatusCode": 500, "resourceName": name} if service == "bedrock"
                         else {"ErrorCode": "SERVER_ERROR_FROM_MODEL", "OriginalStatusCode": 500,
                               "OriginalMessage": "model crashed",
                               "LogStreamArn": "arn:aws:logs:%s:000000000000:log-group:/aws/"
                                               "sagemaker/Endpoints/%s" % (region, name)})
            if service == "sagemaker":
                body_err = {"ErrorCode": stype, "Message": msg}
                if extra:
                    body_err.update(extra)
                return self._send(status, body_err, headers=[(
                    "x-amzn-ErrorType",
                    f"{stype}:http://internal.amazon.com/coral/com.amazon.sagemaker/")])
            return self._error(status, btype, msg, extra=extra)
        entry["status"] = 200
        self.fake.note(entry)
        try:
            req = json.loads(body or b"{}")
        except ValueError:
            return self._error(400, "ValidationException" if service == "bedrock"
                               else "ValidationError", "The request body is not JSON")
        if service == "bedrock":
            return self._converse(name, req, stream, step)
        return self._sagemaker(name, req, body, stream, step)

    # -------------------------------------------------------------- Bedrock
    def _upstream(self, body, stream):
        rq = urllib.request.Request(self.fake.upstream + "/chat/completions",
                                    data=json.dumps(body).encode(),
                                    headers={"Content-Type": "application/json"})
        return urllib.request.urlopen(rq, timeout=600)

    def _converse(self, model, req, stream, step):
        t0 = time.monotonic()
        if self.fake.upstream and step != "tool":
            try:
                up = self._upstream(converse_to_openai(req, self.fake.upstream_model() or model,
                                                       stream), stream)
            except urllib.error.HTTPError as e:
                return self._error(e.code if e.code in (400, 429) else 424,
                                   "ValidationException" if e.code == 400 else
                                   "ThrottlingException" if e.code == 429 else
                                   "ModelErrorException", e.read().decode(errors="replace"))
            if not stream:
                resp = openai_to_converse(json.loads(up.read()),
                                          int((time.monotonic() - t0) * 1000))
                return self._send(200, resp)
            events = openai_stream_to_converse(sse_events(up))
        else:
            resp = recorded_converse(req, force_tool=step == "tool")
            if not stream:
                return self._send(200, resp)
            events = converse_events(resp)
        self._start_stream("application/vnd.amazon.eventstream")
        pad = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"
        frames = []
        for k, (etype, payload) in enumerate(events):
            if k == 2 and step in STREAM_STEPS:
                if step == "stream_error":
                    frames.append(es_exception("modelStreamErrorException", {
                        "message": "The model stream failed", "originalStatusCode": 500,
                        "originalMessage": "CUDA error: an illegal memory access"}))
                elif step == "stream_failure":
                    frames.append(es_exception("internalServerException",
                                               {"message": "An internal server error occurred."}))
                else:
                    frames.append(es_frame([(":event-type", etype),
                                            (":content-type", "application/json"),
                                            (":message-type", "event")],
                                           json.dumps(payload).encode(), corrupt=True))
                break
            # Bedrock pads every event with a "p" field of varying length
            frames.append(es_event(etype, dict(payload, p=pad[:(k * 7) % len(pad) + 1])))
        data = b"".join(frames)
        for piece in awkward_cuts(data, (5, 40, 1, 17, 64, 3)):
            self._chunk(piece)
            if self.fake.gap_s:
                time.sleep(self.fake.gap_s)
        self._end_stream()

    # -------------------------------------------------------------- SageMaker
    def _sagemaker(self, name, req, raw, stream, step):
        hdrs = [("x-Amzn-Invoked-Production-Variant", "AllTraffic")]
        if self.fake.upstream and step != "tool":
            body = dict(req)
            body["stream"] = stream
            if stream:
                body.setdefault("stream_options", {"include_usage": True})
            try:
                up = self._upstream(body, stream)
            except urllib.error.HTTPError as e:
                # the container's error as SageMaker wraps it
                return self._send(424, {"ErrorCode": "CLIENT_ERROR_FROM_MODEL",
                                        "OriginalStatusCode": e.code,
                                        "OriginalMessage": e.read().decode(errors="replace"),
                                        "Message": f"Received client error ({e.code}) from "
                                                   f"primary"},
                                  headers=hdrs + [("x-amzn-ErrorType", "ModelError:http://"
                                                   "internal.amazon.com/coral/com.amazon.sagemaker/")])
            if not stream:
                return self._send(200, up.read(), up.headers.get("Content-Type",
                                                                 "application/json"), hdrs)
            def gen():
                for chunk in iter(lambda: up.read1(65536), b""):
                    yield chunk
            pieces = gen()
        else:
            if step == "tool" and not req.get("tools"):
                req = dict(req, tools=[{"type": "function", "function": {"name": "count_ids"}}])
            resp = recorded_chat(req)
            if not stream:
                return self._send(200, resp, "application/json", hdrs)
            pieces = iter([chat_sse(resp)])
        self._start_stream("application/vnd.amazon.eventstream",
                           hdrs + [("X-Amzn-SageMaker-Content-Type", "text/event-stream")])
        k = 0
        for chunk in pieces:
            for part in awkward_cuts(chunk, (7, 1, 13, 2, 31, 3, 64)):
                if k == 2 and step in STREAM_STEPS:
                    if step == "stream_error":
                        self._chunk(es_exception("ModelStreamError", {
                            "Message": "Model stream error: the container closed the stream",
                            "ErrorCode": "ModelStreamError"}))
                    elif step == "stream_failure":
                        self._chunk(es_exception("InternalStreamFailure",
                                                 {"Message": "Internal stream failure"}))
                    else:
                        self._chunk(es_frame([(":event-type", "PayloadPart"),
                                              (":content-type", "application/octet-stream"),
                                              (":message-type", "event")], part, corrupt=True))
                    return self._end_stream()
                frame = es_event("PayloadPart", part, "application/octet-stream")
                for p in awkward_cuts(frame, (11, 50, 2)):
                    self._chunk(p)
                if self.fake.gap_s:
                    time.sleep(self.fake.gap_s)
                k += 1
        self._end_stream()

    # -------------------------------------------------------------- Price List
    def _get_products(self, body):
        try:
            req = json.loads(body)
        except ValueError:
            return self._error(400, "InvalidParameterException", "The body is not JSON", True)
        if not req.get("ServiceCode"):
            return self._error(400, "InvalidParameterException",
                               "1 validation error detected: Value null at 'serviceCode' failed "
                               "to satisfy constraint: Member must not be null", True)
        filters = [dict(f) for f in req.get("Filters", [])]
        filters.append({"Type": "TERM_MATCH", "Field": "ServiceCode", "Value": req["ServiceCode"]})
        match = [p for p in self.fake.catalogue if term_match(p, filters)]
        page = min(int(req.get("MaxResults") or 100), self.fake.page_size)
        start = 0
        if req.get("NextToken"):
            try:
                start = int(binascii.unhexlify(req["NextToken"]).decode().split(":")[1])
            except (ValueError, IndexError, binascii.Error):
                return self._error(400, "InvalidNextTokenException",
                                   "The pagination token is invalid. Try again without a "
                                   "pagination token.", True)
        items = match[start:start + page]
        out = {"FormatVersion": "aws_v1", "PriceList": [json.dumps(p) for p in items]}
        if start + page < len(match):
            out["NextToken"] = binascii.hexlify(f"page:{start + page}".encode()).decode()
        self._send(200, out, "application/x-amz-json-1.1")


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--port", type=int, default=0)
    ap.add_argument("--region", default="us-east-1")
    ap.add_argument("--pricing-region", default="us-east-1")
    ap.add_argument("--access-key", default=TEST_ACCESS_KEY)
    ap.add_argument("--secret-key", default=TEST_SECRET_KEY)
    ap.add_argument("--session-token", default=None)
    ap.add_argument("--upstream", default=None, help="an OpenAI-compatible base URL (.../v1)")
    ap.add_argument("--page-size", type=int, default=2, help="GetProducts page size cap")
    ap.add_argument("--max-skew", type=int, default=300, help="seconds of clock skew allowed")
    ap.add_argument("--gap-ms", type=float, default=2, help="pause between stream pieces")
    ap.add_argument("--script", action="append", default=[], metavar="NAME=STEP,STEP")
    ap.add_argument("--always", action="append", default=[], metavar="NAME=STEP")
    a = ap.parse_args(argv)
    fake = FakeAws(a.region, a.access_key, a.secret_key, a.session_token, a.upstream,
                   a.pricing_region, a.page_size, a.max_skew, a.gap_ms / 1000)
    for s in a.script:
        name, _, steps = s.rpartition("=")
        fake.script(name, steps.split(","))
    for s in a.always:
        name, _, step = s.rpartition("=")
        fake.set_always(name, step)
    fake.start(a.port)
    print(f"listening on {fake.url}", flush=True)
    try:
        threading.Event().wait()
    except KeyboardInterrupt:
        fake.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
