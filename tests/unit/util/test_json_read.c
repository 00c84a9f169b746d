/* test_json_read.c: the strict JSON member reader (util/json_read.h): every accessor's success,
 * wrong type, missing, empty and out-of-range cases, the flags (required, nullable, non-empty,
 * open ends), unknown keys, and the message naming the path and the type found. */
#include <jansson.h>
#include <string.h>

#include "check.h"
#include "util/json_read.h"

static json_t *g_doc;

/* Checks that st failed with why, naming path, with every one of the NULL-terminated
 * substrings in the message, and with the context's status. */
static void expect_fail(const char *name, rf_status st, const rf_jr *c, rf_jr_why why,
                        const char *path, const char *s1, const char *s2) {
    const char *m = c->err ? c->err->msg : "";
    CHECK_MSG(st == c->code && c->err->code == c->code, "%s: status %d", name, st);
    CHECK_MSG(c->why == why, "%s: why %d, want %d", name, c->why, why);
    CHECK_MSG(!strcmp(c->path, path), "%s: path '%s', want '%s'", name, c->path, path);
    char want[200];
    snprintf(want, sizeof want, "field '%s': ", path);
    CHECK_MSG(strstr(m, want) != NULL, "%s: '%s' lacks '%s'", name, m, want);
    CHECK_MSG(!s1 || strstr(m, s1), "%s: '%s' lacks '%s'", name, m, s1);
    CHECK_MSG(!s2 || strstr(m, s2), "%s: '%s' lacks '%s'", name, m, s2);
}

static void test_paths(void) {
    char b[32];
    CHECK(!strcmp(rf_jr_path(b, sizeof b, NULL, "k"), "k"));
    CHECK(!strcmp(rf_jr_path(b, sizeof b, "", "k"), "k"));
    CHECK(!strcmp(rf_jr_path(b, sizeof b, "a.b", "k"), "a.b.k"));
    CHECK(!strcmp(rf_jr_index(b, sizeof b, "backends", 2), "backends[2]"));
    char u[8];
    CHECK(!strcmp(rf_jr_path(u, sizeof u, "abcdef", "ghij"), "abcdef.")); /* truncated */
}

static void test_str(void) {
    rf_error err = {0};
    rf_jr c = rf_jr_make("run.json", RF_ERR_FORMAT, &err);
    const json_t *b = json_object_get(g_doc, "backends");
    char p[32];
    const json_t *b2 = json_array_get(b, 2);
    rf_jr_index(p, sizeof p, "backends", 2);
    const char *s = NULL;
    CHECK(rf_jr_str(&c, b2, p, "name", RF_JR_REQUIRED | RF_JR_NONEMPTY, &s) == RF_OK && s &&
          !strcmp(s, "c"));
    s = "kept";
    CHECK(rf_jr_str(&c, b2, p, "absent", 0, &s) == RF_OK && !strcmp(s, "kept"));
    CHECK(rf_jr_str(&c, NULL, p, "absent", 0, &s) == RF_OK && !strcmp(s, "kept"));
    CHECK(rf_jr_str(&c, b2, p, "nul", RF_JR_NULLABLE, &s) == RF_OK && !strcmp(s, "kept"));
    expect_fail("str null", rf_jr_str(&c, b2, p, "nul", 0, &s), &c, RF_JR_TYPE, "backends[2].nul",
                "must be a string, not null", NULL);
    expect_fail("str type", rf_jr_str(&c, b2, p, "url", 0, &s), &c, RF_JR_TYPE, "backends[2].url",
                "must be a string, not an integer", "run.json: ");
    expect_fail("str missing", rf_jr_str(&c, b2, p, "model", RF_JR_REQUIRED, &s), &c, RF_JR_MISSING,
                "backends[2].model", "missing", NULL);
    expect_fail("str blank", rf_jr_str(&c, b2, p, "blank", RF_JR_NONEMPTY, &s), &c, RF_JR_EMPTY,
                "backends[2].blank", "empty", NULL);
    CHECK(rf_jr_str(&c, b2, p, "blank", 0, &s) == RF_OK && !strcmp(s, " \t"));
    CHECK(!strcmp(s, " \t"));
    /* the message's form, exactly */
    CHECK_MSG(rf_jr_str(&c, b2, p, "url", 0, &s) &&
                  !strcmp(err.msg, "run.json: field 'backends[2].url': must be a string, not an "
                                   "integer"),
              "%s", err.msg);
    rf_jr n = rf_jr_make(NULL, RF_ERR_ARG, &err);
    CHECK(rf_jr_str(&n, b2, NULL, "url", 0, &s) == RF_ERR_ARG &&
          !strcmp(err.msg, "field 'url': must be a string, not an integer"));
    CHECK(!strcmp(n.path, "url"));
    /* the path style: "<where>: <path>: expected ..." */
    rf_jr ps = rf_jr_make("run.json", RF_ERR_ARG, &err);
    ps.style = RF_JR_STYLE_PATH;
    CHECK_MSG(rf_jr_str(&ps, b2, p, "url", 0, &s) == RF_ERR_ARG &&
                  !strcmp(err.msg, "run.json: backends[2].url: expected a string, not an integer"),
              "%s", err.msg);
    CHECK(rf_jr_keys(&ps, json_array_get(b, 0), p, (const char *const[]){"x", NULL}) &&
          !strcmp(err.msg, "run.json: backends[2].name: unknown field (expected x)"));
    /* no rf_error: still the status and why */
    rf_jr q = rf_jr_make("x", RF_ERR_ARG, NULL);
    CHECK(rf_jr_str(&q, b2, NULL, "url", 0, &s) == RF_ERR_ARG && q.why == RF_JR_TYPE);
}

