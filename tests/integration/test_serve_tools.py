"""test_serve_tools.py: tool calls and structured output through `roofline serve`, driven by the
real openai SDK, on Qwen2.5-Coder 0.5B (Qwen's own <tool_call> format).

Every request is greedy, so the model's choices are the same run after run: with the tool
offered, it calls get_weather for Paris. Checked: tool_choice auto (a call, finish_reason
tool_calls, the arguments JSON), the same call streamed as OpenAI streams it (the name first, in
a delta with the call's id and type, then argument fragments that join to the same arguments),
none (the tools are not even rendered: a shorter prompt and no call), required and a named tool
(the constraint engine makes the reply a call to a declared tool whose arguments match its
schema), a full round trip (call, tool result, final turn, the conversation's prefix reused from
the cache), and response_format json_schema (content that parses and has the schema's required
keys and types)."""
import json
import os
import sys

import openai
import pytest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from serve_proc import serve  # noqa: E402  (one roofline serve for the module)

MODEL = os.environ.get("ROOFLINE_SERVE_MODEL",
                       "models/qwen2.5-coder-0.5b-instruct-q4_k_m.gguf")
ASK = [{"role": "user", "content": "What is the weather in Paris right now?"}]
WEATHER = {"type": "function", "function": {
    "name": "get_weather", "description": "Current weather for a city",
    "parameters": {"type": "object", "properties": {
        "city": {"type": "string"}, "unit": {"type": "string", "enum": ["c", "f"]}},
        "required": ["city"]}}}
TIME = {"type": "function", "function": {
    "name": "get_time", "description": "Current local time in a time zone",
    "parameters": {"type": "object", "properties": {"zone": {"type": "string"}},
                   "required": ["zone"]}}}
TOOLS = [WEATHER, TIME]


@pytest.fixture(scope="module")
def client():
    with serve(["-m", MODEL, "--ctx", "2048", "--parallel", "4"], seconds=120) as s:
        c = openai.OpenAI(base_url=s["base"] + "/v1", api_key="none", max_retries=0)
        c.model_id = c.models.list().data[0].id
        yield c


def chat(c, **kw):
    kw.setdefault("temperature", 0)
    kw.setdefault("max_tokens", 96)
    return c.chat.completions.create(model=c.model_id, **kw)


def check_args(name, args):
    """The arguments match the declared tool's parameters."""
    a = json.loads(args)
    assert isinstance(a, dict)
    if name == "get_weather":
        assert isinstance(a["city"], str) and a["city"]
        assert a.get("unit", "c") in ("c", "f")
    else:
        assert name == "get_time" and isinstance(a["zone"], str)
    return a


def test_auto_calls_the_tool(client):
    r = chat(client, messages=ASK, tools=TOOLS)
    ch = r.choices[0]
    assert ch.finish_reason == "tool_calls"
    assert ch.message.tool_calls and len(ch.message.tool_calls) == 1
    tc = ch.message.tool_calls[0]
    assert tc.type == "function" and tc.id.startswith("call_")
    assert tc.function.name == "get_weather"
    assert "paris" in check_args(tc.function.name, tc.function.arguments)["city"].lower()
    assert r.usage.completion_tokens > 0


def test_stream_deltas_match_non_stream(client):
    whole = chat(client, messages=ASK, tools=TOOLS).choices[0].message.tool_calls[0]
    deltas, finish, content = [], None, ""
    for chunk in chat(client, messages=ASK, tools=TOOLS, stream=True):
        if not chunk.choices:
            continue
        d = chunk.choices[0].delta
        content += d.content or ""
        deltas += d.tool_calls or []
        finish = chunk.choices[0].finish_reason or finish
    assert finish == "tool_calls" and content == ""
    assert len(deltas) >= 2, "the arguments come in fragments after the name"
    first = deltas[0]
    assert first.index == 0 and first.id and first.type == "function"
    assert first.function.name == "get_weather"
    assert all(d.index == 0 and d.id is None and d.function.name is None for d in deltas[1:])
    args = "".join(d.function.arguments or "" for d in deltas)
    assert json.loads(args) == json.loads(whole.function.arguments)


