/* test_logprobs.c: the logprobs objects (openai/logprobs.h) against golden JSON, on a
 * made-up vocabulary: chat's content entries with bytes and top_logprobs, the legacy completions
 * shape (the sampled token added to its alternatives, duplicate token texts kept once, text
 * offsets continuing across calls), pieces that are not valid UTF-8, a piece longer than the
 * stack buffer, non-finite log-probabilities, no pieces at all, attaching to a response and a
 * chunk, and the entry list growing. No model, no network. */
#include <jansson.h>
#include <math.h>
#include <string.h>

#include "check.h"
#include "openai/logprobs.h"
#include "openai/response.h"

static char g_long[301];

/* 0 "Hi", 1 " there", 2 "\xe2\x80" (a character cut short), 3 "" (a control token),
 * 4 "\x80\x80" (two bad bytes: the same text as 2), 5 "é", 6 the 300-byte g_long. */
static int64_t piece(void *user, int32_t id, char *buf, int64_t cap) {
    static const char *const pieces[] = {"Hi", " there", "\xe2\x80", "", "\x80\x80", "\xc3\xa9"};
    (void)user;
    const char *p = id == 6 ? g_long : id >= 0 && id < 6 ? pieces[id] : NULL;
    if (!p) return -1;
    int64_t n = (int64_t)strlen(p);
    if (cap > 0) {
        int64_t k = n < cap - 1 ? n : cap - 1;
        memcpy(buf, p, (size_t)k);
        buf[k] = 0;
    }
    return n;
}

static void check_json(json_t *o, const char *want, const char *what) {
    char *s = o ? json_dumps(o, JSON_COMPACT | JSON_SORT_KEYS) : NULL;
    CHECK_MSG(s && !strcmp(s, want), "%s:\n got  %s\n want %s", what, s ? s : "(null)", want);
    free(s);
    json_decref(o);
}

static rf_openai_lp entry(int32_t token, float lp, int32_t n_top, const int32_t *ids,
                          const float *lps) {
    rf_openai_lp e;
    memset(&e, 0, sizeof e);
    e.token = token;
    e.logprob = lp;
    e.n_top = n_top;
    for (int32_t i = 0; i < n_top; i++) {
        e.top_ids[i] = ids[i];
        e.top_lps[i] = lps[i];
    }
    return e;
}

static void test_chat(void) {
    const int32_t ids0[2] = {0, 5}, ids1[1] = {1};
    const float lps0[2] = {-0.5f, -1.25f}, lps1[1] = {-0.25f};
    rf_openai_lp v[3] = {entry(0, -0.5f, 2, ids0, lps0), entry(2, -INFINITY, 0, NULL, NULL),
                         entry(1, -0.25f, 1, ids1, lps1)};
    check_json(rf_openai_logprobs_json(RF_OPENAI_CHAT, v, 3, piece, NULL, NULL),
               "{\"content\":[{\"bytes\":[72,105],\"logprob\":-0.5,\"token\":\"Hi\","
               "\"top_logprobs\":[{\"bytes\":[72,105],\"logprob\":-0.5,\"token\":\"Hi\"},"
               "{\"bytes\":[195,169],\"logprob\":-1.25,\"token\":\"\xc3\xa9\"}]},"
               "{\"bytes\":[226,128],\"logprob\":-9999.0,\"token\":\"\xef\xbf\xbd\xef\xbf\xbd\","
               "\"top_logprobs\":[]},"
               "{\"bytes\":[32,116,104,101,114,101],\"logprob\":-0.25,\"token\":\" there\","
               "\"top_logprobs\":[{\"bytes\":[32,116,104,101,114,101],\"logprob\":-0.25,"
               "\"token\":\" there\"}]}],\"refusal\":null}",
               "chat logprobs");
    check_json(rf_openai_logprobs_json(RF_OPENAI_CHAT, v, 0, piece, NULL, NULL),
               "{\"content\":[],\"refusal\":null}", "no tokens");
    /* no pieces (the engine is gone): empty texts, the numbers still there */
    check_json(rf_openai_logprobs_json(RF_OPENAI_CHAT, v, 1, NULL, NULL, NULL),
               "{\"content\":[{\"bytes\":[],\"logprob\":-0.5,\"token\":\"\",\"top_logprobs\":["
               "{\"bytes\":[],\"logprob\":-0.5,\"token\":\"\"},{\"bytes\":[],\"logprob\":-1.25,"
               "\"token\":\"\"}]}],\"refusal\":null}",
               "no pieces");
    /* a piece longer than the stack buffer */
    rf_openai_lp big = entry(6, -1.0f, 0, NULL, NULL);
    json_t *o = rf_openai_logprobs_json(RF_OPENAI_CHAT, &big, 1, piece, NULL, NULL);
    json_t *t0 = json_array_get(json_object_get(o, "content"), 0);
    CHECK(t0 && !strcmp(json_string_value(json_object_get(t0, "token")), g_long));
    CHECK(json_array_size(json_object_get(t0, "bytes")) == 300);
    json_decref(o);
}

