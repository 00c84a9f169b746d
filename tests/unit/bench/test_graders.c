/* test_graders.c: accuracy graders, question files, agent tasks, the count_ids tool, BFCL-style
 * call grading and the seed's agent output line (the condition language: test_condition.c). */
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "bench/agent_task.h"
#include "bench/graders.h"
#include "bench/questions.h"
#include "check.h"

/* ---- helpers ---- */

/* Finds a file under the repository's data/ folder: $ROOFLINE_DATA_DIR, then beside
 * $ROOFLINE_TEST_DATA (tests/data), then from this source file's path, then ./data. */
static const char *data_path(const char *rel, char *buf, size_t cap) {
    const char *env = getenv("ROOFLINE_DATA_DIR");
    const char *td = getenv("ROOFLINE_TEST_DATA");
    char cand[4][1024];
    int n = 0;
    if (env) snprintf(cand[n++], sizeof cand[0], "%.800s/%.100s", env, rel);
    if (td) snprintf(cand[n++], sizeof cand[0], "%.800s/../../data/%.100s", td, rel);
    const char *me = __FILE__, *tail = strstr(me, "tests/unit/bench/test_graders.c");
    int dir_len = tail && tail - me < 800 ? (int)(tail - me) : -1;
    if (dir_len >= 0) snprintf(cand[n++], sizeof cand[0], "%.*sdata/%.100s", dir_len, me, rel);
    snprintf(cand[n++], sizeof cand[0], "data/%.100s", rel);
    for (int k = 0; k < n; k++) {
        FILE *f = fopen(cand[k], "rb");
        if (f) {
            fclose(f);
            snprintf(buf, cap, "%.1000s", cand[k]);
            return buf;
        }
    }
    snprintf(buf, cap, "%.1000s", cand[n - 1]);
    return buf;
}

#define MAX_TEMPS 64
static char g_temps[MAX_TEMPS][64];
static int g_n_temps;

/* Writes text to a new temporary file; returns its path (removed at exit). */
static const char *temp_file(const char *text, size_t len) {
    if (g_n_temps >= MAX_TEMPS) abort();
    char *path = g_temps[g_n_temps++];
    const char *dir = getenv("TMPDIR");
    snprintf(path, 64, "%s/rf_graders_XXXXXX", dir && strlen(dir) < 40 ? dir : "/tmp");
    int fd = mkstemp(path);
    if (fd < 0) abort();
    if (len && write(fd, text, len) != (ssize_t)len) abort();
    close(fd);
    return path;
}

static void remove_temps(void) {
    for (int k = 0; k < g_n_temps; k++) unlink(g_temps[k]);
}

static bool has(const char *hay, const char *needle) {
    return strstr(hay, needle) != NULL;
}

/* ---- number grader ---- */

static void grade_num(const char *reply, const char *expected, bool correct, const char *value) {
    rf_grade g;
    rf_grade_number(reply, strlen(reply), expected, &g);
    CHECK_MSG(g.correct == correct, "number: reply \"%s\" vs \"%s\": correct=%d", reply, expected,
              g.correct);
    if (value) {
        CHECK_MSG(strcmp(g.value, value) == 0, "number: reply \"%s\": value \"%s\", want \"%s\"",
                  reply, g.value, value);
        CHECK(g.found);
    } else {
        CHECK_MSG(!g.found && g.value[0] == 0, "number: reply \"%s\": found \"%s\"", reply,
                  g.value);
    }
}

static void test_number(void) {
    grade_num("The answer is 1,234.", "1234", true, "1234");
    grade_num("The answer is 1,234.", "1,234", true, "1234");
    grade_num("-5", "-5", true, "-5");
    grade_num("-5", "5", false, "-5");
    grade_num("926.0", "926", true, "926");
    grade_num("926.50", "926.5", true, "926.5");
    grade_num("I think 12 or 13; final: 13", "13", true, "13");
    grade_num("I think 12 or 13; final: 13", "12", false, "13");
    grade_num("876 + 608 - 558 = 926", "926", true, "926");
    grade_num("876 + 608 - 558 = 1026", "926", false, "1026"); /* the seed's bf16 miss */
    grade_num("257 + 388 - 290 = 655", "355", false, "655");   /* the seed's QAT miss */
    grade_num("**926**", "926", true, "926");
    grade_num("\\boxed{355}", "355", true, "355");
    grade_num("pages 10-20", "20", true, "20");
    grade_num("x = -7.", "-7", true, "-7");
    grade_num("\xe2\x88\x92"
              "5",
              "-5", true, "-5");          /* U+2212 minus sign */
    grade_num("12,34", "34", true, "34"); /* not a thousands separator */
    grade_num("12345,678", "678", true, "678");
    grade_num("Total: 1,234,567 units", "1234567", true, "1234567");
    grade_num("-0", "0", true, "0");
    grade_num("0.0", "0", true, "0");
    grade_num("007", "7", true, "7");
    grade_num("1.2.3", "3", true, "3");
    grade_num("no number here", "5", false, NULL);
    grade_num("", "5", false, NULL);

    /* the reply need not be NUL-terminated: only len bytes count */
    rf_grade g;
    rf_grade_number("926 and then 5", 3, "926", &g);
    CHECK(g.correct && strcmp(g.value, "926") == 0);

    /* a number longer than the record buffer: truncated value, exact comparison */
    char big[301];
    for (int k = 0; k < 300; k++) big[k] = (char)('1' + k % 9);
    big[300] = 0;
    rf_grade_number(big, 300, big, &g);
    CHECK(g.correct && g.truncated && strlen(g.value) == RF_GRADE_VALUE_MAX - 1);
    char big2[301];
    memcpy(big2, big, sizeof big);
    big2[299] = big2[299] == '9' ? '1' : (char)(big2[299] + 1);
    rf_grade_number(big, 300, big2, &g);
    CHECK(!g.correct);

    char c[32];
    CHECK(rf_number_canonical("1,234", 5, c, sizeof c) && strcmp(c, "1234") == 0);
    CHECK(rf_number_canonical(" +7 ", 4, c, sizeof c) && strcmp(c, "7") == 0);
    CHECK(rf_number_canonical("-0.50", 5, c, sizeof c) && strcmp(c, "-0.5") == 0);
    CHECK(!rf_number_canonical("12a", 3, c, sizeof c));
    CHECK(!rf_number_canonical("1,23", 4, c, sizeof c));
    CHECK(!rf_number_canonical("", 0, c, sizeof c));
    CHECK(!rf_number_canonical("-", 1, c, sizeof c));
    CHECK(!rf_number_canonical("1e5", 3, c, sizeof c));
    CHECK(rf_numbers_equal("926.000", "926"));
    CHECK(!rf_numbers_equal("926", "-926"));
    CHECK(!rf_numbers_equal("x", "x"));

    /* the agent's quoted number skips comparison operands and totals */
    const char *qs[][2] = {
        {"There are 8 ids that are >= 10.", "8"},
        {"8 of the 11 ids are greater than or equal to 10.", "8"},
        {"8 out of 11 ids are at least 10", "8"},
        {"The count_ids tool returned 8 for id \xe2\x89\xa5 10.", "8"},
        {"Answer: 8", "8"},
        {"The count is 7.", "7"},
    };
    for (size_t k = 0; k < sizeof qs / sizeof qs[0]; k++) {
        bool ok = rf_quoted_number(qs[k][0], strlen(qs[k][0]), c, sizeof c);
        CHECK_MSG(ok && strcmp(c, qs[k][1]) == 0, "quoted(\"%s\") = \"%s\", want %s", qs[k][0],
                  ok ? c : "(none)", qs[k][1]);
    }
    CHECK(!rf_quoted_number("all ids >= 10", 13, c, sizeof c));
    CHECK(rf_final_number("all ids >= 10", 13, c, sizeof c) && strcmp(c, "10") == 0);
}

