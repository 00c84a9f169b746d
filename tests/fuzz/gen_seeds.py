#!/usr/bin/env python3
"""tests/fuzz/gen_seeds.py: writes the seed corpora of the fuzz targets other than gguf (whose
seeds gguf_gen_corpus writes with roofline's own GGUF writer) from the project's own files and
test data, in each target's input format (tests/fuzz/fuzz_NAME.c says it):

  runfile      data/runs/*.json and run files of tests/unit/bench/test_bench.c's shapes
  questions    data/accuracy/seed40.jsonl cut into files of 1, 3 and 10 lines, CRLF, blanks
  agent_task   data/agent/count_ids.json, its tool calls (op/threshold, filter forms) and answers
  sse          SSE captures of the fake server's stream (tests/unit/backend/test_sse.c), comments, CR/LF
  openai_req   every body of tests/data/openai_errors.json (endpoint byte + body)
  toolcall     replies of tests/unit/server/test_tool_stream.c for Qwen tags and bare JSON
  json_schema  schemas of docs/constraints.md's subset with a matching and a broken text
  safetensors  headers of tests/unit/format/test_safetensors.c's valid files
  tokenizer    tests/data/tokenizer_strings.json and tokenizer_bpe_strings.json, one per family
  rundir       records and run logs of each run description of fuzz_rundir.c, in the shape
               records.c writes (speed, load, accuracy graded on data/accuracy/seed40.jsonl,
               agent tool calls, probe, A/B/A and precision phases, errors, a resent request)

Run from anywhere: python3 tests/fuzz/gen_seeds.py [NAME...] (default: all). It replaces the
seed-*.bin files of each corpus and leaves other files there (saved crashers, merged inputs).
"""
import glob
import json
import os
import struct
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
CORPUS = os.path.join(ROOT, "tests", "fuzz", "corpus")


def read(path):
    with open(os.path.join(ROOT, path), "rb") as f:
        return f.read()


def runfile():
    out = [read(p) for p in sorted(glob.glob(os.path.join(ROOT, "data/runs/*.json")))]
    out += [
        b'{"backends": [{"uri": "local", "price": {"usd_per_hour": 1.5}}], "suites": ["speed"]}',
        b'{"backends": [{"name": "a", "uri": "openai://127.0.0.1:8080/v1"}, {"name": "b", '
        b'"uri": "local"}], "aba": ["a", "b", "a"], "suites": ["load"], '
        b'"load": {"levels": [1, 2, 4]}}',
        b'{"speed": {"runs": 3}, "accuracy": {"questions": "data/accuracy/seed40.jsonl"}}',
        b'{"suites": ["agent"], "agent": {"task": "data/agent/count_ids.json"}}',
        b'{"slo": {"ttft_ms": 500}, "out": "runs/x", "membw": {}}',
    ]
    return out


def questions():
    lines = read("data/accuracy/seed40.jsonl").splitlines(keepends=True)
    out = [lines[0], b"".join(lines[:3]), b"".join(lines[:10])]
    out.append(b"\r\n".join(l.rstrip(b"\n") for l in lines[3:6]) + b"\r\n")
    out.append(b"\n\n" + lines[6] + b"\n" + lines[7])
    word = [l for l in lines if b'"word"' in l][:2]
    out += word
    return out


def agent_task():
    task = read("data/agent/count_ids.json")
    ids = "[12, 3, 27, 10, 9, 41, 15, 7, 33, 13, 20]"
    calls = [
        '{"ids": %s, "op": ">=", "threshold": 10}' % ids,
        '{"ids": %s, "op": "≥", "threshold": 10.0}' % ids,
        '{"ids": %s, "op": ">", "threshold": 10}' % ids,
        '{"ids": [1, 2], "op": "==", "threshold": "x"}',
        '{"ids": %s, "filter": "id >= 10"}' % ids,
        "id >= 10",
        "10 <= id",
        ">= 10",
    ]
    out = [task]
    for i, c in enumerate(calls):
        final = ["There are 8 ids >= 10.", "8", "The count is 7 of 11."][i % 3]
        out.append(b"\0count_ids\0" + c.encode() + b"\0" + final.encode())
    filt = json.loads(task)
    filt["tools"][0]["function"]["parameters"] = {
        "type": "object",
        "properties": {"ids": {"type": "array", "items": {"type": "integer"}},
                       "filter": {"type": "string"}},
        "required": ["ids", "filter"]}
    out.append(json.dumps(filt).encode() + b"\0count_ids\0" +
               ('{"ids": %s, "filter": "ID ≥ 10"}' % ids).encode() + b"\0answer: 8")
    return out


