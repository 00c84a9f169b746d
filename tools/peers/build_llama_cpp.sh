#!/usr/bin/env bash
# Builds llama.cpp's reference tools (llama-server, llama-bench, llama-tokenize,
# llama-perplexity, llama-quantize) from the llama.cpp tree vendored in the llama-cpp-python source
# distribution on PyPI, into the git-ignored folder .peers/. Dev-only: roofline never links it.
# Idempotent: a finished build is reused. Takes about 15 minutes on 2 cores.
# Usage: tools/peers/build_llama_cpp.sh [VERSION]     (prints the bin directory on success)
set -euo pipefail
ver="${1:-0.3.36}"
root="$(cd "$(dirname "$0")/../.." && pwd)"
peers="$root/.peers"
src="$peers/llama_cpp_python-$ver"
bin="$peers/llama.cpp-build/bin"
targets=(llama-server llama-bench llama-tokenize llama-perplexity llama-quantize)
mkdir -p "$peers"
have_all=1
for t in "${targets[@]}"; do [ -x "$bin/$t" ] || have_all=0; done
if [ "$have_all" = 1 ]; then echo "$bin"; exit 0; fi
if [ ! -d "$src" ]; then
  (cd "$peers" && python3 -m pip download --no-deps --no-binary :all: "llama-cpp-python==$ver" >&2)
  tar -xzf "$peers/llama_cpp_python-$ver.tar.gz" -C "$peers"
fi
cmake -S "$src/vendor/llama.cpp" -B "$peers/llama.cpp-build" -DCMAKE_BUILD_TYPE=Release \
  -DLLAMA_CURL=OFF -DLLAMA_BUILD_TESTS=OFF -DLLAMA_BUILD_EXAMPLES=OFF -DGGML_NATIVE=ON >&2
cmake --build "$peers/llama.cpp-build" -j "$(nproc)" --target "${targets[@]}" >&2
echo "$bin"