/* ---- exact and word graders ---- */

static void test_exact(void) {
    rf_grade g;
    rf_grade_exact("  Paris \n", 9, "Paris", &g);
    CHECK(g.correct && g.found && strcmp(g.value, "Paris") == 0);
    rf_grade_exact("paris", 5, "Paris", &g);
    CHECK(!g.correct && strcmp(g.value, "paris") == 0);
    rf_grade_exact("Paris.", 6, "Paris", &g);
    CHECK(!g.correct);
    rf_grade_exact(" \t\n", 3, "Paris", &g);
    CHECK(!g.correct && !g.found);
    rf_grade_exact("ab", 2, " ab ", &g);
    CHECK(g.correct);
}

static void grade_word(const char *reply, const char *answer, const char *const *aliases, int32_t n,
                       bool correct, const char *value) {
    rf_grade g;
    rf_grade_word(reply, strlen(reply), answer, aliases, n, &g);
    CHECK_MSG(g.correct == correct, "word: reply \"%s\" vs \"%s\": correct=%d", reply, answer,
              g.correct);
    if (value)
        CHECK_MSG(strcmp(g.value, value) == 0, "word: reply \"%s\": value \"%s\", want \"%s\"",
                  reply, g.value, value);
}

static void test_word(void) {
    const char *dc[] = {"Washington D.C.", "Washington DC", "Washington"};
    grade_word("Washington, D.C.", "Washington, D.C.", dc, 3, true, "Washington, D.C.");
    grade_word("washington, d.c.", "Washington, D.C.", dc, 3, true, "washington, d.c.");
    grade_word("The capital is Washington DC.", "Washington, D.C.", dc, 3, true, "Washington DC");
    grade_word("Washington", "Washington, D.C.", dc, 3, true, "Washington");
    grade_word("Washington, D.C.", "Washington, D.C.", NULL, 0, true, NULL);
    grade_word("Washingtonian", "Washington, D.C.", dc, 3, false, "");
    grade_word("paris", "Paris", NULL, 0, true, "paris");
    grade_word("Parisian", "Paris", NULL, 0, false, "");
    grade_word("Paris.", "Paris", NULL, 0, true, "Paris");
    grade_word("It's PARIS!", "Paris", NULL, 0, true, "PARIS");
    grade_word("The capital of France is Paris", "Paris", NULL, 0, true, "Paris");
    grade_word("\xe2\x80\x9cParis\xe2\x80\x9d", "Paris", NULL, 0, true, "Paris"); /* “Paris” */
    grade_word("Paris's museums", "Paris", NULL, 0, true, "Paris");
    grade_word("Sparis", "Paris", NULL, 0, false, NULL);
    grade_word("Paris_", "Paris", NULL, 0, false, NULL);
    grade_word("Sydney", "Canberra", NULL, 0, false, NULL);
    grade_word("Not Sydney: Canberra\n", "Canberra", NULL, 0, true, "Canberra");
    const char *br[] = {"Brasilia"};
    grade_word("Brasilia", "Bras\xc3\xadlia", br, 1, true, "Brasilia");
    grade_word("BRAS\xc3\x8dLIA", "Bras\xc3\xadlia", br, 1, true, "BRAS\xc3\x8dLIA");
    grade_word("Bras\xc3\xadliano", "Bras\xc3\xadlia", br, 1, false, NULL);
    grade_word("Berne", "Bern", NULL, 0, false, NULL);
    const char *be[] = {"Berne"};
    grade_word("Berne", "Bern", be, 1, true, "Berne");
    grade_word("Bernese", "Bern", be, 1, false, NULL);
    grade_word("Buenos\n  Aires", "Buenos Aires", NULL, 0, true, "Buenos\n  Aires");
    grade_word("BuenosAires", "Buenos Aires", NULL, 0, false, NULL);
    grade_word("", "Paris", NULL, 0, false, NULL);
    grade_word("\xff\xfeParis\xff", "Paris", NULL, 0, true, "Paris"); /* invalid UTF-8 around */
    grade_word("Paris", "   ", NULL, 0, false, NULL);
}

/* ---- agreement ---- */

static void test_agreement(void) {
    const char *ids[] = {"q1", "q2", "q3", "q4", "q5"};
    rf_reply_ref a[] = {{"926", 3}, {"Paris", 5}, {NULL, 0}, {"a\0b", 3}, {"", 0}};
    rf_reply_ref b[] = {{"926", 3}, {"paris", 5}, {NULL, 0}, {"a\0c", 3}, {"", 0}};
    CHECK(rf_replies_identical(&a[0], &b[0]));
    CHECK(!rf_replies_identical(&a[1], &b[1]));
    CHECK(!rf_replies_identical(&a[2], &b[2])); /* two failures do not agree */
    CHECK(rf_replies_identical(&a[4], &b[4]));  /* two empty replies do */
    rf_agreement ag;
    rf_error err;
    CHECK(rf_agreement_compare(ids, a, b, 5, &ag, &err) == RF_OK);
    CHECK(ag.n_items == 5 && ag.n_identical == 2 && ag.n_diff == 3);
    CHECK(ag.n_diff == 3 && strcmp(ag.diff_ids[0], "q2") == 0 &&
          strcmp(ag.diff_ids[1], "q3") == 0 && strcmp(ag.diff_ids[2], "q4") == 0);
    rf_agreement_free(&ag);
    CHECK(rf_agreement_compare(ids, a, b, 0, &ag, &err) == RF_OK && ag.n_diff == 0);
    rf_agreement_free(&ag);
    CHECK(rf_agreement_compare(ids, a, b, -1, &ag, &err) == RF_ERR_ARG);
}

