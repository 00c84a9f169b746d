#!/usr/bin/env bash
# run_aws_test.sh ROOFLINE_BIN TEST_FILE [PYTHON_MODULE...]: runs TEST_FILE (pytest) against the
# local AWS fakes (fake_aws.py, moto). Skips (77) when python3, pytest or a named module
# (botocore, moto) is missing; scripts/setup.sh installs them.
set -uo pipefail
bin="${1:?usage: run_aws_test.sh ROOFLINE_BIN TEST_FILE [MODULE...]}"
test_file="${2:?usage: run_aws_test.sh ROOFLINE_BIN TEST_FILE [MODULE...]}"
shift 2
here="$(cd "$(dirname "$0")" && pwd)"
command -v python3 >/dev/null || { echo "skipped: no python3"; exit 77; }
for m in pytest botocore "$@"; do
  python3 -c "import $m" 2>/dev/null ||
    { echo "skipped: python module $m is not installed (scripts/setup.sh installs it)"; exit 77; }
done
ROOFLINE_BIN="$bin" exec python3 -m pytest -q -p no:cacheprovider "$here/$test_file"
