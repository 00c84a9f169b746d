#!/usr/bin/env bash
# scripts/arch_changes.sh: the rows of docs/architecture.md's "where does my change go" table,
# made for real in a scratch copy of the committed tree (git archive HEAD, never this checkout):
# each change is applied, the files it touched are listed (git diff --stat in the copy), the copy
# is built, and the change is shown working:
#   1. a Llama-like architecture "llamademo": one new file (a copy of src/model/llama.c under
#      that name) plus one line in RF_ARCHS; shown by the built registry holding it;
#   2. an OpenAI-like HTTP backend "demo": one protocol file plus one line in RF_BACKENDS; shown by
#      `roofline bench --backend x=demo:URL --suites probe` against `roofline fake-backend`;
#   3. a run-file field "demo_note": one row of the field table (and the rf_run_desc member that
#      stores it); shown by `roofline bench --help` listing it and run.json carrying its value;
#   4. a report section "demo": one new file plus one line in RF_REPORT_SECTIONS; shown by
#      `roofline report` printing it in report.md.
# Usage: scripts/arch_changes.sh [SCRATCH_DIR]   (default: a new temporary directory; ~5 min)
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
work="${1:-$(mktemp -d /tmp/arch-changes.XXXXXX)}"
mkdir -p "$work"
tree="$work/tree"
rm -rf "$tree"
mkdir -p "$tree"
git -C "$root" archive HEAD | tar -x -C "$tree"
ln -s "$root/models" "$tree/models"
cd "$tree"
git init -q && git add -A && git -c user.email=a@b -c user.name=arch commit -qm base
fail=0
step() { printf '\n== %s\n' "$*"; }
touched() { git add -A && git diff --cached --stat | sed 's/^/   /'; git -c user.email=a@b -c user.name=arch commit -qm "$1"; }

step "1. a Llama-like architecture: src/model/llamademo.c + one line in RF_ARCHS"
sed 's/rf_arch_llama\b/rf_arch_llamademo/; s/\.name = "llama"/.name = "llamademo"/' \
  src/model/llama.c >src/model/llamademo.c
sed -i 's/^    X(llama)$/    X(llama)                                                                                       \\\n    X(llamademo)/' \
  src/model/model.c
touched arch

step "2. an OpenAI-like HTTP backend: src/backend/demo.c + one line in RF_BACKENDS"
cat >src/backend/demo.c <<'EOF'
/* demo.c: a demonstration backend, "demo:URL": the Chat Completions protocol over the plain HTTP
 * skeleton under a scheme of its own (scripts/arch_changes.sh). */
#include "backend/http_api.h"
#include "backend/openai_proto.h"

static const rf_bk_api_proto demo = {
    .chat_path = "/chat/completions",
    .models_path = "/models",
    .key_prefix = "Authorization: Bearer ",
    .headers = NULL,
    .proto = &rf_bk_openai_chat,
};

const rf_backend_vtable rf_backend_demo = RF_BK_API_BACKEND("demo", &demo);
EOF
sed -i 's/^    X(bedrock)$/    X(bedrock)                                                                                     \\\n    X(demo)/' \
  src/backend/backend.c
touched backend

step "3. a run-file field: one row of src/bench/runfile_fields.c (and its rf_run_desc member)"
sed -i 's/^} rf_run_desc;$/    const char *demo_note; \/* scripts\/arch_changes.sh *\/\n} rf_run_desc;/' src/bench/bench.h
python3 - <<'EOF'
p = "src/bench/runfile_fields.c"
s = open(p).read()
anchor = '    {"", "out", F_STR, D(out_dir),'
if anchor not in s:
    raise SystemExit("arch_changes: no run-file row for \"out\" to place the new row after")
i = s.index("\n", s.index(anchor)) + 1
row = '    {"", "demo_note", F_STR, D(demo_note), .help = "a note (scripts/arch_changes.sh)"},\n'
s = s[:i] + row + s[i:]
open(p, "w").write(s)
EOF
touched field

step "4. a report section: src/report/section_demo.c + one line in RF_REPORT_SECTIONS"
cat >src/report/section_demo.c <<'EOF'
/* section_demo.c: a demonstration section (scripts/arch_changes.sh): one row per backend. */
#include "report/section.h"