/* ---- question files ---- */

static void test_questions_committed(void) {
    char path[1024];
    data_path("accuracy/seed40.jsonl", path, sizeof path);
    rf_question *qs;
    int32_t n;
    rf_error err = {0};
    rf_status st = rf_questions_load(path, NULL, &qs, &n, &err);
    CHECK_MSG(st == RF_OK, "%s", err.msg);
    if (st) return;
    CHECK(n == 40);
    CHECK(rf_questions_count_category(qs, n, "multiplication") == 15);
    CHECK(rf_questions_count_category(qs, n, "multi_step") == 15);
    CHECK(rf_questions_count_category(qs, n, "capital") == 10);
    bool seed1 = false, seed2 = false;
    for (int32_t i = 0; i < n; i++) {
        const rf_question *q = &qs[i];
        if (has(q->prompt, "876 + 608 - 558")) seed1 = strcmp(q->answer, "926") == 0;
        if (has(q->prompt, "257 + 388 - 290")) seed2 = strcmp(q->answer, "355") == 0;
        CHECK(q->line == i + 1);
        /* every question is graded correct on its own answer, and wrong on nonsense */
        rf_grade g;
        rf_grade_question(q, q->answer, strlen(q->answer), &g);
        CHECK_MSG(g.correct, "%s: own answer graded wrong", q->id);
        rf_grade_question(q, "I don't know", 12, &g);
        CHECK_MSG(!g.correct, "%s: nonsense graded correct", q->id);
        if (q->grader == RF_GRADER_NUMBER) {
            char reply[128];
            snprintf(reply, sizeof reply, "%s = %s.0", q->prompt, q->answer);
            rf_grade_question(q, reply, strlen(reply), &g);
            CHECK_MSG(g.correct, "%s: \"%s\" graded wrong", q->id, reply);
        }
        CHECK(strcmp(q->category, "capital") == 0 ? q->grader == RF_GRADER_WORD
                                                  : q->grader == RF_GRADER_NUMBER);
    }
    CHECK(seed1 && seed2);
    for (int32_t i = 0; i < n; i++) {
        if (strcmp(qs[i].answer, "Washington, D.C.") != 0) continue;
        rf_grade g;
        rf_grade_question(&qs[i], "Washington DC", 13, &g);
        CHECK(g.correct && qs[i].n_aliases >= 1);
    }
    rf_questions_free(qs, n);
}

typedef struct bad_case {
    const char *text;
    const char *want[3]; /* substrings the message must contain */
} bad_case;

#define QL(id, grader, answer)                                                                     \
    "{\"id\": \"" id "\", \"category\": \"c\", \"prompt\": \"p\", \"answer\": \"" answer           \
    "\", \"grader\": \"" grader "\"}\n"

static void test_questions_bad(void) {
    const bad_case cases[] = {
        {QL("a", "number", "1") "{\"id\": \"b\", \"category\": \n", {":2:", "invalid JSON"}},
        {QL("a", "number", "1") "\n"
                                "{\"id\": \"b\", \"category\": \"c\", \"prompt\": \"p\", "
                                "\"grader\": \"number\"}\n",
         {":3:", "field 'answer'", "missing"}},
        {"{\"id\": \"a\", \"category\": \"c\", \"prompt\": \"  \", \"answer\": \"1\", "
         "\"grader\": \"number\"}\n",
         {":1:", "field 'prompt'", "empty"}},
        {QL("a", "numbr", "1"), {":1:", "field 'grader'", "unknown grader \"numbr\""}},
        {QL("a", "number", "1") QL("b", "number", "2") QL("c", "number", "3")
             QL("a", "number", "4"),
         {":4:", "field 'id'", "duplicate id \"a\" (first on line 1)"}},
        {QL("a", "number", "twelve"), {":1:", "field 'answer'", "not a number"}},
        {"{\"id\": \"a\", \"category\": \"c\", \"prompt\": \"p\", \"answer\": \"1\", "
         "\"grader\": \"number\", \"aliases\": [\"one\"]}\n",
         {":1:", "field 'aliases'", "word"}},
        {"{\"id\": \"a\", \"category\": \"c\", \"prompt\": \"p\", \"answer\": \"x\", "
         "\"grader\": \"word\", \"aliases\": [\"y\", \"\"]}\n",
         {":1:", "field 'aliases[1]'"}},
        {"{\"id\": \"a\", \"category\": \"c\", \"prompt\": \"p\", \"answer\": \"x\", "
         "\"grader\": \"word\", \"alias\": [\"y\"]}\n",
         {":1:", "field 'alias'", "unknown field"}},
        {"{\"id\": 5, \"category\": \"c\", \"prompt\": \"p\", \"answer\": \"1\", "
         "\"grader\": \"number\"}\n",
         {":1:", "field 'id'", "must be a string"}},
        {QL("a b", "number", "1"), {":1:", "field 'id'"}},
        {"[1, 2]\n", {":1:", "expected a JSON object"}},
        {"{\"id\": \"a\", \"id\": \"b\"}\n", {":1:", "invalid JSON", "duplicate"}},
        {"", {"no questions"}},
        {"\n  \n", {"no questions"}},
    };
    for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
        const char *path = temp_file(cases[k].text, strlen(cases[k].text));
        rf_question *qs = (rf_question *)1;
        int32_t n = -1;
        rf_error err = {0};
        rf_status st = rf_questions_load(path, NULL, &qs, &n, &err);
        CHECK_MSG(st == RF_ERR_FORMAT, "case %zu: status %d", k, (int)st);
        CHECK(qs == NULL && n == 0);
        CHECK_MSG(has(err.msg, path), "case %zu: message does not name the file: %s", k, err.msg);
        for (int w = 0; w < 3 && cases[k].want[w]; w++)
            CHECK_MSG(has(err.msg, cases[k].want[w]), "case %zu: \"%s\" lacks \"%s\"", k, err.msg,
                      cases[k].want[w]);
    }

    /* limits */
    const char *three = QL("a", "number", "1") QL("b", "number", "2") QL("c", "number", "3");
    const char *path = temp_file(three, strlen(three));
    rf_question *qs;
    int32_t n;
    rf_error err = {0};
    rf_questions_limits lim = {.max_count = 2};
    CHECK(rf_questions_load(path, &lim, &qs, &n, &err) == RF_ERR_FORMAT);
    CHECK_MSG(has(err.msg, ":3:") && has(err.msg, "more than 2 questions"), "%s", err.msg);
    lim = (rf_questions_limits){.max_line = 40};
    CHECK(rf_questions_load(path, &lim, &qs, &n, &err) == RF_ERR_FORMAT);
    CHECK_MSG(has(err.msg, ":1:") && has(err.msg, "longer than 40 bytes"), "%s", err.msg);
    CHECK(rf_questions_load(path, NULL, &qs, &n, &err) == RF_OK && n == 3);
    rf_questions_free(qs, n);

    /* CRLF, blank lines, no final newline; line numbers count blank lines */
    const char *crlf = "{\"id\": \"a\", \"category\": \"c\", \"prompt\": \"p\", \"answer\": \"1\", "
                       "\"grader\": \"exact\"}\r\n\r\n"
                       "{\"id\": \"b\", \"category\": \"c\", \"prompt\": \"p\", \"answer\": "
                       "\"x\", \"grader\": \"word\", \"aliases\": [\"y\"]}";
    path = temp_file(crlf, strlen(crlf));
    CHECK(rf_questions_load(path, NULL, &qs, &n, &err) == RF_OK);
    CHECK(n == 2 && qs[1].line == 3 && qs[1].n_aliases == 1 && strcmp(qs[1].aliases[0], "y") == 0);
    CHECK(n == 2 && qs[0].grader == RF_GRADER_EXACT && qs[1].grader == RF_GRADER_WORD);
    rf_questions_free(qs, n);

    /* a NUL byte inside a line */
    const char nul[] = "{\"id\": \"a\"\0}\n";
    path = temp_file(nul, sizeof nul - 1);
    CHECK(rf_questions_load(path, NULL, &qs, &n, &err) == RF_ERR_FORMAT && has(err.msg, ":1:"));

    CHECK(rf_questions_load("/nonexistent/q.jsonl", NULL, &qs, &n, &err) == RF_ERR_IO);
    CHECK(has(err.msg, "/nonexistent/q.jsonl"));

    rf_grader_kind gk;
    CHECK(rf_grader_kind_parse("word", &gk) && gk == RF_GRADER_WORD);
    CHECK(!rf_grader_kind_parse("Word", &gk));
    CHECK(strcmp(rf_grader_kind_name(RF_GRADER_NUMBER), "number") == 0);
}