static void test_int(void) {
    rf_error err = {0};
    rf_jr c = rf_jr_make("t.json", RF_ERR_ARG, &err);
    const json_t *o = json_object_get(g_doc, "load");
    json_int_t x = -7;
    CHECK(rf_jr_int(&c, o, "load", "runs", RF_JR_REQUIRED, 1, 10, &x) == RF_OK && x == 3);
    x = -7;
    CHECK(rf_jr_int(&c, o, "load", "absent", 0, 1, 10, &x) == RF_OK && x == -7);
    CHECK(rf_jr_int(&c, o, "load", "nul", RF_JR_NULLABLE, 1, 10, &x) == RF_OK && x == -7);
    CHECK(rf_jr_int(&c, o, "load", "runs", 0, 3, 3, &x) == RF_OK && x == 3); /* closed ends */
    expect_fail("int low", rf_jr_int(&c, o, "load", "runs", 0, 4, 10, &x), &c, RF_JR_RANGE,
                "load.runs", "3 is outside [4, 10]", NULL);
    expect_fail("int high", rf_jr_int(&c, o, "load", "runs", 0, 0, 2, &x), &c, RF_JR_RANGE,
                "load.runs", "3 is outside [0, 2]", NULL);
    CHECK(x == 3);
    expect_fail("int real", rf_jr_int(&c, o, "load", "rate", 0, 0, 10, &x), &c, RF_JR_TYPE,
                "load.rate", "must be an integer, not a number with a fraction", NULL);
    expect_fail("int str", rf_jr_int(&c, o, "load", "name", 0, 0, 10, &x), &c, RF_JR_TYPE,
                "load.name", "must be an integer, not a string", NULL);
    expect_fail("int missing", rf_jr_int(&c, o, "load", "absent", RF_JR_REQUIRED, 0, 1, &x), &c,
                RF_JR_MISSING, "load.absent", "missing", NULL);
    expect_fail("int big", rf_jr_int(&c, o, "load", "big", 0, INT64_MIN, 1, &x), &c, RF_JR_RANGE,
                "load.big", "9007199254740993 is outside", NULL);
    int32_t y = 5;
    CHECK(rf_jr_i32(&c, o, "load", "absent", 0, 0, 10, &y) == RF_OK && y == 5);
    CHECK(rf_jr_i32(&c, o, "load", "runs", 0, 0, 10, &y) == RF_OK && y == 3);
    y = 5;
    expect_fail("i32 big", rf_jr_i32(&c, o, "load", "big", 0, INT32_MIN, INT32_MAX, &y), &c,
                RF_JR_RANGE, "load.big", "is outside [-2147483648, 2147483647]", NULL);
    CHECK(y == 5);
}

