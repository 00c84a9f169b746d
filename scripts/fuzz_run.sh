#!/usr/bin/env bash
# scripts/fuzz_run.sh [--merge] [--jobs N] [--cpu-goal S] SECONDS [TARGET...]: runs each
# libFuzzer target (default: every tests/fuzz/fuzz_NAME.c) for SECONDS on a persistent working
# corpus, build-fuzz/corpus-work/NAME
# (seeded from the committed tests/fuzz/corpus/NAME, kept between runs so the hours add up), and
# appends one line per target to the committed log tests/fuzz/fuzz_log.tsv:
#   date  commit  target  seconds  cpu_seconds  executions  cov  ft  corpus  crashes
# executions is libFuzzer's stat::number_of_executed_units; cov and ft are from its final stats
# line; corpus is the working corpus's file count; crashes is 0 or the artifact names (crash-,
# leak-, timeout-, oom-), which stay in build-fuzz/artifacts/NAME/ for the fix and the
# regression input (commit it into tests/fuzz/corpus/NAME/).
# --merge: afterwards, merges the working corpus into the committed one (-merge=1: only inputs
# that add coverage, so the committed corpus stays small).
# --jobs N: runs N targets at a time (default 1), each a single libFuzzer process; the log lines
# are appended whole as each target ends.
# --cpu-goal S: fuzzes each target only for the CPU-seconds it still lacks against S in the log
# (at most SECONDS of wall time; a target at S or past it is skipped), the one that lacks most
# first. Run it again until every target is skipped: a loaded machine gives less CPU than wall.
# scripts/fuzz_run.sh --summary prints the totals of the log per target (seconds, CPU-seconds and
# CPU-hours, executions, log lines naming an artifact).
# scripts/fuzz_run.sh --merge-only [TARGET...] fuzzes nothing: it merges each target's working
# corpus into the committed one (as --merge does after a run). The working corpora live in
# build-fuzz, which a fresh machine does not have: end a session's fuzzing with it and commit
# tests/fuzz/corpus, or the next session starts again from the seeds.
# Runs at nice 19; a crash does not stop the other targets, but the exit status is 1.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
log="$root/tests/fuzz/fuzz_log.tsv"
header=$'date\tcommit\ttarget\tseconds\tcpu_seconds\texecutions\tcov\tft\tcorpus\tcrashes'

if [ "${1:-}" = "--summary" ]; then
  [ -f "$log" ] || { echo "fuzz_run: no log $log" >&2; exit 1; }
  printf "%-14s %6s %10s %10s %6s %14s %8s\n" target runs seconds cpu_s cpu_h executions crashes
  awk -F'\t' 'NR > 1 { s[$3] += $4; c[$3] += $5; e[$3] += $6; n[$3]++; if ($10 != "0") k[$3]++ }
    END { for (t in s) printf "%-14s %6d %10d %10.0f %6.2f %14d %8d\n", t, n[t], s[t], c[t],
                              c[t] / 3600, e[t], k[t] }' "$log" | sort
  exit 0
fi

merge=0
merge_only=0
jobs=1
goal=0
while [ "$#" -gt 0 ]; do
  case "$1" in
    --merge) merge=1; shift ;;
    --merge-only) merge_only=1; shift ;;
    --jobs)
      jobs="${2:-}"
      if ! [[ "$jobs" =~ ^[1-9][0-9]*$ ]]; then
        echo "fuzz_run: --jobs wants a positive count, not '${2:-}'" >&2
        exit 2
      fi
      shift 2 ;;
    --cpu-goal)
      goal="${2:-}"
      if ! [[ "$goal" =~ ^[1-9][0-9]*$ ]]; then
        echo "fuzz_run: --cpu-goal wants a positive count of CPU-seconds, not '${2:-}'" >&2
        exit 2
      fi
      shift 2 ;;
    *) break ;;
  esac
done
if [ "$merge_only" -eq 1 ]; then
  set -- 1 "$@" # no SECONDS: the targets follow
fi
secs="${1:-}"
if ! [[ "$secs" =~ ^[1-9][0-9]*$ ]]; then
  echo "usage: scripts/fuzz_run.sh [--merge] [--jobs N] [--cpu-goal S] SECONDS [TARGET...]" \
    "(or --merge-only [TARGET...], or --summary)" >&2
  exit 2
fi
shift
if ! command -v clang >/dev/null; then
  echo "fuzz_run: clang is needed (libFuzzer); scripts/setup.sh installs it" >&2
  exit 2
fi

targets=()
if [ "$#" -gt 0 ]; then
  for t in "$@"; do
    t="${t#fuzz_}"
    if [ ! -f "$root/tests/fuzz/fuzz_$t.c" ]; then
      echo "fuzz_run: no target tests/fuzz/fuzz_$t.c" >&2
      exit 2
    fi
    targets+=("$t")
  done
else
  for src in "$root"/tests/fuzz/fuzz_*.c; do
    t="$(basename "$src" .c)"
    targets+=("${t#fuzz_}")
  done
fi

# With --cpu-goal: each target's wall seconds = what it lacks (at most secs), most first.
declare -A run_secs
for t in "${targets[@]}"; do run_secs[$t]="$secs"; done
if [ "$goal" -gt 0 ]; then
  plan="$(for t in $(printf '%s\n' "${targets[@]}" | sort -u); do
    cpu_done="$(awk -F'\t' -v t="$t" 'NR > 1 && $3 == t { c += $5 } END { printf "%d", c }' \
      "$log" 2>/dev/null || echo 0)"
    echo "$((goal - ${cpu_done:-0})) $t $cpu_done"
  done | sort -rn)"
  targets=()
  while read -r lack t cpu_done; do
    if [ "$lack" -le 0 ]; then
      echo "== fuzz_$t: skipped, ${cpu_done} CPU-s logged (goal $goal)"
      continue
    fi
    targets+=("$t")
    run_secs[$t]=$((lack < secs ? lack : secs))
  done <<<"$plan"
  if [ "${#targets[@]}" -eq 0 ]; then
    echo "fuzz_run: every target has its $goal CPU-seconds in $log"
    exit 0
  fi