/* ---- agent tasks ---- */

static json_t *g_task_json; /* the committed task, parsed, for variants */

static bool load_task(rf_agent_task *t) {
    char path[1024];
    data_path("agent/count_ids.json", path, sizeof path);
    rf_error err = {0};
    rf_status st = rf_agent_task_load(path, t, &err);
    CHECK_MSG(st == RF_OK, "%s", err.msg);
    if (st) return false;
    if (!g_task_json) {
        json_error_t je;
        g_task_json = json_load_file(path, 0, &je);
        CHECK(g_task_json != NULL);
    }
    return g_task_json != NULL;
}

/* Writes a variant of the committed task to a temp file and loads it. */
static rf_status load_variant(json_t *v, rf_agent_task *t, rf_error *err, const char **path_out) {
    char *text = json_dumps(v, 0);
    if (!text) abort();
    const char *path = temp_file(text, strlen(text));
    free(text);
    if (path_out) *path_out = path;
    return rf_agent_task_load(path, t, err);
}

static json_t *params_of(json_t *task) {
    return json_object_get(
        json_object_get(json_array_get(json_object_get(task, "tools"), 0), "function"),
        "parameters");
}

/* The filter-string form of the task: {"ids", "filter"}. */
static json_t *filter_variant(void) {
    json_t *v = json_deep_copy(g_task_json);
    json_t *props = json_object_get(params_of(v), "properties");
    json_object_del(props, "op");
    json_object_del(props, "threshold");
    json_object_set_new(props, "filter",
                        json_pack("{s:s, s:s}", "type", "string", "description",
                                  "The condition, e.g. \"id >= 10\"."));
    json_object_set_new(params_of(v), "required", json_pack("[s, s]", "ids", "filter"));
    return v;
}

