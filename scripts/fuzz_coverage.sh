#!/usr/bin/env bash
# scripts/fuzz_coverage.sh [--work] [TARGET...]: how much of its own code each fuzz target's
# corpus reaches. Builds the replay mains (tests/fuzz/replay.c) with clang's source-based
# coverage in build-cov, runs each over its committed corpus tests/fuzz/corpus/NAME (with --work,
# also over the working corpus build-fuzz/corpus-work/NAME that scripts/fuzz_run.sh grows), and
# prints, per target, the inputs replayed and the line, function and branch coverage of the
# source files the target is for (the table below, as docs/fuzzing.md lists them), from
# llvm-cov report. libFuzzer's "cov" in fuzz_log.tsv counts edges of every linked file; this
# says what share of the target's own files the corpus runs.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
work=0
if [ "${1:-}" = "--work" ]; then
  work=1
  shift
fi
for tool in clang llvm-profdata llvm-cov; do
  if ! command -v "$tool" >/dev/null; then
    echo "fuzz_coverage: $tool is needed (scripts/setup.sh installs clang)" >&2
    exit 2
  fi
done

declare -A files=(
  [gguf]="src/format/gguf.c"
  [safetensors]="src/format/safetensors.c"
  [tokenizer]="src/model/tokenizer.c src/model/tokenizer_bpe.c src/model/tokenizer_spm.c
               src/model/tokenizer_desc.c src/model/tokenizer_gguf.c src/model/tokenizer_eog.c
               src/model/tokenizer_special.c"
  [runfile]="src/bench/runfile.c src/bench/runfile_fields.c src/bench/runfile_args.c"
  [questions]="src/bench/questions.c"
  [agent_task]="src/bench/agent_task.c src/bench/condition.c src/bench/agent_schema.c
                src/bench/agent_call.c src/bench/agent_tool.c src/bench/agent_grade.c
                src/bench/agent_line.c"
  [sse]="src/backend/sse.c"
  [openai_req]="src/openai/request.c src/openai/tools.c src/openai/error.c src/openai/request_own.c"
  [toolcall]="src/model/toolcall.c src/server/tool_stream.c"
  [eventstream]="src/aws/eventstream.c"
  [json_schema]="src/engine/json_schema.c src/engine/json_match.c"
  [rundir]="src/report/runset.c src/report/analyze.c src/report/econ.c src/report/precision.c
            src/report/speed_load.c src/report/tables.c src/report/sections.c src/report/section_*.c
            src/report/render_md.c src/report/render_html.c src/report/render_csv.c
            src/bench/records.c"
)

targets=()
if [ "$#" -gt 0 ]; then
  for t in "$@"; do targets+=("${t#fuzz_}"); done
else
  for src in "$root"/tests/fuzz/fuzz_*.c; do
    t="$(basename "$src" .c)"
    targets+=("${t#fuzz_}")
  done
fi
for t in "${targets[@]}"; do
  if [ ! -f "$root/tests/fuzz/fuzz_$t.c" ]; then
    echo "fuzz_coverage: no target tests/fuzz/fuzz_$t.c" >&2
    exit 2
  fi
  if [ -z "${files[$t]:-}" ]; then
    echo "fuzz_coverage: fuzz_$t has no source files listed in this script: add them" >&2
    exit 2
  fi
done

build="$root/build-cov"
cmake -S "$root" -B "$build" -DCMAKE_C_COMPILER=clang -DCMAKE_BUILD_TYPE=Debug \
  -DCMAKE_C_FLAGS="-fprofile-instr-generate -fcoverage-mapping" \
  -DCMAKE_EXE_LINKER_FLAGS="-fprofile-instr-generate" >/dev/null
replays=()
for t in "${targets[@]}"; do replays+=("fuzz_${t}_replay"); done
nice -n 5 cmake --build "$build" -j "$(nproc)" --target "${replays[@]}" >/dev/null

printf "%-12s %8s %8s %10s %10s\n" target inputs lines% functions% branches%
for t in "${targets[@]}"; do
  dirs=("$root/tests/fuzz/corpus/$t")
  if [ "$work" -eq 1 ] && [ -d "$root/build-fuzz/corpus-work/$t" ]; then
    dirs+=("$root/build-fuzz/corpus-work/$t")
  fi
  raw="$build/$t.profraw"
  rm -f "$raw"
  out="$(LLVM_PROFILE_FILE="$raw" "$build/tests/fuzz/fuzz_${t}_replay" "${dirs[@]}" 2>&1 |
         tail -n 1)"
  inputs="$(sed -n 's/^replay: \([0-9]*\) inputs.*/\1/p' <<<"$out")"
  llvm-profdata merge -o "$build/$t.profdata" "$raw"
  srcs=()
  for f in ${files[$t]}; do for g in "$root"/$f; do srcs+=("$g"); done; done
  # TOTAL row: regions, missed, %, functions, missed, %, lines, missed, %, branches, missed, %
  llvm-cov report "$build/tests/fuzz/fuzz_${t}_replay" -instr-profile="$build/$t.profdata" \
    "${srcs[@]}" | awk -v t="$t" -v n="${inputs:-0}" '$1 == "TOTAL" {
      printf "%-12s %8d %8s %10s %10s\n", t, n, $10, $7, $13 }'
done