static void demo_tables(const rf_report_section *s, rf_tables *ts, const json_t *sum) {
    static const char *cols[] = {"backend", "note"};
    rf_table *t = rf_table_new(ts, s->id, s->title, NULL, 2, cols);
    const char *name;
    const json_t *o;
    json_object_foreach((json_t *)json_object_get(sum, "probe"), name, o) {
        rf_cell *r = rf_table_row(t);
        if (!r) return;
        rf_cell_text(&r[0], "%s", name);
        rf_cell_text(&r[1], "%s", "a demonstration row");
    }
}

const rf_report_section rf_section_demo = {
    .id = "demo",
    .title = "Demo section",
    .tables = demo_tables,
};
EOF
sed -i 's/^    X(agreement_matrix)$/    X(agreement_matrix)                                                                            \\\n    X(demo)/' \
  src/report/sections.c
touched section

step "build"
cmake -S . -B build -DCMAKE_BUILD_TYPE=Release -DROOFLINE_WERROR=ON >/dev/null
cmake --build build -j "$(nproc)" --target roofline >"$work/build.log" 2>&1 || {
  tail -30 "$work/build.log"
  exit 1
}
echo "   built"

step "1. the architecture is registered"
# (counts, not grep -q: with pipefail an early grep exit fails the pipeline on SIGPIPE)
syms=$(nm build/CMakeFiles/roofline_model.dir/src/model/llamademo.c.o | grep -c rf_arch_llamademo || true)
names=$(strings build/roofline | grep -cx llamademo || true)
if [ "$syms" -gt 0 ] && [ "$names" -gt 0 ]; then
  echo "   rf_arch_llamademo is in the binary's architecture table (name \"llamademo\")"
else
  echo "   FAIL: llamademo not in the binary"
  fail=1
fi

step "2. the backend runs the probe suite against the fake server"
port=$((20000 + RANDOM % 20000))
./build/roofline fake-backend --port "$port" --ttft-ms 1 --gap-ms 1 >"$work/fake.log" 2>&1 &
fake=$!
trap 'kill $fake 2>/dev/null || true' EXIT
for _ in $(seq 50); do
  curl -s "http://127.0.0.1:$port/v1/models" >/dev/null && break
  sleep 0.1
done
if ./build/roofline bench --backend "x=demo:http://127.0.0.1:$port/v1" --suites probe \
  --no-progress --out "$work/run" >"$work/bench.log" 2>&1; then
  echo "   roofline bench over demo: exit 0; $(grep -c '"backend"' "$work/run/records.jsonl") record(s)"
else
  echo "   FAIL: roofline bench over demo"
  tail -5 "$work/bench.log"
  fail=1
fi

step "3. the run-file field: in --help, read and written back"
if [ "$(./build/roofline bench --help | grep -c demo_note || true)" -gt 0 ]; then echo "   --help lists demo_note"; else
  echo "   FAIL: --help does not list demo_note"
  fail=1
fi
printf '{"backends": [{"name": "x", "uri": "demo:http://127.0.0.1:%s/v1"}], "suites": ["probe"], "demo_note": "hello"}\n' \
  "$port" >"$work/run.json"
if ./build/roofline bench --run "$work/run.json" --no-progress --out "$work/run2" >"$work/bench2.log" 2>&1 &&
  grep -q '"demo_note": "hello"' "$work/run2/run.json"; then
  echo "   run.json carries \"demo_note\": \"hello\""
else
  echo "   FAIL: demo_note not carried"
  tail -5 "$work/bench2.log"
  fail=1
fi

step "4. the report section"
if ./build/roofline report "$work/run" --out "$work/report" >/dev/null 2>&1 &&
  grep -q "Demo section" "$work/report/report.md"; then
  echo "   report.md has the \"Demo section\" heading"
else
  echo "   FAIL: no Demo section in report.md"
  fail=1
fi
kill $fake 2>/dev/null || true
printf '\narch_changes: %s (scratch: %s)\n' "$([ $fail = 0 ] && echo "every change worked" || echo FAILED)" "$work"
exit $fail
