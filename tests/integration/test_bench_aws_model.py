"""test_bench_aws_model.py: the agent and accuracy suites over bedrock: and sagemaker: with real
answers: the AWS fake (--upstream) in front of `roofline serve` running Qwen2.5-Coder 0.5B, so
the model's own tool calls travel as Converse toolUse blocks and SageMaker's PayloadPart frames,
and the tool's results come back as toolResult blocks. Slow (a real model); skips without the
model file or the AWS backends."""
import json
import os
import sys

import pytest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import fake_aws  # noqa: E402
import serve_proc  # noqa: E402
from test_bench_aws import (ENDPOINT, NOVA, assert_no_secret, backend, questions,  # noqa: E402
                            records, run_bench, need_aws_backends)  # noqa: F401

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..")
MODEL = os.environ.get("ROOFLINE_SERVE_MODEL") or os.path.join(
    ROOT, "models", "qwen2.5-coder-0.5b-instruct-q4_k_m.gguf")


def test_agent_and_accuracy_with_a_real_model(tmp_path):
    if not os.path.exists(MODEL):
        pytest.skip(f"{MODEL} is absent (scripts/setup.sh fetches it)")
    with serve_proc.serve(["-m", MODEL, "--parallel", "4"]) as s:
        with fake_aws.FakeAws(session_token=fake_aws.TEST_SESSION_TOKEN,
                              upstream=s["base"] + "/v1", gap_s=0) as fake:
            run = {"backends": [backend("nova", f"bedrock:us-east-1/{NOVA}", timeout_s=300),
                                backend("sm", f"sagemaker:us-east-1/{ENDPOINT}", timeout_s=300)],
                   "suites": ["accuracy", "agent"],
                   "accuracy": {"questions": questions(tmp_path), "max_tokens": 16,
                                "concurrency": 2},
                   "agent": {"runs": 1}, "membw": False}
            r, out = run_bench(tmp_path, fake, run)
    assert r.returncode == 0, r.stderr[-3000:]
    recs = records(out)
    for name in ("nova", "sm"):
        acc = [x for x in recs if x["backend"] == name and x["suite"] == "accuracy"]
        assert len(acc) == 4 and all(x["status"] == "ok" and x["reply"].strip() for x in acc)
        agent = [x for x in recs if x["backend"] == name and x["suite"] == "agent"]
        calls = [c for x in agent for c in x.get("tool_calls", [])]
        assert calls and calls[0]["name"] == "count_ids", agent
        args = json.loads(calls[0]["arguments"])  # the model's own arguments, intact
        assert isinstance(args, dict) and "ids" in args
        # a turn after the call: the tool's result went back and the model answered
        assert len(agent) >= 2 and agent[-1]["status"] == "ok"
    assert_no_secret(out, r.stdout, r.stderr)