static void test_task_loader(void) {
    rf_agent_task t;
    if (!load_task(&t)) return;
    CHECK(strcmp(t.name, "count_ids") == 0 && strcmp(t.function, "count_ids") == 0);
    CHECK(t.runs == 3 && t.max_turns == 4 && t.n_ids == 11);
    CHECK(strcmp(t.answer, "8") == 0);
    CHECK(t.n_filters == 1 && t.filters[0].op == RF_COND_GE && t.filters[0].threshold == 10);
    CHECK(t.form == RF_TOOL_FORM_OP_THRESHOLD);
    CHECK(t.tool_choice && strcmp(t.tool_choice, "auto") == 0);
    CHECK(t.system && has(t.user, "greater than or equal to 10"));
    /* the ids: 8 are >= 10; the boundary values 9 and 10 make off-by-one filters miscount */
    int ge = 0, gt = 0, le = 0, lt = 0, eq = 0;
    bool has9 = false, has10 = false;
    for (int32_t k = 0; k < t.n_ids; k++) {
        ge += t.ids[k] >= 10, gt += t.ids[k] > 10, le += t.ids[k] <= 10, lt += t.ids[k] < 10;
        eq += t.ids[k] == 10;
        has9 |= t.ids[k] == 9, has10 |= t.ids[k] == 10;
    }
    CHECK(ge == 8 && gt == 7 && le == 4 && lt == 3 && eq == 1 && has9 && has10);
    json_error_t je;
    json_t *tools = json_loads(t.tools_json, 0, &je);
    CHECK(json_is_array(tools) && json_array_size(tools) == 1);
    CHECK(has(t.tools_json, "\"name\":\"count_ids\"") && has(t.tools_json, "\"threshold\""));
    json_decref(tools);
    rf_agent_task_free(&t);
    rf_agent_task_free(&t); /* idempotent */

    /* bad variants: each message names the file and the field */
    typedef struct {
        json_t *v;
        const char *want[2];
    } bad;
    bad cases[16];
    int nc = 0;
    json_t *v;

    v = json_deep_copy(g_task_json);
    json_object_del(json_object_get(v, "expected"), "answer");
    cases[nc++] = (bad){v, {"field 'expected.answer'", "missing"}};

    v = json_deep_copy(g_task_json);
    json_object_set_new(json_object_get(v, "expected"), "answer", json_integer(7));
    cases[nc++] = (bad){v, {"field 'expected.answer'", "not the count of ids under id >= 10"}};

    v = json_deep_copy(g_task_json);
    json_object_set_new(json_object_get(v, "expected"), "filters", json_string("idd >= 10"));
    cases[nc++] = (bad){v, {"field 'expected.filters'", "unknown field 'idd'"}};

    v = json_deep_copy(g_task_json);
    json_object_set_new(json_object_get(v, "expected"), "filters",
                        json_pack("[s, s]", "id >= 10", "id > 10"));
    cases[nc++] = (bad){v, {"field 'expected.answer'", "id > 10 (7)"}};

    v = json_deep_copy(g_task_json);
    json_object_set_new(v, "runs", json_integer(0));
    cases[nc++] = (bad){v, {"field 'runs'", "outside"}};

    v = json_deep_copy(g_task_json);
    json_object_set_new(v, "runs", json_string("3"));
    cases[nc++] = (bad){v, {"field 'runs'", "integer"}};

    v = json_deep_copy(g_task_json);
    json_object_set_new(json_array_get(json_object_get(v, "tools"), 0), "type",
                        json_string("func"));
    cases[nc++] = (bad){v, {"field 'tools[0].type'", "function"}};

    v = json_deep_copy(g_task_json);
    json_object_set_new(json_object_get(v, "expected"), "function", json_string("count"));
    cases[nc++] = (bad){v, {"field 'expected.function'", "not a tool"}};

    v = json_deep_copy(g_task_json);
    json_array_set_new(json_object_get(v, "ids"), 2, json_integer(99));
    cases[nc++] = (bad){v, {"field 'ids[2]'", "99 is not written in field 'user'"}};

    v = json_deep_copy(g_task_json);
    json_object_set_new(json_object_get(params_of(v), "properties"), "limit",
                        json_pack("{s:s}", "type", "integer"));
    cases[nc++] = (bad){v, {"field 'tools[0].function.parameters.properties.limit'", "only"}};

    v = json_deep_copy(g_task_json);
    json_object_set_new(json_object_get(json_object_get(params_of(v), "properties"), "op"), "type",
                        json_string("str"));
    cases[nc++] = (bad){v, {"field 'tools[0].function.parameters.properties.op'", "type"}};

    v = json_deep_copy(g_task_json);
    json_array_append_new(json_object_get(params_of(v), "required"), json_string("limit"));
    cases[nc++] = (bad){v, {"field 'tools[0].function.parameters.required[3]'", "property"}};

    v = json_deep_copy(g_task_json);
    json_object_set_new(v, "extra", json_true());
    cases[nc++] = (bad){v, {"field 'extra'", "unknown field"}};

    v = json_deep_copy(g_task_json);
    json_object_set_new(v, "user", json_string(""));
    cases[nc++] = (bad){v, {"field 'user'", "empty"}};

    for (int k = 0; k < nc; k++) {
        rf_agent_task bt;
        rf_error err = {0};
        const char *path;
        rf_status st = load_variant(cases[k].v, &bt, &err, &path);
        CHECK_MSG(st == RF_ERR_FORMAT, "task case %d: status %d", k, (int)st);
        CHECK_MSG(has(err.msg, path), "task case %d: no file name in: %s", k, err.msg);
        for (int w = 0; w < 2 && cases[k].want[w]; w++)
            CHECK_MSG(has(err.msg, cases[k].want[w]), "task case %d: \"%s\" lacks \"%s\"", k,
                      err.msg, cases[k].want[w]);
        CHECK(bt.name == NULL && bt.priv == NULL);
        json_decref(cases[k].v);
    }

    rf_agent_task bt;
    rf_error err = {0};
    const char *bad_json = "{\"name\": \"x\",\n \"runs\": }";
    const char *path = temp_file(bad_json, strlen(bad_json));
    CHECK(rf_agent_task_load(path, &bt, &err) == RF_ERR_FORMAT);
    CHECK_MSG(has(err.msg, path) && has(err.msg, "invalid JSON") && has(err.msg, ":2:"), "%s",
              err.msg);
    CHECK(rf_agent_task_load("/nonexistent/task.json", &bt, &err) == RF_ERR_IO);

    /* the filter-string form loads */
    v = filter_variant();
    CHECK(load_variant(v, &bt, &err, NULL) == RF_OK);
    CHECK(bt.form == RF_TOOL_FORM_FILTER);
    rf_agent_task_free(&bt);
    json_decref(v);
}

/* ---- tool execution ---- */

#define IDS "[12, 3, 27, 10, 9, 41, 15, 7, 33, 13, 20]"

static void exec_case(const rf_agent_task *t, const char *name, const char *args, bool ok,
                      int64_t count, const char *content_has) {
    rf_tool_result r;
    rf_agent_execute(t, name, args, args ? strlen(args) : 0, &r);
    CHECK_MSG(r.ok == ok, "execute %s(%s): ok=%d, content %s", name ? name : "(null)",
              args ? args : "(null)", r.ok, r.content);
    if (ok) CHECK_MSG(r.count == count, "execute(%s): count %lld", args, (long long)r.count);
    CHECK_MSG(has(r.content, content_has), "execute(%s): \"%s\" lacks \"%s\"",
              args ? args : "(null)", r.content, content_has);
    json_error_t je;
    json_t *j = json_loads(r.content, 0, &je); /* always valid JSON for the tool message */
    CHECK_MSG(json_is_object(j) && json_object_get(j, ok ? "count" : "error"), "content %s",
              r.content);
    json_decref(j);
}

