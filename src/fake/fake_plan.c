/* fake_plan.c: a chat request's plan (see fake_server.h for the "fake" field, the faults and
 * the size caps; fake_req.h for the files): what the request asks for, checked and turned into
 * the events to write and their times, before anything is built or scheduled.
 */
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "fake/fake_req.h"
#include "util/json_dump.h"
#include "util/json_read.h"

static uint64_t splitmix(uint64_t z) {
    z += 0x9e3779b97f4a7c15ull;
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

static int64_t ms_to_ns(double ms) {
    return (int64_t)llround(ms * 1e6);
}

/* ---- request parsing ---- */

static bool fail(rf_fake_err *e, const char *param, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static bool fail(rf_fake_err *e, const char *param, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(e->msg, sizeof e->msg, fmt, ap);
    va_end(ap);
    snprintf(e->param, sizeof e->param, "%s", param ? param : "");
    return false;
}

/* The 400 of a member read that failed (util/json_read.h): param is its path. */
static bool jr_fail(rf_fake_err *e, const rf_jr *j) {
    return fail(e, j->path, "%s", j->err->msg);
}

static int32_t count_words(const char *s) {
    int32_t n = 0;
    bool in = false;
    for (; *s; s++) {
        bool sp = *s == ' ' || *s == '\n' || *s == '\t' || *s == '\r';
        if (!sp && !in) n++;
        in = !sp;
    }
    return n;
}

static bool is_space(char ch) {
    return ch == ' ' || ch == '\n' || ch == '\t' || ch == '\r';
}

/* The pieces of a reply: each ends after a run of spaces. Returns their number; with off, also
 * writes their n + 1 boundary offsets. */
static size_t reply_walk(const char *s, size_t len, size_t *off) {
    size_t n = 0;
    if (off) off[0] = 0;
    for (size_t i = 0; i < len;) {
        while (i < len && is_space(s[i])) i++;
        while (i < len && !is_space(s[i])) i++;
        while (i < len && is_space(s[i])) i++;
        n++;
        if (off) off[n] = i;
    }
    return n;
}

/* Fragments of at most fb bytes, never cut inside a UTF-8 sequence (a character longer than fb
 * is one fragment). Returns their number; with off, also writes their n + 1 offsets. */
static size_t frag_walk(const char *s, size_t len, size_t fb, size_t *off) {
    size_t n = 0;
    if (off) off[0] = 0;
    for (size_t i = 0; i < len;) {
        size_t j = len - i > fb ? i + fb : len;
        while (j > i && j < len && ((unsigned char)s[j] & 0xC0) == 0x80) j--;
        if (j == i) { /* fb smaller than this character: take the whole character */
            j = i + 1;
            while (j < len && ((unsigned char)s[j] & 0xC0) == 0x80) j++;
        }
        n++;
        if (off) off[n] = j;
        i = j;
    }
    return n;
}

/* The n + 1 offsets of n pieces in one exact allocation (caller frees); NULL when out of
 * memory. */
static size_t *offsets_alloc(size_t n) {
    return n < SIZE_MAX / sizeof(size_t) - 1 ? malloc((n + 1) * sizeof(size_t)) : NULL;
}

/* Bytes of s (len bytes of UTF-8) inside a JSON string as jansson writes it (no
 * JSON_ENSURE_ASCII, no JSON_ESCAPE_SLASH): '"', '\\', \b \f \n \r \t take 2 bytes, the other
 * control characters 6 (\u00XX), everything else itself. */
static size_t json_escaped_len(const char *s, size_t len) {
    size_t n = len;
    for (size_t i = 0; i < len; i++) {
        unsigned char ch = (unsigned char)s[i];
        if (ch == '"' || ch == '\\' || ch == '\b' || ch == '\f' || ch == '\n' || ch == '\r' ||
            ch == '\t')
            n += 1;
        else if (ch < 0x20)
            n += 5;
    }
    return n;
}

/* a * b, or SIZE_MAX when that overflows (checked before multiplying). */
size_t rf_fake_mul_sat(size_t a, size_t b) {
    return a && b > SIZE_MAX / a ? SIZE_MAX : a * b;
}

static size_t add_sat(size_t a, size_t b) {
    return b > SIZE_MAX - a ? SIZE_MAX : a + b;
}

/* The body's structural JSON characters outside strings (',' ':' '[' '{'), counted up to
 * max + 1: a bound on the values and members the parser would allocate (each costs it up to a
 * few hundred bytes, so a body of tiny values would otherwise cost ~80 times its size). A
 * malformed body is counted too; the parser rejects it afterwards. */
size_t rf_fake_json_items(const uint8_t *s, size_t n, size_t max) {
    size_t k = 0;
    bool in = false;
    for (size_t i = 0; i < n && k <= max; i++) {
        uint8_t ch = s[i];
        if (in) {
            if (ch == '\\')
                i++;
            else if (ch == '"')
                in = false;
        } else if (ch == '"') {
            in = true;
        } else if (ch == ',' || ch == ':' || ch == '[' || ch == '{') {
            k++;
        }
    }
    return k;
}

static bool tools_have(json_t *tools, const char *name) {
    size_t i;
    json_t *t;
    json_array_foreach(tools, i, t) {
        const char *nm = json_string_value(json_object_get(json_object_get(t, "function"), "name"));
        if (nm && strcmp(nm, name) == 0) return true;
    }
    return false;
}

/* A name sent back (model, finish_reason, tool name): at most RF_FAKE_NAME_MAX bytes. */
static bool check_name(const char *s, const char *param, rf_fake_err *e) {
    size_t n = s ? strlen(s) : 0;
    if (n <= RF_FAKE_NAME_MAX) return true;
    return fail(e, param, "%s is %zu bytes, over the %d-byte cap", param, n, RF_FAKE_NAME_MAX);
}

/* Where the sizes' factors came from, for the errors: the request field that set the token
 * count (NULL: none) and its name, and whether tokens_per_chunk and token_text were given. */
typedef struct size_sources {
    const char *tokens_field, *tokens_label;
    bool has_tpc, has_text;
} size_sources;

/* "a,b" from the request fields among a and b (either may be NULL). */
static void join_params(char *out, size_t cap, const char *a, const char *b) {
    snprintf(out, cap, "%s%s%s", a ? a : "", a && b ? "," : "", b ? b : "");
}

/* The size caps on what the plan would build (see fake_server.h), before anything is built:
 * a stream's largest content event, or a non-stream body's content and arguments. */
static bool check_sizes(const fake_req *r, const size_sources *src, size_t args_len,
                        rf_fake_err *e) {
    const char *text_label = src->has_text ? "len(fake.token_text)" : "len(the default token_text)";
    const char *text_field = src->has_text ? "fake.token_text" : NULL;
    size_t text = json_escaped_len(r->token_text, r->token_text_len);
    char param[64];
    if (r->stream) {
        /* a reply's pieces and the arguments fragments fit one event by construction */
        if (r->reply || r->n_content == 0) return true;
        bool by_tpc = r->tpc <= r->n_content; /* the first event is the largest */
        size_t k = (size_t)(by_tpc ? r->tpc : r->n_content), bytes = rf_fake_mul_sat(k, text);
        if (bytes <= RF_FAKE_EVENT_MAX) return true;
        const char *k_field =
            by_tpc ? (src->has_tpc ? "fake.tokens_per_chunk" : NULL) : src->tokens_field;
        const char *k_label =
            by_tpc ? (src->has_tpc ? "fake.tokens_per_chunk" : "the server's tokens_per_chunk")
                   : src->tokens_label;
        join_params(param, sizeof param, k_field, text_field);
        return fail(e, param,
                    "%s x %s = %zu x %zu = %zu bytes per event (JSON-escaped) exceeds the "
                    "%u-byte cap",
                    k_label, text_label, k, text, bytes, RF_FAKE_EVENT_MAX);
    }
    size_t content = r->reply ? json_escaped_len(r->reply, strlen(r->reply))
                              : rf_fake_mul_sat((size_t)r->n_content, text);
    size_t args = r->has_tool ? json_escaped_len(r->tool_args, args_len) : 0;
    if (add_sat(content, args) <= RF_FAKE_COMPLETION_MAX) return true;
    if (!r->reply && content > RF_FAKE_COMPLETION_MAX) {
        join_params(param, sizeof param, src->tokens_field, text_field);
        return fail(e, param,
                    "%s x %s = %d x %zu = %zu bytes of non-stream content (JSON-escaped) exceeds "
                    "the %u-byte cap (a stream is not capped in total)",
                    src->tokens_label, text_label, (int)r->n_content, text, content,
                    RF_FAKE_COMPLETION_MAX);
    }
    join_params(param, sizeof param, r->reply ? "fake.reply" : NULL,
                r->has_tool ? "fake.tool_call.arguments" : NULL);
    return fail(e, param,
                "the non-stream content (%zu bytes) and tool-call arguments (%zu bytes, "
                "JSON-escaped) exceed the %u-byte cap",
                content, args, RF_FAKE_COMPLETION_MAX);
}

/* What the steps of the plan hand on to each other. */
typedef struct plan_ctx {
    json_t *root, *tools, *fk, *tc; /* the request, its tools, its "fake" field and tool call */
    int32_t tokens;                 /* the token count asked for */
    bool from_max;                  /* ... from the request's max_(completion_)tokens */
    size_sources src;               /* where the sizes' factors came from */
    int32_t frag;                   /* fragment_bytes */
    bool has_frag;
    const char *args; /* the tool call's arguments as a string (fake.tool_call.arguments) */
} plan_ctx;

/* The token count: fake.tokens, else the server's, else the request's max_tokens, else the
 * default; with where it came from, for the size errors. */
static bool plan_tokens(const rf_fake *f, const fake_req *r, plan_ctx *c, rf_jr *j,
                        rf_fake_err *e) {
    bool has_mct = rf_jr_has(c->root, "max_completion_tokens");
    bool has_max = has_mct || rf_jr_has(c->root, "max_tokens");
    bool has_tokens = rf_jr_has(c->fk, "tokens");
    c->tokens = 0;
    if (rf_jr_i32(j, c->fk, "fake", "tokens", RF_JR_NULLABLE, 0, MAX_TOKENS, &c->tokens))
        return jr_fail(e, j);
    /* where the count came from: the request's field (NULL: none) and its name in errors */
    c->src.tokens_field = c->src.tokens_label = "fake.tokens";
    if (!has_tokens) {
        c->src.tokens_field = NULL;
        if (f->p.tokens > 0) {
            c->tokens = f->p.tokens, c->src.tokens_label = "the server's tokens";
        } else if (has_max) {
            c->tokens = r->req.max_tokens, c->from_max = true;
            c->src.tokens_field = c->src.tokens_label =
                has_mct ? "max_completion_tokens" : "max_tokens";
        } else {
            c->tokens = DEFAULT_TOKENS, c->src.tokens_label = "the default tokens";
        }
    }
    return true;
}

/* The OpenAI fields (checked by rf_openai_parse) and the "fake" field's members but the fault and
 * the tool call. */
static bool plan_fields(const rf_fake *f, fake_req *r, plan_ctx *c, rf_fake_err *e) {
    const rf_fake_params *p = &f->p;
    int32_t words = 0;
    for (size_t i = 0; i < r->req.n_msgs; i++)
        if (r->req.msgs[i].content) words += count_words(r->req.msgs[i].content);
    r->model = r->req.model ? r->req.model : f->model;
    r->stream = r->req.stream;
    r->include_usage = r->req.include_usage;
    rf_error jerr;
    rf_jr j = rf_jr_make(NULL, RF_ERR_ARG, &jerr);
    const unsigned opt = RF_JR_NULLABLE;
    if (rf_jr_array(&j, c->root, NULL, "tools", opt, &c->tools)) return jr_fail(e, &j);
    if (rf_jr_object(&j, c->root, NULL, "fake", opt, &c->fk)) return jr_fail(e, &j);
    json_t *fk = c->fk;
    double ttft = p->ttft_ms, gap = p->gap_ms, stall = p->stall_ms;
    if (rf_jr_num(&j, fk, "fake", "ttft_ms", opt, 0, MAX_MS, &ttft) ||
        rf_jr_num(&j, fk, "fake", "gap_ms", opt, 0, MAX_MS, &gap) ||
        rf_jr_num(&j, fk, "fake", "stall_ms", opt, 0, MAX_STALL_MS, &stall))
        return jr_fail(e, &j);
    r->ttft_ns = ms_to_ns(ttft);
    r->gap_ns = ms_to_ns(gap);
    r->stall_ns = ms_to_ns(stall);
    if (!plan_tokens(f, r, c, &j, e)) return false;
    r->tpc = p->tokens_per_chunk > 0 ? p->tokens_per_chunk : 1;
    r->usage = p->usage;
    r->fault_at = p->fault_after;
    r->retry_after = p->retry_after_s;
    r->token_text = DEFAULT_TOK_TXT;
    c->frag = DEFAULT_FRAG;
    c->src.has_tpc = rf_jr_has(fk, "tokens_per_chunk");
    c->has_frag = rf_jr_has(fk, "fragment_bytes");
    r->prompt_tokens = words;
    if (rf_jr_i32(&j, fk, "fake", "tokens_per_chunk", opt, 1, 10000, &r->tpc) ||
        rf_jr_bool(&j, fk, "fake", "usage", opt, &r->usage) ||
        rf_jr_str(&j, fk, "fake", "token_text", opt, &r->token_text) ||
        rf_jr_str(&j, fk, "fake", "reply", opt, &r->reply) ||
        rf_jr_i32(&j, fk, "fake", "fragment_bytes", opt, 1, MAX_FRAG_BYTES, &c->frag) ||
        rf_jr_i32(&j, fk, "fake", "prompt_tokens", opt, 0, 1000000000, &r->prompt_tokens) ||
        rf_jr_i32(&j, fk, "fake", "fault_after", opt, 0, MAX_TOKENS, &r->fault_at) ||
        rf_jr_i32(&j, fk, "fake", "retry_after", opt, 0, 86400, &r->retry_after) ||
        rf_jr_str(&j, fk, "fake", "finish_reason", opt, &r->finish))
        return jr_fail(e, &j);
    r->token_text_len = strlen(r->token_text);
    c->src.has_text = json_is_string(json_object_get(fk, "token_text"));
    return true;
}

/* The fault: the request's, else a draw at the server's rate. */
static bool plan_fault(rf_fake *f, fake_req *r, const plan_ctx *c, rf_fake_err *e) {
    const rf_fake_params *p = &f->p;
    rf_error jerr;
    rf_jr j = rf_jr_make(NULL, RF_ERR_ARG, &jerr);
    const char *fault_s = NULL;
    if (rf_jr_str(&j, c->fk, "fake", "fault", RF_JR_NULLABLE, &fault_s)) return jr_fail(e, &j);
    r->fault = RF_FAKE_FAULT_NONE;
    if (fault_s) {
        if (!rf_fake_fault_parse(fault_s, &r->fault))
            return fail(e, "fake.fault",
                        "fake.fault '%s' is not one of none, refuse, 500, 429, stall, truncate, "
                        "invalid_json, error_event, wrong_tool_call, wrong_tool_name",
                        fault_s);
    } else if (p->fault != RF_FAKE_FAULT_NONE && p->fault_rate > 0) {
        uint64_t k = atomic_fetch_add(&f->draws, 1);
        double u = (double)(splitmix(p->seed ^ splitmix(k)) >> 11) * 0x1.0p-53;
        if (u < p->fault_rate) r->fault = p->fault;
    }
    return true;
}

/* The tool call: fake.tool_call, or the wrong_tool_* faults' call. */
static bool plan_tool(fake_req *r, plan_ctx *c, rf_fake_err *e) {
    rf_error jerr;
    rf_jr j = rf_jr_make(NULL, RF_ERR_ARG, &jerr);
    const unsigned opt = RF_JR_NULLABLE;
    const char *args = NULL;
    if (rf_jr_object(&j, c->fk, "fake", "tool_call", opt, &c->tc)) return jr_fail(e, &j);
    if (c->tc) {
        if (rf_jr_str(&j, c->tc, "fake.tool_call", "name", RF_JR_REQUIRED, &r->tool_name))
            return jr_fail(e, &j);
        json_t *a = json_object_get(c->tc, "arguments");
        if (json_is_object(a)) {
            r->tool_args = rf_json_dumps(a, JSON_COMPACT);
            if (!r->tool_args) return fail(e, NULL, "out of memory");
        } else if (rf_jr_str(&j, c->tc, "fake.tool_call", "arguments", opt, &args)) {
            return jr_fail(e, &j);
        }
        r->has_tool = true;
    }
    if (r->fault == RF_FAKE_FAULT_WRONG_TOOL_CALL) {
        if (!r->tool_name) {
            r->tool_name = json_string_value(
                json_object_get(json_object_get(json_array_get(c->tools, 0), "function"), "name"));
            if (!r->tool_name) r->tool_name = "count_ids";
        }
        free(r->tool_args);
        r->tool_args = NULL;
        args = BAD_TOOL_ARGS;
        r->has_tool = true;
    } else if (r->fault == RF_FAKE_FAULT_WRONG_TOOL_NAME) {
        static const char *const names[] = {"no_such_tool", "no_such_tool_x", "no_such_tool_y"};
        size_t k = 0;
        while (k + 1 < 3 && tools_have(c->tools, names[k])) k++;
        r->tool_name = names[k];
        r->has_tool = true;
    }
    if (r->has_tool && !r->tool_args) {
        r->tool_args = strdup(args ? args : "{}");
        if (!r->tool_args) return fail(e, NULL, "out of memory");
    }
    return true;
}

/* The content tokens and the events (content events, then the tool call's header and
 * fragments), held to the size caps. */
static bool plan_events(fake_req *r, const plan_ctx *c, rf_fake_err *e) {
    if (r->reply) {
        size_t len = strlen(r->reply), n_pieces = reply_walk(r->reply, len, NULL);
        if (n_pieces > MAX_TOKENS)
            return fail(e, "fake.reply", "fake.reply has %zu pieces, more than %d", n_pieces,
                        MAX_TOKENS);
        if (!(r->reply_off = offsets_alloc(n_pieces))) return fail(e, NULL, "out of memory");
        reply_walk(r->reply, len, r->reply_off);
        r->n_content = (int32_t)n_pieces;
    } else {
        r->n_content = r->has_tool ? 0 : c->tokens;
    }
    r->n_cev = (int32_t)(((int64_t)r->n_content + r->tpc - 1) / r->tpc);
    r->n_ev = r->n_cev;
    r->completion_tokens = r->n_content;
    size_t args_len = r->has_tool ? strlen(r->tool_args) : 0;
    if (r->has_tool) {
        size_t n_frag = frag_walk(r->tool_args, args_len, (size_t)c->frag, NULL);
        if (n_frag > RF_FAKE_DELTAS_MAX)
            return fail(e,
                        c->has_frag ? "fake.tool_call.arguments,fake.fragment_bytes"
                                    : "fake.tool_call.arguments",
                        "len(fake.tool_call.arguments) / %s = %zu / %d = %zu tool-call deltas "
                        "exceeds the %d-delta cap",
                        c->has_frag ? "fake.fragment_bytes" : "the default fragment_bytes",
                        args_len, (int)c->frag, n_frag, RF_FAKE_DELTAS_MAX);
        if (!(r->frag_off = offsets_alloc(n_frag))) return fail(e, NULL, "out of memory");
        frag_walk(r->tool_args, args_len, (size_t)c->frag, r->frag_off);
        r->n_frag = (int32_t)n_frag;
        r->n_ev += 1 + r->n_frag;
        r->completion_tokens += 1 + r->n_frag;
    }
    return check_sizes(r, &c->src, args_len, e);
}

bool rf_fake_plan(rf_fake *f, fake_req *r, rf_fake_err *e) {
    plan_ctx c = {0};
    c.root = r->root;
    if (!plan_fields(f, r, &c, e) || !plan_fault(f, r, &c, e) || !plan_tool(r, &c, e)) return false;
    /* the names sent back (the model in every chunk) */
    const char *tool_name_src = c.tc ? "fake.tool_call.name" : "tools[0].function.name";
    if (!check_name(r->model, "model", e) || !check_name(r->finish, "fake.finish_reason", e) ||
        !check_name(r->tool_name, tool_name_src, e))
        return false;
    if (!plan_events(r, &c, e)) return false;
    if (r->fault_at > r->n_ev) r->fault_at = r->n_ev;
    if (!r->finish)
        r->finish = r->has_tool ? "tool_calls" : (c.from_max && !r->reply) ? "length" : "stop";
    unsigned long long id = (unsigned long long)atomic_fetch_add(&f->ids, 1);
    snprintf(r->id, sizeof r->id, "chatcmpl-fake-%llu", id);
    snprintf(r->call_id, sizeof r->call_id, "call_fake_%llu", id);
    r->created = (long long)time(NULL);
    return true;
}
