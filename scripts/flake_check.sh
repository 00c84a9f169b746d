#!/usr/bin/env bash
# scripts/flake_check.sh [RUNS]: the unit tests must not flake on a loaded machine. Starts one
# CPU burner per core (busy shell loops at the default nice 0, as another user's work would be),
# then runs the Release build's suite without the slow tests (`ctest -LE slow`, at the build's
# usual -j) RUNS times (default 3), and reports each run's failures. Exits non-zero when any run
# had a failing test; the burners are stopped however it ends.
# The build folder is $ROOFLINE_BUILD (default build/, configured and built by scripts/test.sh
# or by hand).
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
runs="${1:-3}"
build="${ROOFLINE_BUILD:-$root/build}"
jobs="$(nproc)"
if [[ ! -f "$build/CTestTestfile.cmake" ]]; then
  echo "flake_check: no test build in $build (build it first)" >&2
  exit 2
fi
burners=()
stop_burners() {
  for p in "${burners[@]}"; do kill "$p" 2>/dev/null || true; done
  for p in "${burners[@]}"; do wait "$p" 2>/dev/null || true; done
}
trap stop_burners EXIT
for ((i = 0; i < jobs; i++)); do
  (while :; do :; done) &
  burners+=("$!")
done
echo "flake_check: $runs run(s) of ctest -LE slow in $build beside ${#burners[@]} CPU burners"
failed_runs=0
for ((r = 1; r <= runs; r++)); do
  log="$(mktemp /tmp/roofline-flake-XXXXXX.log)"
  t0=$(date +%s)
  if ctest --test-dir "$build" -LE slow -j "$jobs" --output-on-failure >"$log" 2>&1; then
    echo "flake_check: run $r/$runs passed ($(( $(date +%s) - t0 )) s)"
  else
    failed_runs=$((failed_runs + 1))
    echo "flake_check: run $r/$runs FAILED ($(( $(date +%s) - t0 )) s); failing tests:"
    sed -n '/The following tests FAILED/,$p' "$log"
    echo "flake_check: full log kept in $log"
    continue
  fi
  rm -f "$log"
done
if ((failed_runs)); then
  echo "flake_check: $failed_runs of $runs run(s) had failures"
  exit 1
fi
echo "flake_check: $runs of $runs run(s) passed under load"
