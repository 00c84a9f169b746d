#!/usr/bin/env bash
# scripts/test.sh: builds roofline twice (Release, and Debug with AddressSanitizer and
# UndefinedBehaviorSanitizer) with warnings as errors, and runs the tests: every test in the
# Release build once (those labelled "slow" on an idle machine; all the others while every core is
# kept busy by another process, scripts/flake_check.sh 1, so a timing check that flakes under load
# fails CI), the unit tests (all but those labelled "slow") in the sanitizer build, the
# concurrency tests (engine scheduler, bench loop, bench over the engine, the bench's hostile-input
# and kill/resume cases) under ThreadSanitizer,
# and the kernel tests cross-built for AArch64 under qemu (scripts/check_neon.sh: the NEON table,
# which this x86 machine cannot run natively), every libFuzzer target for 30 s over a copy of its
# corpus (scripts/fuzz_smoke.sh, clang).
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
jobs="$(nproc)"
echo "== layer graph (scripts/check_layers.py: docs/architecture.md against CMakeLists.txt and every #include)"
python3 "$root/scripts/check_layers.py"
cmake -S "$root" -B "$root/build" -DCMAKE_BUILD_TYPE=Release -DROOFLINE_WERROR=ON >/dev/null
cmake --build "$root/build" -j "$jobs"
cmake -S "$root" -B "$root/build-asan" -DCMAKE_BUILD_TYPE=Debug -DROOFLINE_SANITIZE=ON \
  -DROOFLINE_WERROR=ON >/dev/null
cmake --build "$root/build-asan" -j "$jobs"
cmake -S "$root" -B "$root/build-tsan" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DROOFLINE_TSAN=ON \
  -DROOFLINE_WERROR=ON >/dev/null
cmake --build "$root/build-tsan" -j "$jobs" --target roofline test_engine test_loop test_bench \
  test_bench_hostile test_serve_http test_metrics test_constraint test_engine_sampling
export ASAN_OPTIONS="detect_leaks=1:abort_on_error=1"
export UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1"
echo "== slow tests (Release)"
ctest --test-dir "$root/build" --output-on-failure -j "$jobs" -L slow
echo "== the other tests (Release), under load (scripts/flake_check.sh 1)"
"$root/scripts/flake_check.sh" 1
echo "== unit tests (ASan+UBSan)"
ctest --test-dir "$root/build-asan" --output-on-failure -j "$jobs" -LE slow
echo "== concurrency tests (ThreadSanitizer)"
TSAN_OPTIONS="halt_on_error=1" ctest --test-dir "$root/build-tsan" --output-on-failure \
  -R "^(test_engine|test_loop|test_bench|test_bench_hostile|test_serve_http|test_metrics|test_constraint|test_engine_sampling)$"
"$root/scripts/check_neon.sh"
echo "== fuzz smoke (libFuzzer, 30 s per target)"
"$root/scripts/fuzz_smoke.sh" 30
