#!/usr/bin/env bash
# scripts/fuzz_smoke.sh [SECONDS]: builds the libFuzzer targets (clang, -DROOFLINE_FUZZ=ON, in
# build-fuzz) and runs each one for SECONDS (default 30, as CI) over a copy of its seed corpus in a
# temporary directory, so tests/fuzz/corpus is never written to. A target is tests/fuzz/fuzz_NAME.c
# with its corpus in tests/fuzz/corpus/NAME and, when present, its dictionary tests/fuzz/NAME.dict.
# Fails on the first crash, leak, timeout or sanitizer report, and keeps the temporary directory
# (the crashing input is there) for the fix and the regression case (copy it into the corpus).
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
secs="${1:-30}"
if ! [[ "$secs" =~ ^[1-9][0-9]*$ ]]; then
  echo "fuzz_smoke: SECONDS must be a positive integer, got '$secs'" >&2
  exit 2
fi
if ! command -v clang >/dev/null; then
  echo "fuzz_smoke: clang is needed (libFuzzer); scripts/setup.sh installs it" >&2
  exit 2
fi
build="$root/build-fuzz"
cmake -S "$root" -B "$build" -DCMAKE_C_COMPILER=clang -DCMAKE_BUILD_TYPE=Debug \
  -DROOFLINE_FUZZ=ON >/dev/null
targets=()
for src in "$root"/tests/fuzz/fuzz_*.c; do
  targets+=("$(basename "$src" .c)")
done
if [ "${#targets[@]}" -eq 0 ]; then
  echo "fuzz_smoke: no tests/fuzz/fuzz_*.c targets" >&2
  exit 2
fi
cmake --build "$build" -j "$(nproc)" --target "${targets[@]}"

tmp="$(mktemp -d /tmp/roofline-fuzz-XXXXXX)"
for t in "${targets[@]}"; do
  name="${t#fuzz_}"
  seeds="$root/tests/fuzz/corpus/$name"
  corpus="$tmp/$name-corpus"
  mkdir -p "$corpus" "$tmp/$name-artifacts"
  if [ -d "$seeds" ]; then cp -r "$seeds"/. "$corpus"/; fi
  args=(-max_total_time="$secs" -max_len=4096 -timeout=10 -rss_limit_mb=2048
        -artifact_prefix="$tmp/$name-artifacts/" -print_final_stats=1)
  if [ -f "$root/tests/fuzz/$name.dict" ]; then args+=(-dict="$root/tests/fuzz/$name.dict"); fi
  echo "== $t: ${secs}s over a copy of tests/fuzz/corpus/$name ($(ls "$corpus" | wc -l) seeds)"
  if ! (cd "$tmp" && "$build/tests/fuzz/$t" "${args[@]}" "$corpus" >"$tmp/$name.log" 2>&1); then
    tail -n 40 "$tmp/$name.log" >&2
    echo "fuzz_smoke: $t failed; log, corpus and the crashing input are in $tmp" >&2
    exit 1
  fi
  grep -E '^stat::number_of_executed_units|^Done' "$tmp/$name.log" || true
done
rm -rf "$tmp"
echo "fuzz_smoke: ${#targets[@]} target(s) ran ${secs}s each without a crash"