def test_tool_choice_none_leaves_tools_out(client):
    with_tools = chat(client, messages=ASK, tools=TOOLS, max_tokens=8)
    none = chat(client, messages=ASK, tools=TOOLS, tool_choice="none", max_tokens=8)
    bare = chat(client, messages=ASK, max_tokens=8)
    assert none.choices[0].message.tool_calls is None
    assert none.choices[0].finish_reason in ("stop", "length")
    assert none.usage.prompt_tokens == bare.usage.prompt_tokens
    assert with_tools.usage.prompt_tokens > none.usage.prompt_tokens


def test_required_gives_a_call(client):
    # a question no tool answers: only the constraint makes this a call
    r = chat(client, messages=[{"role": "user", "content": "Write a haiku about the sea."}],
             tools=TOOLS, tool_choice="required", parallel_tool_calls=False)
    ch = r.choices[0]
    assert ch.finish_reason == "tool_calls" and not ch.message.content
    assert len(ch.message.tool_calls) == 1
    check_args(ch.message.tool_calls[0].function.name, ch.message.tool_calls[0].function.arguments)
    # with parallel calls allowed the reply is still only calls, each to a declared tool
    r = chat(client, messages=[{"role": "user", "content": "Write a haiku about the sea."}],
             tools=TOOLS, tool_choice="required", max_tokens=200)
    calls = r.choices[0].message.tool_calls
    assert calls and all(check_args(c.function.name, c.function.arguments) for c in calls)


def test_named_tool_is_called(client):
    r = chat(client, messages=ASK, tools=TOOLS,
             tool_choice={"type": "function", "function": {"name": "get_time"}})
    tc = r.choices[0].message.tool_calls
    assert r.choices[0].finish_reason == "tool_calls"
    assert len(tc) == 1 and tc[0].function.name == "get_time"
    check_args("get_time", tc[0].function.arguments)


def test_named_tool_streamed(client):
    deltas = []
    for chunk in chat(client, messages=ASK, tools=TOOLS, stream=True,
                      tool_choice={"type": "function", "function": {"name": "get_time"}}):
        if chunk.choices:
            deltas += chunk.choices[0].delta.tool_calls or []
    assert deltas and deltas[0].function.name == "get_time"
    check_args("get_time", "".join(d.function.arguments or "" for d in deltas))


def test_round_trip(client):
    first = chat(client, messages=ASK, tools=TOOLS)
    call = first.choices[0].message.tool_calls[0]
    result = "18 degrees Celsius and cloudy"
    convo = ASK + [
        {"role": "assistant", "content": None, "tool_calls": [call.model_dump()]},
        {"role": "tool", "tool_call_id": call.id, "content": result}]
    second = chat(client, messages=convo, tools=TOOLS, max_tokens=48)
    ch = second.choices[0]
    assert ch.finish_reason in ("stop", "length", "tool_calls")
    assert ch.message.content or ch.message.tool_calls
    # the call and its result are in the prompt: it grew by at least the result's tokens, and
    # the first request's prompt came from the prefix cache
    assert second.usage.prompt_tokens > first.usage.prompt_tokens + 5
    assert second.model_extra["timings"]["cache_n"] >= first.usage.prompt_tokens - 1


def test_json_schema(client):
    schema = {"type": "object", "properties": {
        "city": {"type": "string"}, "population": {"type": "integer"},
        "capital": {"type": "boolean"}}, "required": ["city", "population", "capital"]}
    r = chat(client, messages=[{"role": "user", "content": "Describe Paris as JSON."}],
             response_format={"type": "json_schema",
                              "json_schema": {"name": "city", "schema": schema}},
             max_tokens=80)
    assert r.choices[0].finish_reason == "stop"
    v = json.loads(r.choices[0].message.content)
    assert set(v) <= set(schema["properties"]) and set(schema["required"]) <= set(v)
    assert isinstance(v["city"], str) and isinstance(v["capital"], bool)
    assert isinstance(v["population"], int) and not isinstance(v["population"], bool)


def test_json_object(client):
    r = chat(client, messages=[{"role": "user", "content": "Give me a JSON object about cats."}],
             response_format={"type": "json_object"}, max_tokens=80)
    assert r.choices[0].finish_reason == "stop"
    assert isinstance(json.loads(r.choices[0].message.content), dict)
