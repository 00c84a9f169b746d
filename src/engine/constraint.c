/* constraint.c: a request's schema in its call format, and the per-token checks and masks. */
#include "engine/constraint.h"

#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "model/chat.h"

#define LEAD_WS 4 /* whitespace bytes allowed before a tag-less call */

/* The anyOf over the declared tools (only tool_name when given) of {name, args_key}. */
static rf_status tool_calls_node(rf_jschema *s, const char *tools_json, const char *only,
                                 const char *args_key, int32_t *out, rf_error *err) {
    json_error_t je;
    json_t *tools = json_loads(tools_json, 0, &je);
    rf_status st = RF_OK;
    int32_t *alts = NULL;
    if (!json_is_array(tools) || !json_array_size(tools)) {
        st = rf_error_set(err, RF_ERR_ARG, "tools: not a non-empty JSON array");
        goto done;
    }
    size_t n = json_array_size(tools), k = 0, i;
    alts = malloc(n * sizeof *alts);
    if (!alts) {
        st = rf_error_set(err, RF_ERR_NOMEM, "out of memory");
        goto done;
    }
    json_t *t;
    json_array_foreach(tools, i, t) {
        json_t *f = json_object_get(t, "function");
        const char *name = json_string_value(json_object_get(f, "name"));
        if (!name) {
            st = rf_error_set(err, RF_ERR_ARG, "tools[%zu]: no function name", i);
            goto done;
        }
        if (only && strcmp(only, name)) continue;
        json_t *params = json_object_get(f, "parameters");
        int32_t pn;
        if (params) {
            char path[64];
            snprintf(path, sizeof path, "tools[%zu].function.parameters", i);
            if ((st = rf_jschema_compile_json(s, params, path, &pn, err))) goto done;
        } else {
            pn = rf_jschema_add_object(s, NULL, NULL, 0); /* no parameters: {} */
        }
        const char *keys[2] = {"name", args_key};
        int32_t nodes[2] = {rf_jschema_add_const_string(s, name), pn};
        alts[k] = nodes[0] < 0 || pn < 0 ? -1 : rf_jschema_add_object(s, keys, nodes, 2);
        if (alts[k++] < 0) {
            st = rf_error_set(err, RF_ERR_NOMEM, "out of memory");
            goto done;
        }
    }
    if (!k) {
        st =
            rf_error_set(err, RF_ERR_ARG, "tool_choice names '%.60s', which is not among the tools",
                         only ? only : "");
        goto done;
    }
    if (k > RF_JM_THREADS) { /* every call starts {"name": ": all would be live at once */
        st = rf_error_set(err, RF_ERR_UNSUPPORTED,
                          "tools: %zu functions, more than the %d a constrained call can choose "
                          "among",
                          k, RF_JM_THREADS);
        goto done;
    }
    *out = k == 1 ? alts[0] : rf_jschema_add_list(s, RF_JN_UNION, alts, (int32_t)k);
    if (*out < 0) st = rf_error_set(err, RF_ERR_NOMEM, "out of memory");
done:
    free(alts);
    json_decref(tools);
    return st;
}

static int32_t seq(rf_jschema *s, const int32_t *k, int32_t n, uint32_t can_end, int32_t loop) {
    for (int32_t i = 0; i < n; i++)
        if (k[i] < 0) return -1;
    int32_t id = rf_jschema_add_list(s, RF_JN_SEQ, k, n);
    if (id >= 0) {
        s->nodes[id].can_end = can_end;
        s->nodes[id].loop_from = loop;
    }
    return id;
}

