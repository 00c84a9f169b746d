#!/usr/bin/env bash
# run_serve_test.sh ROOFLINE_BIN MODEL [TEST_FILE]: runs TEST_FILE (default test_serve.py; pytest,
# the openai SDK) against `roofline serve`. Skips (77) when python3, pytest or openai is missing
# or the model is absent.
set -uo pipefail
bin="${1:?usage: run_serve_test.sh ROOFLINE_BIN MODEL}"
model="${2:?usage: run_serve_test.sh ROOFLINE_BIN MODEL}"
here="$(cd "$(dirname "$0")" && pwd)"
test_file="${3:-test_serve.py}"
command -v python3 >/dev/null || { echo "skipped: no python3"; exit 77; }
python3 -c "import pytest, openai" 2>/dev/null ||
  { echo "skipped: pytest or openai is not installed (scripts/setup.sh installs them)"; exit 77; }
[ -f "$model" ] || { echo "skipped: model $model is absent (scripts/setup.sh fetches it)"; exit 77; }
ROOFLINE_BIN="$bin" ROOFLINE_SERVE_MODEL="$model" exec python3 -m pytest -q -p no:cacheprovider \
  "$here/$test_file"