static void test_num(void) {
    rf_error err = {0};
    rf_jr c = rf_jr_make(NULL, RF_ERR_ARG, &err);
    const json_t *o = json_object_get(g_doc, "load");
    double d = -1;
    CHECK(rf_jr_num(&c, o, NULL, "rate", 0, 0, 1, &d) == RF_OK && d == 0.5);
    CHECK(rf_jr_num(&c, o, NULL, "runs", 0, 0, 10, &d) == RF_OK && d == 3); /* an integer */
    d = -1;
    CHECK(rf_jr_num(&c, o, NULL, "absent", 0, 0, 1, &d) == RF_OK && d == -1);
    CHECK(rf_jr_num(&c, o, NULL, "one", 0, 0, 1, &d) == RF_OK && d == 1); /* closed */
    CHECK(rf_jr_num(&c, o, NULL, "zero", 0, 0, 1, &d) == RF_OK && d == 0);
    expect_fail("num hi open", rf_jr_num(&c, o, NULL, "one", RF_JR_HI_OPEN, 0, 1, &d), &c,
                RF_JR_RANGE, "one", "1 is outside [0, 1)", NULL);
    expect_fail("num lo open", rf_jr_num(&c, o, NULL, "zero", RF_JR_LO_OPEN, 0, 1, &d), &c,
                RF_JR_RANGE, "zero", "0 is outside (0, 1]", NULL);
    expect_fail("num range", rf_jr_num(&c, o, "load", "rate", 0, 1, 2, &d), &c, RF_JR_RANGE,
                "load.rate", "0.5 is outside [1, 2]", NULL);
    expect_fail("num type", rf_jr_num(&c, o, "load", "flag", 0, 0, 1, &d), &c, RF_JR_TYPE,
                "load.flag", "must be a number, not a boolean", NULL);
    expect_fail("num missing", rf_jr_num(&c, o, "load", "absent", RF_JR_REQUIRED, 0, 1, &d), &c,
                RF_JR_MISSING, "load.absent", "missing", NULL);
    CHECK(d == 0);
}

static void test_bool_containers(void) {
    rf_error err = {0};
    rf_jr c = rf_jr_make("f", RF_ERR_FORMAT, &err);
    const json_t *o = json_object_get(g_doc, "load");
    bool b = false;
    CHECK(rf_jr_bool(&c, o, NULL, "flag", RF_JR_REQUIRED, &b) == RF_OK && b);
    b = false;
    CHECK(rf_jr_bool(&c, o, NULL, "absent", 0, &b) == RF_OK && !b);
    expect_fail("bool type", rf_jr_bool(&c, o, "load", "runs", 0, &b), &c, RF_JR_TYPE, "load.runs",
                "must be a boolean, not an integer", NULL);
    expect_fail("bool missing", rf_jr_bool(&c, o, "load", "absent", RF_JR_REQUIRED, &b), &c,
                RF_JR_MISSING, "load.absent", "missing", NULL);
    json_t *a = NULL;
    CHECK(rf_jr_array(&c, g_doc, NULL, "backends", RF_JR_NONEMPTY, &a) == RF_OK &&
          json_array_size(a) == 3);
    expect_fail("array empty", rf_jr_array(&c, g_doc, NULL, "none", RF_JR_NONEMPTY, &a), &c,
                RF_JR_EMPTY, "none", "empty", NULL);
    CHECK(rf_jr_array(&c, g_doc, NULL, "none", 0, &a) == RF_OK && json_array_size(a) == 0);
    expect_fail("array type", rf_jr_array(&c, g_doc, NULL, "load", 0, &a), &c, RF_JR_TYPE, "load",
                "must be an array, not an object", NULL);
    expect_fail("array missing", rf_jr_array(&c, g_doc, "x", "nope", RF_JR_REQUIRED, &a), &c,
                RF_JR_MISSING, "x.nope", "missing", NULL);
    json_t *ob = NULL;
    CHECK(rf_jr_object(&c, g_doc, NULL, "load", RF_JR_REQUIRED | RF_JR_NONEMPTY, &ob) == RF_OK &&
          ob == json_object_get(g_doc, "load"));
    expect_fail("object empty", rf_jr_object(&c, g_doc, NULL, "empty", RF_JR_NONEMPTY, &ob), &c,
                RF_JR_EMPTY, "empty", "empty", NULL);
    expect_fail("object type", rf_jr_object(&c, g_doc, NULL, "backends", 0, &ob), &c, RF_JR_TYPE,
                "backends", "must be an object, not an array", NULL);
    expect_fail("object missing", rf_jr_object(&c, g_doc, NULL, "nope", RF_JR_REQUIRED, &ob), &c,
                RF_JR_MISSING, "nope", "missing", NULL);
}