/* The call(s) in the family's format around calls (the anyOf node). */
static int32_t wrap_calls(rf_jschema *s, int family, rf_tool_choice choice, bool parallel,
                          int32_t calls) {
    if (family == RF_CHAT_QWEN) {
        if (choice == RF_TOOL_CHOICE_AUTO) {
            /* tagged calls after free text (the first text may not open with '{'), or a reply
             * that is a bare call object (Qwen2.5-Coder writes them; toolcall.h reads them) */
            int32_t k[8] = {rf_jschema_add_text(s, "<tool_call>", true),
                            rf_jschema_add_raw(s, "\n"),
                            calls,
                            rf_jschema_add_raw(s, "\n</tool_call>"),
                            rf_jschema_add_text(s, "<tool_call>", false),
                            rf_jschema_add_raw(s, "\n"),
                            calls,
                            rf_jschema_add_raw(s, "\n</tool_call>")};
            int32_t tagged = parallel ? seq(s, k, 8, 1u | 1u << 4, 4) : seq(s, k, 4, 1u, -1);
            int32_t b[2] = {rf_jschema_add_ws(s, LEAD_WS), calls};
            int32_t alt[2] = {tagged, seq(s, b, 2, 0, -1)};
            return alt[0] < 0 || alt[1] < 0 ? -1 : rf_jschema_add_list(s, RF_JN_UNION, alt, 2);
        }
        int32_t k[4] = {rf_jschema_add_raw(s, "<tool_call>\n"), calls,
                        rf_jschema_add_raw(s, "\n</tool_call>"), rf_jschema_add_raw(s, "\n")};
        if (choice == RF_TOOL_CHOICE_REQUIRED && parallel) return seq(s, k, 4, 1u << 3, 0);
        return seq(s, k, 3, 0, -1);
    }
    int32_t k[2] = {rf_jschema_add_ws(s, LEAD_WS), calls};
    int32_t call = seq(s, k, 2, 0, -1);
    if (choice != RF_TOOL_CHOICE_AUTO || call < 0) return call;
    int32_t alt[2] = {call, rf_jschema_add_text(s, NULL, true)};
    return alt[1] < 0 ? -1 : rf_jschema_add_list(s, RF_JN_UNION, alt, 2);
}

rf_status rf_constraint_compile(int family, const rf_request_params *p, rf_jschema **out,
                                rf_error *err) {
    *out = NULL;
    if (p->tool_choice < RF_TOOL_CHOICE_NONE || p->tool_choice > RF_TOOL_CHOICE_NAMED)
        return rf_error_set(err, RF_ERR_ARG, "tool_choice %d is not a known choice",
                            (int)p->tool_choice);
    if (!p->json_schema && p->tool_choice == RF_TOOL_CHOICE_NONE) return RF_OK;
    if (p->json_schema && p->tool_choice != RF_TOOL_CHOICE_NONE)
        return rf_error_set(err, RF_ERR_UNSUPPORTED,
                            "json_schema together with tool_choice is not supported");
    if (p->tool_choice != RF_TOOL_CHOICE_NONE && !p->tools_json)
        return rf_error_set(err, RF_ERR_ARG, "tool_choice needs tools");
    if (p->tool_choice == RF_TOOL_CHOICE_NAMED && !p->tool_name)
        return rf_error_set(err, RF_ERR_ARG, "tool_choice names no function");
    rf_jschema *s;
    rf_status st = rf_jschema_new(&s, err);
    if (st) return st;
    int32_t root = -1;
    if (p->json_schema) {
        st = rf_jschema_compile_text(s, p->json_schema, "json_schema", &root, err);
    } else {
        const char *args = family == RF_CHAT_QWEN ? "arguments" : "parameters";
        int32_t calls;
        st = tool_calls_node(s, p->tools_json,
                             p->tool_choice == RF_TOOL_CHOICE_NAMED ? p->tool_name : NULL, args,
                             &calls, err);
        if (!st) {
            root = wrap_calls(s, family, p->tool_choice, p->parallel_tool_calls, calls);
            if (root < 0) st = rf_error_set(err, RF_ERR_NOMEM, "out of memory");
        }
    }
    if (st) {
        rf_jschema_free(s);
        return st;
    }
    s->root = root;
    *out = s;
    return RF_OK;
}

/* ---- per-request state ---- */

struct rf_constraint {
    const rf_jschema *s;
    const rf_vocab_index *v;
    rf_jset cur;
    rf_jset tmp, tmp2;
    rf_jset next; /* the state after next_id (the last token allows() accepted) */
    int32_t next_id;
    rf_jset *store;     /* max_len + 1 sets for the trie walk, allocated on the first mask */
    const rf_jset **at; /* the state at each depth of the walk */
};

rf_status rf_constraint_new(const rf_jschema *s, const rf_vocab_index *v, rf_constraint **out,
                            rf_error *err) {
    *out = NULL;
    rf_constraint *c = malloc(sizeof *c);
    if (!c) return rf_error_set(err, RF_ERR_NOMEM, "out of memory");
    c->s = s;
    c->v = v;
    c->store = NULL;
    c->at = NULL;
    c->next_id = -1;
    rf_jm_init(s, &c->cur);
    *out = c;
    return RF_OK;
}

