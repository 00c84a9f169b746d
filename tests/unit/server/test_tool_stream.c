/* test_tool_stream.c: the streaming reply splitter (server/tool_stream.h). Each reply is fed
 * whole, one byte at a time and at every two-piece split; the content, the calls' names and the
 * joined argument fragments must come out the same every way, and equal what the case expects.
 * No model. */
#include <jansson.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "server/tool_stream.h"
#include "tsplit_log.h"

#define MAXC 4

typedef struct got {
    rf_buf content;
    char names[MAXC][80];
    rf_buf args[MAXC];
    int n_calls;
    int bad_index; /* events with an index out of order */
    bool args_before_name;
} got;

static void on_piece(void *user, rf_tsplit_kind k, int32_t index, const char *s, size_t n) {
    got *g = user;
    if (k == RF_TSPLIT_CONTENT) {
        if (index != -1) g->bad_index++;
        rf_buf_append(&g->content, s, n);
    } else if (k == RF_TSPLIT_CALL) {
        if (index != g->n_calls || index >= MAXC) {
            g->bad_index++;
            return;
        }
        snprintf(g->names[index], sizeof g->names[index], "%.*s", (int)n, s);
        g->n_calls++;
    } else {
        if (index != g->n_calls - 1 || index < 0) {
            g->args_before_name = true;
            return;
        }
        rf_buf_append(&g->args[index], s, n);
    }
}

static const char *TOOLS =
    "[{\"type\":\"function\",\"function\":{\"name\":\"get_weather\",\"parameters\":{}}},"
    "{\"type\":\"function\",\"function\":{\"name\":\"f\"}}]";

typedef struct tcase {
    const char *what;
    bool tagged;
    const char *reply;
    const char *content;
    int n_calls;
    const char *names[MAXC];
    const char *args[MAXC];
    bool held; /* finish reports held text */
} tcase;

static const tcase CASES[] = {
    {"qwen tagged call after text",
     true,
     "Let me check.\n<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": "
     "\"Paris\", \"q\": \"a}b\\\"c{\"}}\n</tool_call>",
     "Let me check.",
     1,
     {"get_weather"},
     {"{\"city\": \"Paris\", \"q\": \"a}b\\\"c{\"}"},
     false},
    {"two calls, white space between and after",
     true,
     "<tool_call>\n{\"name\": \"f\", \"arguments\": {\"x\": [1, {\"y\": 2}]}}\n</tool_call>\n"
     "<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {}}\n</tool_call>\n",
     "",
     2,
     {"f", "get_weather"},
     {"{\"x\": [1, {\"y\": 2}]}", "{}"},
     false},
    {"bare call with parameters (no markers)",
     false,
     "  {\"name\": \"f\", \"parameters\": {\"a\": \"<tool_call>\"}}",
     "",
     1,
     {"f"},
     {"{\"a\": \"<tool_call>\"}"},
     false},
    {"bare call in a tagged family",
     true,
     "{\"name\":\"f\",\"arguments\":{\"k\":1}}",
     "",
     1,
     {"f"},
     {"{\"k\":1}"},
     false},
    {"a fenced bare call",
     true,
     "```json\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\"}}\n```",
     "",
     1,
     {"get_weather"},
     {"{\"city\": \"Paris\"}"},
     false},
    {"a fence that holds no call is content",
     false,
     "```python\nprint(1)\n```",
     "```python\nprint(1)\n```",
     0,
     {0},
     {0},
     false},
    {"plain text, no markers",
     false,
     "Paris is the capital {of France}.",
     "Paris is the capital {of France}.",
     0,
     {0},
     {0},
     false},
    {"a marker's beginning that is not one",
     true,
     "a <tool b <tool_cal",
     "a <tool b <tool_cal",
     0,
     {0},
     {0},
     false},
    {"an undeclared tool is held",
     false,
     "{\"name\": \"nope\", \"parameters\": {}}",
     "",
     0,
     {0},
     {0},
     true},
    {"arguments before the name are held",
     true,
     "<tool_call>\n{\"arguments\": {}, \"name\": \"f\"}\n</tool_call>",
     "",
     0,
     {0},
     {0},
     true},
    {"JSON content that is not a call is held", false, "{\"answer\": 42}", "", 0, {0}, {0}, true},
    {"arguments as a string are held",
     true,
     "<tool_call>{\"name\": \"f\", \"arguments\": \"{}\"}</tool_call>",
     "",
     0,
     {0},
     {0},
     true},
};