static void test_execute(void) {
    rf_agent_task t;
    if (!load_task(&t)) return;
    exec_case(&t, "count_ids", "{\"ids\": " IDS ", \"op\": \">=\", \"threshold\": 10}", true, 8,
              "\"count\": 8");
    exec_case(&t, "count_ids", "{\"ids\": " IDS ", \"op\": \">=\", \"threshold\": 10}", true, 8,
              "\"filter\": \"id >= 10\"");
    exec_case(&t, "count_ids", "{\"threshold\": 10.0, \"op\": \">=\", \"ids\": " IDS "}", true, 8,
              "\"count\": 8");
    exec_case(&t, "count_ids", "{\"ids\": " IDS ", \"op\": \">\", \"threshold\": 10}", true, 7,
              "\"count\": 7");
    exec_case(&t, "count_ids", "{\"ids\": " IDS ", \"op\": \"<\", \"threshold\": 10}", true, 3,
              "id < 10");
    exec_case(&t, "count_ids", "{\"ids\": [1, 2, 30], \"op\": \">=\", \"threshold\": 10}", true, 1,
              "\"count\": 1");
    exec_case(&t, "count_ids", "{\"ids\": [], \"op\": \">=\", \"threshold\": 10}", true, 0,
              "\"count\": 0");
    exec_case(&t, "count_ids", "{\"ids\": " IDS ", \"op\": \" >= \", \"threshold\": 10}", true, 8,
              "\"count\": 8");
    /* invalid */
    exec_case(&t, "count_ids", "{\"ids\": [1, 2", false, 0, "not valid JSON");
    exec_case(&t, "count_ids", "", false, 0, "not valid JSON");
    exec_case(&t, "count_ids", NULL, false, 0, "not valid JSON");
    exec_case(&t, "count_ids", "[1, 2]", false, 0, "not an object");
    exec_case(&t, "count_ids", "{\"ids\": " IDS ", \"op\": \">=\"}", false, 0,
              "missing required parameter 'threshold'");
    exec_case(&t, "count_ids", "{\"ids\": " IDS ", \"op\": \">=\", \"threshold\": 10, \"x\": 1}",
              false, 0, "unexpected parameter 'x'");
    exec_case(&t, "count_ids", "{\"ids\": " IDS ", \"op\": \">=\", \"threshold\": \"10\"}", false,
              0, "parameter 'threshold' should be number, got string");
    exec_case(&t, "count_ids", "{\"ids\": [1.5, 12], \"op\": \">=\", \"threshold\": 10}", false, 0,
              "should be array of integer");
    exec_case(&t, "count_ids", "{\"ids\": " IDS ", \"op\": \"=>\", \"threshold\": 10}", false, 0,
              "unknown operator '=>'");
    exec_case(&t, "count", "{\"ids\": " IDS ", \"op\": \">=\", \"threshold\": 10}", false, 0,
              "unknown tool 'count'");
    exec_case(&t, NULL, "{}", false, 0, "unknown tool");
    exec_case(&t, "count_ids", "{\"ids\": " IDS ", \"op\": \"\\\"\", \"threshold\": 10}", false, 0,
              "unknown operator");
    /* arguments longer than the limit */
    size_t big = RF_AGENT_ARGS_MAX + 10;
    char *huge = malloc(big + 1);
    memset(huge, ' ', big);
    huge[big] = 0;
    huge[0] = '{';
    huge[big - 1] = '}';
    exec_case(&t, "count_ids", huge, false, 0, "longer than");
    free(huge);
    rf_agent_task_free(&t);

    /* the filter form */
    json_t *v = filter_variant();
    rf_error err;
    CHECK(load_variant(v, &t, &err, NULL) == RF_OK);
    json_decref(v);
    exec_case(&t, "count_ids", "{\"ids\": " IDS ", \"filter\": \"id >= 10\"}", true, 8,
              "\"count\": 8");
    exec_case(&t, "count_ids", "{\"ids\": " IDS ", \"filter\": \"10 <= id\"}", true, 8, "id >= 10");
    exec_case(&t, "count_ids", "{\"ids\": " IDS ", \"filter\": \"id > 10\"}", true, 7,
              "\"count\": 7");
    exec_case(&t, "count_ids", "{\"ids\": " IDS ", \"filter\": \"id >== 10\"}", false, 0,
              "filter: ");
    rf_agent_task_free(&t);
}

/* ---- BFCL-style call grading ---- */

static void call_case(const rf_agent_task *t, const char *name, const char *args,
                      rf_call_verdict want, const char *filter) {
    rf_call_grade g;
    rf_agent_grade_call(t, name, args, args ? strlen(args) : 0, &g);
    CHECK_MSG(g.verdict == want, "grade %s(%s): %s (%s), want %s", name, args ? args : "(null)",
              rf_call_verdict_name(g.verdict), g.detail, rf_call_verdict_name(want));
    CHECK_MSG(strcmp(g.filter, filter) == 0, "grade %s(%s): filter \"%s\", want \"%s\"", name,
              args ? args : "(null)", g.filter, filter);
    CHECK((g.verdict == RF_CALL_OK) == (g.detail[0] == 0));
}