void rf_constraint_free(rf_constraint *c) {
    if (!c) return;
    free(c->store);
    free(c->at);
    free(c);
}

/* The state after token id into *dst; false when it is not allowed. */
static bool simulate(rf_constraint *c, int32_t id, rf_jset *dst) {
    if (id < 0 || id >= c->v->n_vocab) return false;
    uint32_t len;
    const char *p = rf_vocab_piece(c->v, id, &len);
    switch (c->v->kind[id]) {
    case RF_VK_EOG:
        if (!rf_jm_can_end(c->s, &c->cur)) return false;
        dst->n = 0; /* the output ends */
        return true;
    case RF_VK_ORDINARY:
        rf_jm_copy(dst, &c->cur);
        return rf_jm_feed(c->s, dst, p, len, &c->tmp);
    case RF_VK_SPECIAL:
        if (!rf_jm_special_ok(c->s, &c->cur, dst)) return false;
        return rf_jm_feed(c->s, dst, p, len, &c->tmp);
    default:
        return false;
    }
}

bool rf_constraint_allows(rf_constraint *c, int32_t id) {
    if (!simulate(c, id, &c->next)) {
        c->next_id = -1;
        return false;
    }
    c->next_id = id;
    return true;
}

bool rf_constraint_accept(rf_constraint *c, int32_t id) {
    if (c->next_id != id && !rf_constraint_allows(c, id)) return false;
    rf_jm_copy(&c->cur, &c->next);
    c->next_id = -1;
    return true;
}

bool rf_constraint_done(const rf_constraint *c) {
    return rf_jm_done(&c->cur);
}

static void set_bit(uint64_t *bits, int32_t id, int32_t *count) {
    uint64_t m = 1ull << (id % 64);
    if (!(bits[id / 64] & m)) {
        bits[id / 64] |= m;
        (*count)++;
    }
}

/* The trie's tokens that keep the matcher alive, skipping every subtree it rejects. */
static void walk(rf_constraint *c, const rf_trie *t, uint64_t *bits, int32_t *count) {
    c->at[0] = &c->cur;
    for (uint32_t i = 1; i < t->n_nodes;) {
        const rf_trie_node *nd = &t->nodes[i];
        const rf_jset *parent = c->at[nd->depth - 1];
        rf_jset *o = &c->store[nd->depth];
        if (rf_jm_step(c->s, parent, nd->byte, o)) {
            c->at[nd->depth] = parent;
        } else {
            if (!o->n) {
                i = nd->end;
                continue;
            }
            c->at[nd->depth] = o;
        }
        for (uint32_t k = 0; k < nd->tok_n; k++) set_bit(bits, t->ids[nd->tok_first + k], count);
        i++;
    }
}

int32_t rf_constraint_mask(rf_constraint *c, uint64_t *bits) {
    const rf_vocab_index *v = c->v;
    size_t words = ((size_t)v->n_vocab + 63) / 64;
    memset(bits, 0, words * sizeof *bits);
    int32_t count = 0;
    if (!c->store) {
        c->store = malloc(((size_t)v->max_len + 1) * sizeof *c->store);
        c->at = malloc(((size_t)v->max_len + 1) * sizeof *c->at);
        if (!c->store || !c->at) { /* out of memory: the lazy check's answers only */
            free(c->store);
            free(c->at);
            c->store = NULL;
            c->at = NULL;
            return 0;
        }
    }
    if (rf_jm_in_free_string(c->s, &c->cur)) {
        for (size_t w = 0; w < words; w++) {
            bits[w] = v->plain[w];
            count += __builtin_popcountll(v->plain[w]);
        }
        walk(c, &v->nonplain, bits, &count);
    } else {
        walk(c, &v->all, bits, &count);
    }
    if (v->n_specials && rf_jm_special_ok(c->s, &c->cur, &c->tmp2))
        for (int32_t i = 0; i < v->n_specials; i++) {
            uint32_t len;
            const char *p = rf_vocab_piece(v, v->specials[i], &len);
            rf_jm_copy(&c->next, &c->tmp2);
            if (rf_jm_feed(c->s, &c->next, p, len, &c->tmp)) set_bit(bits, v->specials[i], &count);
        }
    c->next_id = -1; /* next was used as scratch */
    if (rf_jm_can_end(c->s, &c->cur))
        for (int32_t i = 0; i < v->n_eog; i++) set_bit(bits, v->eog[i], &count);
    return count;
}