/* Feeds reply in pieces cut at the offsets in cuts (ascending, ncut of them). */
static void run(const tcase *c, const size_t *cuts, size_t ncut, const char *how) {
    got g = {0};
    rf_buf_init(&g.content, 0);
    for (int i = 0; i < MAXC; i++) rf_buf_init(&g.args[i], 0);
    rf_tsplit t;
    rf_error err = {0};
    CHECK(rf_tsplit_init(&t, c->tagged ? "<tool_call>" : NULL, c->tagged ? "</tool_call>" : NULL,
                         TOOLS, on_piece, &g, &err) == RF_OK);
    size_t len = strlen(c->reply), at = 0;
    for (size_t i = 0; i <= ncut; i++) {
        size_t end = i < ncut ? cuts[i] : len;
        CHECK(rf_tsplit_push(&t, c->reply + at, end - at) == RF_OK);
        at = end;
    }
    const char *held;
    size_t held_len;
    bool h = rf_tsplit_finish(&t, &held, &held_len);
    CHECK_MSG(h == c->held, "%s (%s): held %d", c->what, how, h);
    if (h) CHECK_MSG(held_len > 0, "%s (%s): nothing held", c->what, how);
    rf_buf_append(&g.content, "", 0);
    CHECK_MSG(
        g.content.len == strlen(c->content) &&
            !memcmp(g.content.data ? (const char *)g.content.data : "", c->content, g.content.len),
        "%s (%s): content '%.*s'", c->what, how, (int)g.content.len,
        g.content.data ? (const char *)g.content.data : "");
    CHECK_MSG(g.n_calls == c->n_calls, "%s (%s): %d calls", c->what, how, g.n_calls);
    CHECK(g.bad_index == 0 && !g.args_before_name);
    for (int i = 0; i < c->n_calls && i < g.n_calls; i++) {
        CHECK_MSG(!strcmp(g.names[i], c->names[i]), "%s (%s): name '%s'", c->what, how, g.names[i]);
        CHECK_MSG(g.args[i].len == strlen(c->args[i]) &&
                      !memcmp(g.args[i].data, c->args[i], g.args[i].len),
                  "%s (%s): args '%.*s'", c->what, how, (int)g.args[i].len,
                  (const char *)g.args[i].data);
        /* the joined fragments are JSON */
        json_t *j = json_loadb((const char *)g.args[i].data, g.args[i].len, 0, NULL);
        CHECK(j != NULL);
        json_decref(j);
    }
    rf_tsplit_free(&t);
    rf_buf_free(&g.content);
    for (int i = 0; i < MAXC; i++) rf_buf_free(&g.args[i]);
}

static void feed_log(const char *text, size_t len, bool tagged, size_t piece, rf_buf *log) {
    tsplit_log l = {.b = *log};
    CHECK(tsplit_log_feed(tagged ? "<tool_call>" : NULL, tagged ? "</tool_call>" : NULL, TOOLS,
                          text, len, piece, &l));
    CHECK(l.bad_order == 0);
    *log = l.b;
}

/* Random replies made of the pieces that matter (markers, braces, quotes, escapes, names, white
 * space): the splitter never fails, never emits more bytes than it was fed, and gives the same
 * events however the reply is cut (whole, byte by byte, in threes). */
static void test_random(void) {
    static const char *const parts[] = {"{",
                                        "}",
                                        "[",
                                        "]",
                                        "\"",
                                        "\\",
                                        ":",
                                        ",",
                                        " ",
                                        "\n",
                                        "a",
                                        "<tool_call>",
                                        "</tool_call>",
                                        "<tool",
                                        "\"name\"",
                                        "\"arguments\"",
                                        "\"get_weather\"",
                                        "\"f\"",
                                        "```json",
                                        "```",
                                        "\"parameters\"",
                                        "{\"name\": \"f\", \"arguments\": "};
    const size_t np = sizeof parts / sizeof parts[0];
    uint64_t x = 0x9e3779b97f4a7c15ull;
    char text[512];
    int same = 0;
    for (int iter = 0; iter < 3000; iter++) {
        size_t len = 0;
        int n = 1 + (int)(x % 24);
        for (int i = 0; i < n; i++) {
            x ^= x << 13, x ^= x >> 7, x ^= x << 17;
            const char *p = parts[x % np];
            size_t pl = strlen(p);
            if (len + pl >= sizeof text) break;
            memcpy(text + len, p, pl);
            len += pl;
        }
        bool tagged = iter % 2 == 0;
        rf_buf a, b, c;
        rf_buf_init(&a, 0), rf_buf_init(&b, 0), rf_buf_init(&c, 0);
        feed_log(text, len, tagged, len ? len : 1, &a);
        feed_log(text, len, tagged, 1, &b);
        feed_log(text, len, tagged, 3, &c);
        bool eq = a.len == b.len && a.len == c.len &&
                  (!a.len || (!memcmp(a.data, b.data, a.len) && !memcmp(a.data, c.data, a.len)));
        CHECK_MSG(eq, "random reply '%.*s' (%s): whole '%.*s' bytes '%.*s'", (int)len, text,
                  tagged ? "tagged" : "bare", (int)a.len, (const char *)a.data, (int)b.len,
                  (const char *)b.data);
        same += eq;
        /* nothing invented: the events' texts add up to no more than the reply (the log is the
         * texts plus a short tag per event) */
        size_t tags = 0;
        for (size_t i = 0; i < a.len; i++) tags += a.data[i] == '|';
        CHECK(a.len <= len + tags * 16);
        rf_buf_free(&a), rf_buf_free(&b), rf_buf_free(&c);
    }
    CHECK(same == 3000);
}

int main(void) {
    test_random();
    for (size_t k = 0; k < sizeof CASES / sizeof CASES[0]; k++) {
        const tcase *c = &CASES[k];
        size_t len = strlen(c->reply);
        run(c, NULL, 0, "whole");
        size_t *cuts = xmalloc(len * sizeof *cuts);
        for (size_t i = 0; i + 1 < len; i++) cuts[i] = i + 1;
        run(c, cuts, len ? len - 1 : 0, "bytes");
        for (size_t i = 1; i < len; i++) {
            size_t one = i;
            run(c, &one, 1, "split");
        }
        free(cuts);
    }
    /* no tools declared: a leading '{' is content */
    got g = {0};
    rf_buf_init(&g.content, 0);
    rf_tsplit t;
    CHECK(rf_tsplit_init(&t, NULL, NULL, NULL, on_piece, &g, NULL) == RF_OK);
    CHECK(rf_tsplit_push(&t, "{\"a\": 1}", 8) == RF_OK);
    const char *held;
    size_t hl;
    CHECK(!rf_tsplit_finish(&t, &held, &hl));
    CHECK(g.content.len == 8 && g.n_calls == 0);
    rf_tsplit_free(&t);
    rf_buf_free(&g.content);
    return check_summary("test_tool_stream");
}