fi

build="$root/build-fuzz"
cmake -S "$root" -B "$build" -DCMAKE_C_COMPILER=clang -DCMAKE_BUILD_TYPE=Debug \
  -DROOFLINE_FUZZ=ON >/dev/null
nice -n 19 cmake --build "$build" -j "$(nproc)" --target "${targets[@]/#/fuzz_}"

# merge_one TARGET: adds to tests/fuzz/corpus/TARGET the inputs of its working corpus that reach
# coverage the committed ones do not (libFuzzer -merge=1), and says how many it holds then
merge_one() {
  local t="$1" seeds="$root/tests/fuzz/corpus/$1" work="$build/corpus-work/$1" before
  if [ ! -d "$work" ]; then
    echo "   fuzz_$t: no working corpus $work: nothing to merge"
    return 0
  fi
  mkdir -p "$seeds"
  before="$(ls "$seeds" | wc -l)"
  nice -n 19 "$build/tests/fuzz/fuzz_$t" -merge=1 -max_len=4096 "$seeds" "$work" \
    >"$build/fuzz-$t.merge.log" 2>&1
  echo "   merged fuzz_$t: tests/fuzz/corpus/$t held $before inputs, now $(ls "$seeds" | wc -l)"
}

if [ "$merge_only" -eq 1 ]; then
  for t in "${targets[@]}"; do merge_one "$t"; done
  exit 0
fi

commit="$(git -C "$root" rev-parse --short=12 HEAD 2>/dev/null || echo unknown)"
if [ -n "$(git -C "$root" status --porcelain -- src tests/fuzz/*.c tests/fuzz/*.h 2>/dev/null)" ]
then
  commit="$commit+dirty"
fi
[ -f "$log" ] || echo "$header" >"$log"

# run_one TARGET: fuzzes one target, appends its log line; returns 1 when it found something
run_one() {
  local t="$1" secs="${run_secs[$1]}" line seeds work art args before out rc cpu execs final cov ft new crashes
  seeds="$root/tests/fuzz/corpus/$t"
  work="$build/corpus-work/$t"
  art="$build/artifacts/$t"
  mkdir -p "$work" "$art"
  if [ -d "$seeds" ]; then cp -rn "$seeds"/. "$work"/; fi
  args=(-max_total_time="$secs" -max_len=4096 -timeout=10 -rss_limit_mb=2048
        -artifact_prefix="$art/" -print_final_stats=1)
  if [ -f "$root/tests/fuzz/$t.dict" ]; then args+=(-dict="$root/tests/fuzz/$t.dict"); fi
  before="$(ls "$art" | sort)"
  out="$build/fuzz-$t.log"
  echo "== fuzz_$t: ${secs}s on $work ($(ls "$work" | wc -l) inputs)"
  rc=0
  (cd "$art" && /usr/bin/time -f "%U %S" -o "$build/fuzz-$t.time" \
    nice -n 19 "$build/tests/fuzz/fuzz_$t" "${args[@]}" "$work" >"$out" 2>&1) || rc=$?
  # the last line: time puts "Command exited with non-zero status N" before it after a crash
  cpu="$(tail -n 1 "$build/fuzz-$t.time" 2>/dev/null | awk '{ printf "%.1f", $1 + $2 }')"
  execs="$(sed -n 's/^stat::number_of_executed_units: *//p' "$out" | tail -n 1)"
  final="$(grep -E '^#[0-9]+[[:space:]]+(DONE|pulse|NEW|REDUCE|INITED)' "$out" | tail -n 1 || true)"
  cov="$(sed -n 's/.* cov: \([0-9]*\).*/\1/p' <<<"$final")"
  ft="$(sed -n 's/.* ft: \([0-9]*\).*/\1/p' <<<"$final")"
  new="$(comm -13 <(echo "$before") <(ls "$art" | sort) | grep -E '^(crash|leak|timeout|oom)-' |
         paste -sd, - || true)"
  crashes="${new:-0}"
  if [ "$rc" -ne 0 ] && [ "$crashes" = "0" ]; then crashes="exit-$rc"; fi
  line="$(printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s' "$(date -u +%Y-%m-%dT%H:%M:%SZ)" \
    "$commit" "$t" "$secs" "${cpu:-0}" "${execs:-0}" "${cov:-0}" "${ft:-0}" \
    "$(ls "$work" | wc -l)" "$crashes")"
  echo "$line" >>"$log"  # one short write with O_APPEND: whole lines when jobs end together
  echo "$line"
  if [ "$crashes" != "0" ]; then
    grep -E 'ERROR|SUMMARY|==[0-9]+==' "$out" | head -n 5 >&2 || true
    echo "fuzz_run: fuzz_$t found $crashes (in $art; log $out)" >&2
  elif [ "$merge" -eq 1 ]; then
    merge_one "$t"
  fi
  [ "$crashes" = "0" ]
}

failed=0
running=0
for t in "${targets[@]}"; do
  if [ "$running" -ge "$jobs" ]; then
    wait -n || failed=1
    running=$((running - 1))
  fi
  run_one "$t" &
  running=$((running + 1))
done
while [ "$running" -gt 0 ]; do
  wait -n || failed=1
  running=$((running - 1))
done
exit "$failed"