static void test_bfcl(void) {
    rf_agent_task t;
    if (!load_task(&t)) return;
    const char *ok = "{\"ids\": " IDS ", \"op\": \">=\", \"threshold\": 10}";
    call_case(&t, "count_ids", ok, RF_CALL_OK, "id >= 10");
    /* int accepted for float; a real for the "number" threshold too */
    call_case(&t, "count_ids", "{\"ids\": " IDS ", \"op\": \">=\", \"threshold\": 10.0}",
              RF_CALL_OK, "id >= 10");
    /* BFCL string standardisation on op */
    call_case(&t, "count_ids", "{\"ids\": " IDS ", \"op\": \" >= \", \"threshold\": 10}",
              RF_CALL_OK, "id >= 10");
    /* ids in another order */
    call_case(&t, "count_ids",
              "{\"ids\": [3, 7, 9, 10, 12, 13, 15, 20, 27, 33, 41], \"op\": \">=\", "
              "\"threshold\": 10}",
              RF_CALL_OK, "id >= 10");
    /* wrong filters */
    call_case(&t, "count_ids", "{\"ids\": " IDS ", \"op\": \">\", \"threshold\": 10}",
              RF_CALL_WRONG_FILTER, "id > 10");
    call_case(&t, "count_ids", "{\"ids\": " IDS ", \"op\": \">\", \"threshold\": 9}",
              RF_CALL_WRONG_FILTER, "id > 9"); /* same count, not the acceptable condition */
    call_case(&t, "count_ids", "{\"ids\": " IDS ", \"op\": \"<\", \"threshold\": 10}",
              RF_CALL_WRONG_FILTER, "id < 10");
    call_case(&t, "count_ids", "{\"ids\": " IDS ", \"op\": \"=>\", \"threshold\": 10}",
              RF_CALL_BAD_FILTER, "id => 10");
    /* structure: extra parameter, missing required, wrong types, wrong function, bad JSON */
    call_case(&t, "count_ids",
              "{\"ids\": " IDS ", \"op\": \">=\", \"threshold\": 10, \"field\": \"id\"}",
              RF_CALL_UNEXPECTED_PARAM, "id >= 10");
    call_case(&t, "count_ids", "{\"ids\": " IDS ", \"op\": \">=\"}", RF_CALL_MISSING_PARAM,
              "id >= ?");
    call_case(&t, "count_ids", "{\"op\": \">=\", \"threshold\": 10}", RF_CALL_MISSING_PARAM,
              "id >= 10");
    call_case(&t, "count_ids", "{\"ids\": " IDS ", \"op\": \">=\", \"threshold\": \"10\"}",
              RF_CALL_WRONG_TYPE, "id >= \"10\"");
    call_case(&t, "count_ids", "{\"ids\": " IDS ", \"op\": 5, \"threshold\": 10}",
              RF_CALL_WRONG_TYPE, "id ? 10");
    call_case(&t, "count_ids", "{\"ids\": [\"12\", \"3\"], \"op\": \">=\", \"threshold\": 10}",
              RF_CALL_WRONG_TYPE, "id >= 10");
    call_case(&t, "count_ids",
              "{\"ids\": [12.0, 3, 27, 10, 9, 41, 15, 7, 33, 13, 20], \"op\": \">=\", "
              "\"threshold\": 10}",
              RF_CALL_WRONG_TYPE, "id >= 10"); /* a real is not accepted for integer */
    call_case(&t, "count_ids", "{\"ids\": " IDS ", \"op\": \">=\", \"threshold\": true}",
              RF_CALL_WRONG_TYPE, "id >= true");
    call_case(&t, "count", ok, RF_CALL_WRONG_FUNCTION, "id >= 10");
    call_case(&t, NULL, ok, RF_CALL_WRONG_FUNCTION, "id >= 10");
    call_case(&t, "count_ids", "{\"ids\": " IDS ", \"op\": \">=\", \"threshold\": 10",
              RF_CALL_INVALID_JSON, "?");
    call_case(&t, "count_ids", "\"id >= 10\"", RF_CALL_INVALID_JSON, "?");
    call_case(&t, "count_ids", "{\"op\": \">=\", \"op\": \">\", \"threshold\": 10, \"ids\": []}",
              RF_CALL_INVALID_JSON, "?"); /* duplicate keys */
    /* value of the other parameter */
    call_case(&t, "count_ids", "{\"ids\": [12, 3, 27], \"op\": \">=\", \"threshold\": 10}",
              RF_CALL_WRONG_VALUE, "id >= 10");
    call_case(&t, "count_ids",
              "{\"ids\": [12, 3, 27, 10, 9, 41, 15, 7, 33, 13, 13], \"op\": \">=\", "
              "\"threshold\": 10}",
              RF_CALL_WRONG_VALUE, "id >= 10");
    rf_agent_task_free(&t);

    /* "id > 10" is graded wrong even where it gives the expected count: ids without a 10 */
    json_t *v = json_deep_copy(g_task_json);
    const char *user = "How many of these 11 ids are greater than or equal to 10? ids: "
                       "[12, 3, 27, 11, 9, 41, 15, 7, 33, 13, 20].";
    json_object_set_new(v, "user", json_string(user));
    json_object_set_new(v, "ids",
                        json_pack("[I,I,I,I,I,I,I,I,I,I,I]", (json_int_t)12, (json_int_t)3,
                                  (json_int_t)27, (json_int_t)11, (json_int_t)9, (json_int_t)41,
                                  (json_int_t)15, (json_int_t)7, (json_int_t)33, (json_int_t)13,
                                  (json_int_t)20));
    rf_error err = {0};
    CHECK_MSG(load_variant(v, &t, &err, NULL) == RF_OK, "%s", err.msg);
    json_decref(v);
    const char *gt = "{\"ids\": [12, 3, 27, 11, 9, 41, 15, 7, 33, 13, 20], \"op\": \">\", "
                     "\"threshold\": 10}";
    rf_tool_result r;
    rf_agent_execute(&t, "count_ids", gt, strlen(gt), &r);
    CHECK(r.ok && r.count == 8); /* a plausible, precise number */
    call_case(&t, "count_ids", gt, RF_CALL_WRONG_FILTER, "id > 10");
    rf_agent_call calls[] = {{"count_ids", gt, strlen(gt)}};
    rf_agent_grade ag;
    const char *fin = "There are 8 ids greater than or equal to 10.";
    rf_agent_grade_run(&t, calls, 1, fin, strlen(fin), &ag);
    CHECK(ag.quoted_ok && !ag.filters_ok && !ag.ok);
    CHECK_MSG(has(ag.reason, "wrong_filter") && has(ag.reason, "id > 10"), "%s", ag.reason);
    rf_agent_task_free(&t);

    /* the filter-string form: the forms of the condition normalise before the value check */
    v = filter_variant();
    CHECK(load_variant(v, &t, &err, NULL) == RF_OK);
    json_decref(v);
    const char *forms_ok[] = {"id >= 10",   "id>=10", "10 <= id",
                              "id >= 10.0", ">= 10",  "ID \xe2\x89\xa5 10"};
    for (size_t k = 0; k < sizeof forms_ok / sizeof forms_ok[0]; k++) {
        json_t *a = json_pack("{s:O, s:s}", "ids", json_object_get(g_task_json, "ids"), "filter",
                              forms_ok[k]);
        char *txt = json_dumps(a, 0);
        call_case(&t, "count_ids", txt, RF_CALL_OK, "id >= 10");
        free(txt);
        json_decref(a);
    }
    call_case(&t, "count_ids", "{\"ids\": " IDS ", \"filter\": \"id > 10\"}", RF_CALL_WRONG_FILTER,
              "id > 10");
    /* BFCL's string compare would read "id >= 10.0" as "id>=100"; the parsed compare does not
     * confuse them */
    call_case(&t, "count_ids", "{\"ids\": " IDS ", \"filter\": \"id >= 100\"}",
              RF_CALL_WRONG_FILTER, "id >= 100");
    call_case(&t, "count_ids", "{\"ids\": " IDS ", \"filter\": \"id >== 10\"}", RF_CALL_BAD_FILTER,
              "id >== 10");
    call_case(&t, "count_ids", "{\"ids\": " IDS ", \"filter\": 10}", RF_CALL_WRONG_TYPE, "?");
    call_case(&t, "count_ids", "{\"ids\": " IDS ", \"op\": \">=\", \"threshold\": 10}",
              RF_CALL_MISSING_PARAM, "?");
    rf_agent_task_free(&t);
}