static void test_keys(void) {
    rf_error err = {0};
    rf_jr c = rf_jr_make("q.jsonl:4", RF_ERR_FORMAT, &err);
    const json_t *o = json_object_get(g_doc, "load");
    static const char *const all[] = {"runs", "rate", "name", "flag", "nul",
                                      "big",  "one",  "zero", NULL};
    CHECK(rf_jr_keys(&c, o, "load", all) == RF_OK);
    static const char *const some[] = {"runs", "rate", NULL};
    rf_status st = rf_jr_keys(&c, o, "load", some);
    CHECK(st == RF_ERR_FORMAT && c.why == RF_JR_UNKNOWN && !strncmp(c.path, "load.", 5));
    CHECK_MSG(strstr(err.msg, "q.jsonl:4: field 'load.") &&
                  strstr(err.msg, "unknown field (expected runs, rate)"),
              "%s", err.msg);
    expect_fail("keys not object",
                rf_jr_keys(&c, json_object_get(g_doc, "backends"), "backends", some), &c,
                RF_JR_TYPE, "backends", "must be an object, not an array", NULL);
    expect_fail("keys null", rf_jr_keys(&c, NULL, "x", some), &c, RF_JR_TYPE, "x",
                "must be an object, not missing", NULL);
    /* an unprintable key is made printable in the path */
    json_t *w = json_pack("{s:i}", "a\x01", 1);
    CHECK(w && rf_jr_keys(&c, w, NULL, some) && !strcmp(c.path, "a?"));
    json_decref(w);
    /* rf_jr_fail: a caller's own check */
    CHECK(rf_jr_fail(&c, RF_JR_OTHER, "aba.b", "'%s' is not the name of a backend", "x") ==
              RF_ERR_FORMAT &&
          c.why == RF_JR_OTHER &&
          !strcmp(err.msg, "q.jsonl:4: field 'aba.b': 'x' is not the name of a backend"));
    CHECK(rf_jr_has(o, "runs") && !rf_jr_has(o, "nul") && !rf_jr_has(o, "absent") &&
          !rf_jr_has(NULL, "runs"));
}

int main(void) {
    json_error_t je;
    g_doc = json_loads("{\"backends\": [{\"name\": \"a\"}, {}, {\"name\": \"c\", \"url\": 8, "
                       "\"nul\": null, \"blank\": \" \\t\"}], "
                       "\"load\": {\"runs\": 3, \"rate\": 0.5, \"name\": \"n\", \"flag\": true, "
                       "\"nul\": null, \"big\": 9007199254740993, \"one\": 1.0, \"zero\": 0}, "
                       "\"none\": [], \"empty\": {}}",
                       0, &je);
    if (!g_doc) {
        fprintf(stderr, "test document: %s\n", je.text);
        return 1;
    }
    test_paths();
    test_str();
    test_int();
    test_num();
    test_bool_containers();
    test_keys();
    json_decref(g_doc);
    printf("test_json_read: %d checks, %d failures\n", g_check_count, g_check_failures);
    return g_check_failures ? 1 : 0;
}
