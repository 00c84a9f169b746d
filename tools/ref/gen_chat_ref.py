#!/usr/bin/env python3
"""Generate tests/data/chat_ref.json: llama.cpp's rendering of conversations with each embedded
instruction model's own chat template (llama-server --jinja, POST /apply-template), the
reference roofline's native chat families are tested against (tests/unit/model/test_chat.c).

For every model (the Qwen2.5-Coder 0.5B and SmolLM2 135M files in models/) the file's
tokenizer.chat_template text is saved beside the cases, so the test can recognise the family
from the same text without the model file. Cases: one user turn; a system turn; a multi-turn
conversation; tools; an assistant turn with two tool calls; tool results (two in a row, then
the final answer); no generation prompt.

Usage: gen_chat_ref.py [--llama-server PATH] [--out PATH]
"""
import argparse
import json
import os
import subprocess
import sys
import time
import urllib.request

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, "tools"))
from benchlib import free_port  # noqa: E402

MODELS = {
    "qwen2.5-coder-0.5b": "qwen2.5-coder-0.5b-instruct-q4_k_m.gguf",
    "smollm2-135m": "smollm2-135m-instruct-q4_1.gguf",
}

TOOLS = [{"type": "function", "function": {
    "name": "count_ids", "description": "Count the ids that satisfy a condition.",
    "parameters": {"type": "object", "properties": {
        "ids": {"type": "array", "items": {"type": "integer"}},
        "filter": {"type": "string", "description": "e.g. \"id >= 10\""}},
        "required": ["ids", "filter"]}}}]

CALLS = [{"id": "call_1", "type": "function",
          "function": {"name": "count_ids", "arguments": "{\"ids\": [1, 12], \"filter\": \"id >= 10\"}"}},
         {"id": "call_2", "type": "function",
          "function": {"name": "count_ids", "arguments": "{\"ids\": [3], \"filter\": \"id < 5\"}"}}]

CASES = [
    ("one user turn", {"messages": [{"role": "user", "content": "What is 2+2?"}]}),
    ("system", {"messages": [{"role": "system", "content": "Be brief."},
                             {"role": "user", "content": "Why is the sky blue?"}]}),
    ("conversation", {"messages": [{"role": "user", "content": "hi"},
                                   {"role": "assistant", "content": "Hello! How can I help?"},
                                   {"role": "user", "content": "Name a colour."}]}),
    ("tools", {"messages": [{"role": "user", "content": "How many of 1, 12 are >= 10?"}],
               "tools": TOOLS}),
    ("tools and system", {"messages": [{"role": "system", "content": "Use the tools."},
                                       {"role": "user", "content": "Count."}], "tools": TOOLS}),
    ("tool round trip", {"messages": [
        {"role": "user", "content": "How many of 1, 12 are >= 10, and of 3 are < 5?"},
        {"role": "assistant", "content": None, "tool_calls": CALLS},
        {"role": "tool", "tool_call_id": "call_1", "content": "{\"count\": 1}"},
        {"role": "tool", "tool_call_id": "call_2", "content": "{\"count\": 1}"}],
        "tools": TOOLS}),
    ("unicode", {"messages": [{"role": "user", "content": "Ça va? 日本語 \u00e9"}]}),
]


def template_of(path):
    import gguf  # pip install gguf (dev only)
    r = gguf.GGUFReader(path)
    f = r.fields.get("tokenizer.chat_template")
    return bytes(f.parts[f.data[0]]).decode() if f else None


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--llama-server", default=os.path.join(ROOT, ".peers", "llama.cpp-build",
                                                           "bin", "llama-server"))
    ap.add_argument("--out", default=os.path.join(ROOT, "tests", "data", "chat_ref.json"))
    args = ap.parse_args()
    out = {"about": "llama.cpp's rendering (llama-server --jinja, /apply-template) of each case "
                    "with each model's own template; tools/ref/gen_chat_ref.py", "models": {}}
    for name, file in MODELS.items():
        path = os.path.join(ROOT, "models", file)
        port = free_port()
        srv = subprocess.Popen([args.llama_server, "-m", path, "--jinja", "--port", str(port),
                                "-c", "512", "-t", "1", "--no-webui"],
                               stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        try:
            for _ in range(300):
                try:
                    urllib.request.urlopen(f"http://127.0.0.1:{port}/health", timeout=1)
                    break
                except Exception:
                    time.sleep(0.2)
            cases = []
            for label, body in CASES:
                for gen in (True, False):
                    b = dict(body, add_generation_prompt=gen)
                    req = urllib.request.Request(
                        f"http://127.0.0.1:{port}/apply-template",
                        data=json.dumps(b).encode(), headers={"Content-Type": "application/json"})
                    prompt = json.load(urllib.request.urlopen(req, timeout=30))["prompt"]
                    cases.append({"label": label, "add_generation_prompt": gen,
                                  "request": body, "prompt": prompt})
            out["models"][name] = {"file": file, "template": template_of(path), "cases": cases}
            print(f"{name}: {len(cases)} cases", file=sys.stderr)
        finally:
            srv.terminate()
            srv.wait()
    with open(args.out, "w") as f:
        json.dump(out, f, indent=1, ensure_ascii=False)
        f.write("\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