/* ---- run grading and the output line ---- */

static void test_runs_and_lines(void) {
    rf_agent_task t;
    if (!load_task(&t)) return;
    const char *good = "{\"ids\": " IDS ", \"op\": \">=\", \"threshold\": 10}";
    const char *gt = "{\"ids\": " IDS ", \"op\": \">\", \"threshold\": 10}";
    rf_agent_call c_good = {"count_ids", good, strlen(good)};
    rf_agent_call c_gt = {"count_ids", gt, strlen(gt)};
    rf_agent_grade g;

    const char *fin = "8 of the 11 ids are greater than or equal to 10.";
    rf_agent_grade_run(&t, &c_good, 1, fin, strlen(fin), &g);
    CHECK(g.ok && g.quoted_ok && g.filters_ok && strcmp(g.quoted, "8") == 0);
    CHECK(g.n_calls == 1 && g.n_calls_ok == 1 && g.reason[0] == 0);
    CHECK(strcmp(g.calls[0].filter, "id >= 10") == 0);

    rf_buf b;
    rf_buf_init(&b, 0);
    CHECK(rf_agent_format_run("g6", 2, 3, &g, NULL, 0.4, 9, 0, &b) == RF_OK);
    CHECK_MSG(strcmp((char *)b.data,
                     "g6         run 2/3  ok   quoted=8  filters=['id >= 10']  0.4s") == 0,
              "[%s]", (char *)b.data);

    /* the seed's four lines, byte for byte */
    const char *names[] = {"bedrock", "g6", "g5g", "sagemaker"};
    const int runs[] = {1, 2, 1, 1};
    const double secs[] = {1.19, 0.4, 2.35, 0.63};
    const char *want[] = {
        "bedrock    run 1/3  ok   quoted=8  filters=['id >= 10']  1.19s",
        "g6         run 2/3  ok   quoted=8  filters=['id >= 10']  0.4s",
        "g5g        run 1/3  ok   quoted=8  filters=['id >= 10']  2.35s",
        "sagemaker  run 1/3  ok   quoted=8  filters=['id >= 10']  0.63s",
    };
    for (int k = 0; k < 4; k++) {
        const char *f[] = {"id >= 10"};
        rf_agent_line l = {names[k], runs[k], 3, "ok", "8", f, 1, secs[k]};
        rf_buf_reset(&b);
        CHECK(rf_agent_format_line(&l, 9, 0, &b) == RF_OK);
        CHECK_MSG(strcmp((char *)b.data, want[k]) == 0, "[%s] != [%s]", (char *)b.data, want[k]);
    }

    /* FAIL: the wrong filter, and the count it gives */
    const char *fin7 = "There are 7 ids.";
    rf_agent_grade_run(&t, &c_gt, 1, fin7, strlen(fin7), &g);
    CHECK(!g.ok && !g.quoted_ok && !g.filters_ok && g.calls[0].verdict == RF_CALL_WRONG_FILTER);
    rf_buf_reset(&b);
    CHECK(rf_agent_format_run("g6", 3, 3, &g, NULL, 2.0, 9, 0, &b) == RF_OK);
    CHECK_MSG(
        strcmp((char *)b.data, "g6         run 3/3  FAIL quoted=7  filters=['id > 10']  2.0s") == 0,
        "[%s]", (char *)b.data);

    /* two calls, one wrong: the run fails, both filters print */
    rf_agent_call two[] = {c_good, c_gt};
    rf_agent_grade_run(&t, two, 2, "8", 1, &g);
    CHECK(!g.ok && g.quoted_ok && !g.filters_ok && g.n_calls_ok == 1);
    CHECK_MSG(has(g.reason, "call 2: wrong_filter"), "%s", g.reason);
    rf_buf_reset(&b);
    CHECK(rf_agent_format_run("local", 1, 3, &g, NULL, 0.125, 5, 0, &b) == RF_OK);
    CHECK_MSG(strcmp((char *)b.data,
                     "local  run 1/3  FAIL quoted=8  filters=['id >= 10', 'id > 10']  0.12s") == 0,
              "[%s]", (char *)b.data);

    /* no tool call; an error class; no final answer */
    rf_agent_grade_run(&t, NULL, 0, "8", 1, &g);
    CHECK(!g.ok && g.quoted_ok && !g.filters_ok && strcmp(g.reason, "no tool call") == 0);
    rf_agent_grade_run(&t, &c_good, 1, NULL, 0, &g);
    CHECK(!g.ok && !g.quoted_found && strcmp(g.reason, "no number in the final answer") == 0);
    rf_buf_reset(&b);
    CHECK(rf_agent_format_run("sagemaker", 1, 3, &g, "timeout", 600, 9, 7, &b) == RF_OK);
    CHECK_MSG(strcmp((char *)b.data,
                     "sagemaker  run 1/3  timeout quoted=None  filters=['id >= 10']  600.0s") == 0,
              "[%s]", (char *)b.data);

    /* Python repr of odd filter text */
    const char *odd[] = {"it's", "a\\b", "x\ny"};
    rf_agent_line l = {"x", 1, 1, "FAIL", NULL, odd, 3, 0.0};
    rf_buf_reset(&b);
    CHECK(rf_agent_format_line(&l, 0, 0, &b) == RF_OK);
    CHECK_MSG(strcmp((char *)b.data,
                     "x  run 1/1  FAIL quoted=None  filters=[\"it's\", 'a\\\\b', 'x\\ny']  0.0s") ==
                  0,
              "[%s]", (char *)b.data);
    rf_buf_free(&b);

    CHECK(strcmp(rf_call_verdict_name(RF_CALL_UNEXPECTED_PARAM), "unexpected_param") == 0);
    rf_agent_task_free(&t);
}

int main(void) {
    test_number();
    test_exact();
    test_word();
    test_agreement();
    test_questions_committed();
    test_questions_bad();
    test_task_loader();
    test_execute();
    test_bfcl();
    test_runs_and_lines();
    json_decref(g_task_json);
    remove_temps();
    return check_summary("test_graders");
}
