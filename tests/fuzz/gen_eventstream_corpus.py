#!/usr/bin/env python3
"""Writes the seed corpus of fuzz_eventstream.c into the directory given (the committed
tests/fuzz/corpus/eventstream was made this way): event streams as Bedrock ConverseStream and
SageMaker InvokeEndpointWithResponseStream send them, checked by botocore's decoder. Each file's
first byte is the fuzz target's chunk size (+1)."""
import struct
import sys
import zlib

from botocore.eventstream import EventStreamBuffer


def hdr_str(name, value):
    n, v = name.encode(), value.encode()
    return bytes([len(n)]) + n + b"\x07" + struct.pack(">H", len(v)) + v


def message(headers, payload):
    total = 16 + len(headers) + len(payload)
    pre = struct.pack(">II", total, len(headers))
    pre += struct.pack(">I", zlib.crc32(pre))
    m = pre + headers + payload
    return m + struct.pack(">I", zlib.crc32(m))


def event(etype, payload):
    return message(hdr_str(":event-type", etype) + hdr_str(":content-type", "application/json")
                   + hdr_str(":message-type", "event"), payload)


def exception(etype, payload):
    return message(hdr_str(":exception-type", etype)
                   + hdr_str(":content-type", "application/json")
                   + hdr_str(":message-type", "exception"), payload)


def all_types():
    h = (b"\x01t\x00" + b"\x01f\x01" + b"\x01b\x02\xff" + b"\x01s\x03" + struct.pack(">h", -2)
         + b"\x01i\x04" + struct.pack(">i", -7) + b"\x01l\x05" + struct.pack(">q", -5)
         + b"\x01y\x06" + struct.pack(">H", 2) + b"\x00\x01" + hdr_str("str", "x")
         + b"\x02ts\x08" + struct.pack(">q", 1700000000123) + b"\x01u\x09" + bytes(range(16)))
    return message(h, b"payload")


seeds = {
    "converse-stream": b"".join([
        event("messageStart", b'{"role":"assistant"}'),
        event("contentBlockDelta", b'{"contentBlockIndex":0,"delta":{"text":"Hi"}}'),
        event("contentBlockStart", b'{"contentBlockIndex":1,"start":{"toolUse":'
              b'{"toolUseId":"t","name":"f"}}}'),
        event("contentBlockDelta", b'{"contentBlockIndex":1,"delta":{"toolUse":'
              b'{"input":"{}"}}}'),
        event("messageStop", b'{"stopReason":"tool_use"}'),
        event("metadata", b'{"usage":{"inputTokens":1,"outputTokens":2},'
              b'"metrics":{"latencyMs":3}}')]),
    "payload-parts": b"".join(event("PayloadPart", part) for part in
                              [b'data: {"choices":[{"del', b'ta":{"content":"a"}}]}\n',
                               b"\ndata: [DONE]\n\n"]),
    "exception": exception("throttlingException", b'{"message":"slow down"}'),
    "model-stream-error": exception("ModelStreamError", b'{"Message":"x","ErrorCode":"y"}'),
    "all-types": all_types(),
    "empty-message": message(b"", b""),
}
out = sys.argv[1]
for i, (name, data) in enumerate(sorted(seeds.items())):
    buf = EventStreamBuffer()
    buf.add_data(data)
    assert list(buf), name
    with open(f"{out}/{name}.bin", "wb") as f:
        f.write(bytes([[0, 6, 63, 255, 2, 12][i % 6]]) + data)