static void test_completion(void) {
    /* token 2's alternatives hold 4 (same text as 2, lower): kept once, at the higher value;
     * token 3 is not among its alternatives: added */
    const int32_t ids0[2] = {2, 4}, ids1[1] = {0};
    const float lps0[2] = {-0.5f, -2.0f}, lps1[1] = {-0.125f};
    rf_openai_lp v[3] = {entry(2, -0.5f, 2, ids0, lps0), entry(3, -3.0f, 1, ids1, lps1),
                         entry(5, -1.0f, 0, NULL, NULL)};
    int64_t off = 4;
    check_json(rf_openai_logprobs_json(RF_OPENAI_COMPLETION, v, 3, piece, NULL, &off),
               "{\"text_offset\":[4,6,6],\"token_logprobs\":[-0.5,-3.0,-1.0],\"tokens\":["
               "\"\xef\xbf\xbd\xef\xbf\xbd\",\"\",\"\xc3\xa9\"],\"top_logprobs\":["
               "{\"\xef\xbf\xbd\xef\xbf\xbd\":-0.5},{\"\":-3.0,\"Hi\":-0.125},"
               "{\"\xc3\xa9\":-1.0}]}",
               "completion logprobs");
    CHECK_MSG(off == 7, "offset after: %lld (characters: 2 + 0 + 1 from 4)", (long long)off);
    check_json(rf_openai_logprobs_json(RF_OPENAI_COMPLETION, v, 0, piece, NULL, NULL),
               "{\"text_offset\":[],\"token_logprobs\":[],\"tokens\":[],\"top_logprobs\":[]}",
               "no tokens");
}

static void test_attach(void) {
    rf_openai_meta m = {RF_OPENAI_CHAT, "chatcmpl-1", 1700000000, "m"};
    rf_openai_timings t = {4, 1, 0, 8.0, 10.0};
    rf_openai_lp v = entry(0, -0.5f, 0, NULL, NULL);
    check_json(
        rf_openai_with_logprobs(rf_openai_chunk_json(&m, NULL, "Hi", 2, NULL, NULL),
                                rf_openai_logprobs_json(RF_OPENAI_CHAT, &v, 1, piece, NULL, NULL)),
        "{\"choices\":[{\"delta\":{\"content\":\"Hi\"},\"finish_reason\":null,\"index\":0,"
        "\"logprobs\":{\"content\":[{\"bytes\":[72,105],\"logprob\":-0.5,\"token\":\"Hi\","
        "\"top_logprobs\":[]}],\"refusal\":null}}],\"created\":1700000000,\"id\":"
        "\"chatcmpl-1\",\"model\":\"m\",\"object\":\"chat.completion.chunk\","
        "\"system_fingerprint\":\"roofline\",\"usage\":null}",
        "chunk with logprobs");
    json_t *r =
        rf_openai_with_logprobs(rf_openai_response_json(&m, "Hi", 2, "stop", &t),
                                rf_openai_logprobs_json(RF_OPENAI_CHAT, &v, 1, piece, NULL, NULL));
    json_t *c0 = json_array_get(json_object_get(r, "choices"), 0);
    json_t *lp = json_object_get(c0, "logprobs");
    CHECK(json_is_array(json_object_get(lp, "content")) &&
          json_is_null(json_object_get(lp, "refusal")));
    CHECK(!strcmp(json_string_value(json_object_get(json_object_get(c0, "message"), "content")),
                  "Hi"));
    json_decref(r);
    rf_openai_meta mc = {RF_OPENAI_COMPLETION, "cmpl-2", 1700000000, "m"};
    json_t *cr = rf_openai_with_logprobs(
        rf_openai_response_json(&mc, "Hi", 2, "stop", &t),
        rf_openai_logprobs_json(RF_OPENAI_COMPLETION, &v, 1, piece, NULL, NULL));
    lp = json_object_get(json_array_get(json_object_get(cr, "choices"), 0), "logprobs");
    CHECK(json_array_size(json_object_get(lp, "tokens")) == 1 &&
          json_array_size(json_object_get(lp, "text_offset")) == 1);
    json_decref(cr);
    CHECK(rf_openai_with_logprobs(NULL, json_object()) == NULL); /* both released */
    CHECK(rf_openai_with_logprobs(json_object(), NULL) == NULL);
    CHECK(rf_openai_with_logprobs(json_object(), json_object()) == NULL); /* no choices */
}

static void test_list(void) {
    rf_openai_lps l = {0};
    int32_t ids[3] = {7, 8, 9};
    float lps[3] = {-0.1f, -0.2f, -0.3f};
    int ok = 1;
    for (int i = 0; i < 200; i++) {
        rf_event ev = {0};
        ev.token = i;
        ev.logprob = -(float)i;
        ev.n_top = i % 4 == 0 ? 0 : 3;
        ev.top_ids = ev.n_top ? ids : NULL;
        ev.top_logprobs = ev.n_top ? lps : NULL;
        ok &= rf_openai_lps_push(&l, &ev) == RF_OK;
    }
    CHECK(ok && l.n == 200 && l.cap >= 200);
    int same = 1;
    for (size_t i = 0; i < l.n; i++) {
        same &= l.v[i].token == (int32_t)i && l.v[i].logprob == -(float)i;
        same &= l.v[i].n_top == (i % 4 == 0 ? 0 : 3);
        if (l.v[i].n_top) same &= l.v[i].top_ids[2] == 9 && l.v[i].top_lps[1] == -0.2f;
    }
    CHECK(same);
    /* an event that claims more alternatives than it can hold: capped */
    int32_t many[RF_MAX_TOP_LOGPROBS + 5] = {0};
    float manyl[RF_MAX_TOP_LOGPROBS + 5] = {0};
    rf_event ev = {0};
    ev.n_top = RF_MAX_TOP_LOGPROBS + 5;
    ev.top_ids = many;
    ev.top_logprobs = manyl;
    CHECK(rf_openai_lps_push(&l, &ev) == RF_OK && l.v[200].n_top == RF_MAX_TOP_LOGPROBS);
    rf_openai_lps_free(&l);
    CHECK(l.v == NULL && l.n == 0);
}

int main(void) {
    memset(g_long, 'a', 300);
    test_chat();
    test_completion();
    test_attach();
    test_list();
    return check_summary("test_logprobs");
}
