#!/usr/bin/env bash
# scripts/check_neon.sh: builds the engine core (util, format, kernels, model, analysis) and two
# tests for AArch64 with the cross compiler (gcc-aarch64-linux-gnu, static) and runs them under
# qemu-aarch64, so the NEON table (src/kernels/kernels_neon.c) is checked on an x86 machine too:
# test_kernels (every NEON kernel against the scalar one) and test_forward_tiny (the Gemma 3
# forward pass of tiny random models, NEON being the best table there, against a naive reference).
# Prints "skipped" and exits 0 when the cross tools are absent (scripts/setup.sh installs them).
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
cc=aarch64-linux-gnu-gcc
if ! command -v "$cc" >/dev/null || ! command -v qemu-aarch64 >/dev/null; then
  echo "check_neon: skipped ($cc or qemu-aarch64 not installed)"
  exit 0
fi
out="${ROOFLINE_AARCH64_BUILD:-$root/build-aarch64}" # ROOFLINE_AARCH64_BUILD: another folder
mkdir -p "$out"
flags=(-std=c17 -D_GNU_SOURCE -O2 -g -Wall -Wextra -Wshadow -Wstrict-prototypes
       -Wmissing-prototypes -Werror -I"$root/src" -I"$root/include"
       -DROOFLINE_DATA_DIR="\"$root/data\"" -DROOFLINE_MODELS_DIR="\"$root/models\"")
objs=()
for f in "$root"/src/util/*.c "$root"/src/format/*.c "$root"/src/kernels/*.c \
         "$root"/src/model/*.c "$root"/src/analysis/*.c; do
  o="$out/$(basename "$f" .c).o"
  "$cc" "${flags[@]}" -c "$f" -o "$o"
  objs+=("$o")
done
# an archive, so each test links only the objects it needs (not the JSON readers' libjansson)
rm -f "$out/libcore.a"
aarch64-linux-gnu-ar rcs "$out/libcore.a" "${objs[@]}"
for t in test_kernels test_forward_tiny; do
  "$cc" -std=c17 -D_GNU_SOURCE -O2 -static -I"$root/src" -I"$root/include" -I"$root/tests/unit" \
    "$root"/tests/unit/*/"$t.c" "$out/libcore.a" -lm -lpthread -o "$out/$t"
done
echo "== kernel tests on AArch64 (qemu-aarch64): NEON table against the scalar one"
qemu-aarch64 "$out/test_kernels" | grep -E "neon"
echo "== tiny-model forward pass on AArch64 (qemu-aarch64, NEON kernels)"
if ! qemu-aarch64 "$out/test_forward_tiny" >"$out/test_forward_tiny.log" 2>&1; then
  cat "$out/test_forward_tiny.log"
  exit 1
fi
tail -1 "$out/test_forward_tiny.log"