def sse():
    chunk = (b'data: {"id":"chatcmpl-1","object":"chat.completion.chunk","created":1,'
             b'"model":"m","choices":[{"index":0,"delta":{"role":"assistant"}}]}\n\n'
             b'data: {"id":"chatcmpl-1","choices":[{"index":0,"delta":{"content":"lo, '
             b'world"}}]}\n\n'
             b'data: {"id":"chatcmpl-1","choices":[{"index":0,"delta":{},"finish_reason":'
             b'"stop"}]}\n\n'
             b'data: {"id":"chatcmpl-1","choices":[],"usage":{"prompt_tokens":12,'
             b'"completion_tokens":3}}\n\n'
             b"data: [DONE]\n\n")
    streams = [
        chunk,
        chunk.replace(b"\n", b"\r\n"),
        chunk.replace(b"\n", b"\r"),
        b": keep-alive\n\ndata: a\n\ndata: b\n\n\n\ndata: c\n\n",
        b"data:x\n\ndata: y\n\ndata:  z\n\n",
        b"event: error\ndata: {\"error\":{\"message\":\"boom\"}}\n\n",
        b"data: line1\ndata: line2\ndata:\ndata: line4\n\n",
        b"id: 7\nretry: 100\nfoo: bar\n\ndata: after\n\n",
        b"data: unterminated",
        b"data: " + b"x" * 300 + b"\n\n",
    ]
    return [bytes([len(s) // 2 % 256, 255]) + s for s in streams] + [b"\x05\x00" + chunk]


def openai_req():
    d = json.loads(read("tests/data/openai_errors.json"))
    out = []
    for c in d["cases"]:
        kind = b"\x01" if c.get("endpoint") == "/v1/completions" else b"\x00"
        if "raw" in c:
            body = c["raw"].encode() * int(c.get("raw_repeat", 1))
            if len(body) > 4096:
                continue
        elif "body" in c:
            body = json.dumps(c["body"]).encode()
        else:
            continue
        out.append(kind + body)
    return out


def toolcall():
    qwen, bare = b"\x02", b"\x00"
    replies = [
        qwen + b'<tool_call>\n{"name": "get_weather", "arguments": {"city": "Paris"}}\n'
        b"</tool_call>",
        qwen + b'Sure.\n<tool_call>\n{"name": "f", "arguments": {}}\n</tool_call>\n<tool_call>'
        b'\n{"name": "get_weather", "arguments": {"city": "a\\"b}"}}\n</tool_call>',
        qwen + b'{"name": "get_weather", "arguments": {"city": "Rome"}}',
        qwen + b"<tool_call>\nnot json\n</tool_call> tail",
        qwen + b"just text with <tool_ in it",
        bare + b'{"name": "get_weather", "parameters": {"city": "Oslo"}}',
        bare + b'```json\n{"name": "f", "parameters": {}}\n```',
        b"\x01" + b'{"name": "nope", "parameters": {}}',
        bare + b'[{"type":"function","function":{"name":"g"}}]\0{"name": "g", "parameters": '
        b'{"x": [1, {"y": null}]}}',
    ]
    return replies


def json_schema():
    pairs = [
        ('{"type": "object", "properties": {"city": {"type": "string", "maxLength": 8}, "n": '
         '{"type": "integer"}}, "required": ["city"], "additionalProperties": false}',
         '{"city": "Paris", "n": 3}'),
        ('{"type": "array", "items": {"type": "number"}, "minItems": 1, "maxItems": 3}',
         "[1.5, -2e10, 3]"),
        ('{"anyOf": [{"type": "string"}, {"type": "null"}, {"enum": [1, "a", true]}]}', '"x\\u00e9"'),
        ('{"type": ["boolean", "integer"]}', "true"),
        ('{"const": {"a": [1, 2]}}', '{"a":[1,2]}'),
        ('{"type": "object"}', '{"k": {"nested": [null, false, "s"]}, "z": 1e5}'),
        ('{}', '[[[[]]]]'),
        ('true', '{"a": "\\n"}'),
        ('{"type": "string", "minLength": 2}', '"a'),
        ('{"oneOf": [{"type": "object", "properties": {"a": {"type": "string"}}}, '
         '{"type": "array"}]}', '{"a": "b"}'),
        ('{"type": "object", "properties": {"x": {"$ref": "#/defs/y"}}}', "{}"),
    ]
    return [s.encode() + b"\0" + t.encode() for s, t in pairs]


def st_file(header, data_len, pad=True):
    h = json.dumps(header, separators=(",", ":")).encode()
    if pad:
        h += b" " * ((8 - len(h) % 8) % 8)
    return struct.pack("<Q", len(h)) + h + bytes(data_len)


def safetensors():
    return [
        st_file({"__metadata__": {"format": "pt", "who": "test"},
                 "b": {"dtype": "BF16", "shape": [2, 3], "data_offsets": [16, 28]},
                 "a": {"dtype": "F32", "shape": [4], "data_offsets": [0, 16]},
                 "empty": {"dtype": "I64", "shape": [0, 5], "data_offsets": [28, 28]},
                 "s": {"dtype": "U8", "shape": [], "data_offsets": [28, 29]},
                 "f4": {"dtype": "F4", "shape": [6], "data_offsets": [29, 32]}}, 32),
        st_file({}, 0),
        st_file({"w": {"dtype": "F16", "shape": [2, 2], "data_offsets": [0, 8]}}, 8, pad=False),
        st_file({"model.embed_tokens.weight": {"dtype": "BF16", "shape": [8, 4],
                                               "data_offsets": [0, 64]},
                 "q.weight_packed": {"dtype": "I32", "shape": [4, 1], "data_offsets": [64, 80]},
                 "q.weight_scale": {"dtype": "F8_E4M3", "shape": [4, 1],
                                    "data_offsets": [80, 84]}}, 84),
        st_file({"c": {"dtype": "C64", "shape": [1], "data_offsets": [0, 8]},
                 "f6": {"dtype": "F6_E2M3", "shape": [4], "data_offsets": [8, 11]}}, 11),
    ]


def tokenizer():
    strs = json.loads(read("tests/data/tokenizer_strings.json"))
    bpe = json.loads(read("tests/data/tokenizer_bpe_strings.json"))
    if isinstance(bpe, dict):
        bpe = bpe.get("strings", list(bpe.values()))
    out = []
    for i, s in enumerate(strs[::6]):  # SentencePiece (family 0), specials parsed every other
        out.append(bytes([0 | (4 if i % 2 else 0)]) + s.encode())
    for i, s in enumerate(bpe[::10]):  # Qwen2 (1) and SmolLM2 (2)
        out.append(bytes([1 + i % 2 | (4 if i % 3 == 0 else 0)]) + str(s).encode())
    out.append(b"\x00caf\xc3\xa9 \xe2\x96\x81x <start_of_turn>user\n")
    out.append(b"\x05<|im_start|>user\nhi<|im_end|><tool_call>")
    out.append(b"\x02a\x04b \xf0\x9f\x98\x80 \xc0\xaf \xed\xa0\x80 \xf4\x90\x80\x80")
    return out


RUN_ID = "64d9b7be0fd9475c"


def record(seq, suite, backend, item, level=0, level_index=0, index=0, phase=None, cls="ok",
           tokens=8, reply=None, calls=None, warmup=False, t0=0.0, **extra):
    """One line of records.jsonl as records.c writes it, with a short event list."""
    n_ev = min(tokens, 3)
    r = {"schema": 1, "run_id": RUN_ID, "session": 0, "seq": seq}
    if phase:
        r["phase"] = phase
    r.update({"suite": suite, "backend": backend, "model": "m", "item": item, "level": level,
              "level_index": level_index, "index": index, "warmup": warmup,
              "status": "ok" if cls == "ok" else "error", "error_class": cls,
              "http_status": 200 if cls == "ok" else 500, "resends": 0, "retries": 0,
              "t_intended_ms": None, "t_sent_ms": t0, "t_first_byte_ms": t0 + 5,
              "t_first_content_ms": t0 + 5, "t_last_content_ms": t0 + 12, "t_done_ms": t0 + 12.5,
              "max_tokens": tokens, "prompt_tokens_server": 15,
              "completion_tokens_server": tokens if cls == "ok" else -1,
              "completion_tokens_client": -1, "content_events": n_ev if cls == "ok" else 0,
              "finish_reason": "length" if cls == "ok" else "",
              "ttft_ms": 5.0, "e2e_ms": 12.5, "tpot_ms": 1.0, "decode_tok_s": 1000.0, "lag_ms": 0.1,
              "reply_bytes": len(reply or ""),
              "events_ms": [5.0 + 3 * i for i in range(n_ev)] if cls == "ok" else [],
              "events_tokens": [tokens // n_ev] * n_ev if cls == "ok" else []})
    if cls != "ok":
        r["error"] = "HTTP 500: fake fault"
    if reply is not None:
        r["reply"] = reply
        r["tool_calls"] = calls or []
    r.update(extra)
    return json.dumps(r, separators=(",", ":")).encode()


def runlog(backends, levels=(1,), membw=True):
    ev = [{"kind": "session", "run_id": RUN_ID, "started": "2026-12-02T06:47:24Z",
           "resumed": False, "session": 0}]
    if membw:
        ev.append({"kind": "machine", "membw_gbs": 30.5, "membw_min_gbs": 28.0,
                   "membw_max_gbs": 31.0, "membw_repeats": 5, "membw_threads": 2,
                   "membw_bytes": 536870912, "cpu": "AMD EPYC", "physical_cores": 2,
                   "mem_total_bytes": 25000000000, "session": 0})
    for b in backends:
        for i, c in enumerate(levels):
            ev.append({"kind": "level", "backend": b, "level_index": i, "concurrency": c,
                       "loop_timed": True, "lag_samples": 4, "lag_p50_ms": 0.08,
                       "lag_p99_ms": 0.1, "lag_max_ms": 0.1, "cpu_s": 0.004, "wall_s": 0.06,
                       "session": 0})
    ev.append({"kind": "session_end", "ended": "2026-12-02T06:47:25Z", "duration_s": 0.35,
               "records": 9, "interrupted": False, "session": 0})
    return b"\n".join(json.dumps(e, separators=(",", ":")).encode() for e in ev) + b"\n"


def rundir():
    """KIND RECORDS \\0 RUNLOG for fuzz_rundir.c's run descriptions (KIND 0..4)."""
    qs = [json.loads(l) for l in read("data/accuracy/seed40.jsonl").splitlines()[:3]]

    def seed(kind, recs, log, torn=b""):
        return bytes([kind]) + b"\n".join(recs) + b"\n" + torn + b"\0" + log

    out = []
    speed = [record(0, "speed", "f", "run 1"), record(1, "speed", "f", "run 2", t0=13)]
    load = [record(2, "load", "f", "c 0", level=1, warmup=True, t0=25),
            record(3, "load", "f", "c 1", level=1, index=1, t0=38),
            record(4, "load", "f", "c 0", level=4, level_index=1, t0=50),
            record(5, "load", "f", "c 1", level=4, level_index=1, index=1, t0=50, cls="http_5xx")]
    acc = [record(6 + i, "accuracy", "f", q["id"], index=i, t0=60 + i,
                  reply=q["answer"] if i != 1 else "I do not know", category=q["category"],
                  grader=q["grader"], expected=q["answer"]) for i, q in enumerate(qs)]
    call = {"id": "call_1", "name": "count_ids",
            "arguments": '{"ids": [12, 3, 27, 10], "op": ">=", "threshold": 10}'}
    agent = [record(9, "agent", "f", "count_ids run 1 turn 1", tokens=16, reply="", calls=[call],
                    call_form="tool_calls", t0=70),
             record(10, "agent", "f", "count_ids run 1 turn 2", index=1, tokens=16,
                    reply="There are 3 ids >= 10.", t0=80)]
    probe = [record(11, "probe", "f", "probe", tokens=4, reply="Paris.", t0=90)]
    log0 = runlog(["f"], (1, 4), membw=False)
    out.append(seed(0, speed + load[:2], log0))
    out.append(seed(0, load[2:], log0))
    out.append(seed(0, acc + probe, log0))
    out.append(seed(0, agent + speed[:1], log0))
    # a cancelled request superseded by its resend, and a torn last line
    resent = [record(0, "speed", "f", "run 1", cls="cancelled"), record(12, "speed", "f", "run 1")]
    out.append(seed(0, resent, log0, torn=b'{"schema":1,"run_id":"' + RUN_ID.encode() + b'","se'))
    # local and per-token priced backends
    out.append(seed(1, [record(0, "speed", "t", "run 1"), record(1, "speed", "g", "run 1"),
                        record(2, "load", "t", "c 0", level=16, level_index=1, t0=20)],
                    runlog(["t", "g"], (1, 16))))
    # A/B/A: a, b, a again under the phases the bench writes
    aba = []
    for k, (ph, b) in enumerate((("aba 1", "a"), ("aba 2", "b"), ("aba 3", "a"))):
        aba.append(record(2 * k, "speed", b, "run 1", phase=ph, t0=30 * k))
        aba.append(record(2 * k + 1, "load", b, "c 0", level=2, level_index=1, phase=ph,
                          t0=30 * k + 10))
    out.append(seed(2, aba[0::2], runlog(["a", "b"], (1, 2), membw=False)))
    out.append(seed(2, aba[1::2], runlog(["a", "b"], (1, 2), membw=False)))
    # the precision study: A, B1, A, B2, A
    prec = [record(0, "speed", "prec/shipped", "run 1"),
            record(1, "speed", "prec/q8_0", "run 1", t0=20),
            record(2, "speed", "prec/shipped", "run 1", phase="precision a2", t0=40),
            record(3, "speed", "prec/widen", "run 1", t0=60),
            record(4, "speed", "prec/shipped", "run 1", phase="precision a3", t0=80),
            record(5, "accuracy", "prec/shipped", qs[0]["id"], reply=qs[0]["answer"], t0=90,
                   category=qs[0]["category"], grader=qs[0]["grader"], expected=qs[0]["answer"]),
            record(6, "accuracy", "prec/q8_0", qs[0]["id"], reply="5", t0=95,
                   category=qs[0]["category"], grader=qs[0]["grader"], expected=qs[0]["answer"])]
    plog = runlog(["prec/shipped"], (1, 2)) + json.dumps(
        {"kind": "membw", "when": "precision: prec/q8_0", "membw_gbs": 47.5, "session": 0},
        separators=(",", ":")).encode() + b"\n"
    out.append(seed(3, prec[:4], plog))
    out.append(seed(3, prec[4:], plog))
    # a Poisson run: intended times set
    pois = [record(i, "load", "r", "r %d" % i, level=0, index=i, t0=100 * i,
                   t_intended_ms=100.0 * i - 1) for i in range(4)]
    out.append(seed(4, pois, runlog(["r"], (0,), membw=False)))
    return out


TARGETS = {f.__name__: f for f in (runfile, questions, agent_task, sse, openai_req, toolcall,
                                    rundir,
                                   json_schema, safetensors, tokenizer)}


def main(names):
    for name in names or sorted(TARGETS):
        d = os.path.join(CORPUS, name)
        os.makedirs(d, exist_ok=True)
        for old in glob.glob(os.path.join(d, "seed-*.bin")):
            os.remove(old)
        seeds = TARGETS[name]()
        for i, s in enumerate(seeds):
            with open(os.path.join(d, "seed-%02d.bin" % i), "wb") as f:
                f.write(s)
        print("%s: %d seeds" % (name, len(seeds)))


if __name__ == "__main__":
    main(sys.argv[1:])
