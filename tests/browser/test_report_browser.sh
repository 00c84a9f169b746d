#!/usr/bin/env bash
# test_report_browser.sh ROOFLINE_BIN: a whole run against the fake OpenAI backend (two
# backends: an instance with a price and a bandwidth, a per-token one; every suite and A/B/A),
# then its report.html checked in headless Chromium (check_report.py): no console messages,
# nothing fetched, every chart and table with the run's numbers, a screenshot. Skips (77)
# without Chromium. Also `roofline report` again on the same directory gives the same summary.
set -euo pipefail
bin="${1:?usage: test_report_browser.sh ROOFLINE_BIN}"
here="$(cd "$(dirname "$0")" && pwd)"
command -v chromium >/dev/null || { echo "skipped: chromium is not installed"; exit 77; }
tmp="$(mktemp -d /tmp/roofline-browser-XXXXXX)"
trap 'kill "$fake" 2>/dev/null || true; rm -rf "$tmp"' EXIT
port=$(python3 -c 'import socket;s=socket.socket();s.bind(("127.0.0.1",0));print(s.getsockname()[1])')
"$bin" fake-backend --port "$port" --ttft-ms 20 --gap-ms 4 --tokens 24 >/dev/null 2>&1 &
fake=$!
for _ in $(seq 50); do curl -sf "http://127.0.0.1:$port/health" >/dev/null && break; sleep 0.1; done
cat >"$tmp/run.json" <<JSON
{"backends": [
  {"name": "gpu", "uri": "openai:http://127.0.0.1:$port/v1", "model": "fake-model",
   "price": {"instance": "g6.xlarge"}, "hardware": {"name": "NVIDIA L4"},
   "bytes_per_token": 2.0e9},
  {"name": "api", "uri": "openai:http://127.0.0.1:$port/v1", "model": "fake-model",
   "price": {"usd_per_m_input": 0.035, "usd_per_m_output": 0.14}}],
 "suites": ["speed", "load", "accuracy", "agent", "probe"],
 "speed": {"runs": 2, "max_tokens": 24},
 "load": {"levels": [1, 4, 16], "requests": 16, "max_tokens": 24},
 "accuracy": {"max_tokens": 8, "concurrency": 8},
 "agent": {"runs": 1},
 "aba": {"a": "gpu", "b": "api", "suites": ["speed"]},
 "out": "$tmp/run"}
JSON
rc=0
"$bin" bench --run "$tmp/run.json" --no-progress >"$tmp/bench.out" 2>"$tmp/bench.err" || rc=$?
# the fake's replies are not answers: accuracy 0/40 is expected, and exit 0
if [ "$rc" != 0 ]; then cat "$tmp/bench.err" >&2; echo "bench exited $rc" >&2; exit 1; fi
grep -q "report: $tmp/run/report.html" "$tmp/bench.out" || { echo "no report path printed" >&2; exit 1; }
python3 "$here/check_report.py" "$tmp/run"
cp "$tmp/run/summary.json" "$tmp/first.json"
"$bin" report "$tmp/run" --quiet >/dev/null
python3 - "$tmp/first.json" "$tmp/run/summary.json" <<'PY'
import json, sys
a, b = (json.load(open(p)) for p in sys.argv[1:])
for k in ("speed", "load", "accuracy", "agent", "probe", "cost", "roofline", "aba"):
    if a.get(k) != b.get(k):
        sys.exit(f"roofline report gave another {k} section than the bench did")
print("roofline report recomputes the same figures")
PY
if [ -n "${ROOFLINE_SCREENSHOT_DIR:-}" ]; then cp "$tmp/run/report.png" "$ROOFLINE_SCREENSHOT_DIR/"; fi
