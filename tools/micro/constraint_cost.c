/* constraint_cost.c: what the constraint engine costs per generated token on a real vocabulary
 * (not a test). For each model given: the vocabulary index build, then in several matcher
 * states the median time of a full mask (rf_constraint_mask) and of the lazy check of one
 * sampled token (rf_constraint_allows, over a spread of token ids).
 *
 *   ./build/constraint_cost models/qwen2.5-coder-0.5b-instruct-q4_k_m.gguf \
 *       models/smollm2-135m-instruct-q4_1.gguf
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "engine/constraint.h"
#include "model/chat.h"
#include "model/model.h"
#include "util/clock.h"

static int cmp_d(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static double median(double *v, int n) {
    qsort(v, (size_t)n, sizeof *v, cmp_d);
    return v[n / 2];
}

static const char *TOOLS =
    "[{\"type\":\"function\",\"function\":{\"name\":\"get_weather\",\"parameters\":{\"type\":"
    "\"object\",\"properties\":{\"city\":{\"type\":\"string\"},\"days\":{\"type\":\"number\"}},"
    "\"required\":[\"city\",\"days\"]}}}]";

typedef struct state_case {
    const char *name;
    bool tools;
    rf_tool_choice choice;
    const char *schema;
    const char *prefix; /* text fed before measuring (qwen wrapping added for tool calls) */
} state_case;

static void run_case(const rf_model *m, const rf_vocab_index *v, int family, const state_case *sc) {
    rf_request_params p = rf_request_default_params();
    if (sc->tools) {
        p.tools_json = TOOLS;
        p.tool_choice = sc->choice;
    } else {
        p.json_schema = sc->schema;
    }
    rf_jschema *s = NULL;
    rf_constraint *c = NULL;
    rf_error err = {0};
    if (rf_constraint_compile(family, &p, &s, &err) || rf_constraint_new(s, v, &c, &err)) {
        printf("  %-28s error: %s\n", sc->name, err.msg);
        rf_jschema_free(s);
        return;
    }
    char body[256], text[300];
    const char *args = family == RF_CHAT_QWEN ? "arguments" : "parameters";
    snprintf(body, sizeof body, sc->prefix, args);
    bool tagged = sc->tools && family == RF_CHAT_QWEN && sc->choice != RF_TOOL_CHOICE_AUTO;
    snprintf(text, sizeof text, "%s%s", tagged ? "<tool_call>\n" : "", body);
    int32_t *ids = NULL;
    int64_t n = rf_tokenizer_encode_alloc(rf_model_tokenizer(m), text, strlen(text), false, true,
                                          &ids, &err);
    for (int64_t k = 0; k < n; k++)
        if (!rf_constraint_accept(c, ids[k])) {
            printf("  %-28s prefix token %lld refused\n", sc->name, (long long)k);
            goto done;
        }
    uint64_t *bits = malloc(((size_t)v->n_vocab + 63) / 64 * 8);
    enum { REPS = 31 };
    double t_mask[REPS], t_lazy[REPS];
    int32_t allowed = 0;
    for (int r = 0; r < REPS; r++) {
        int64_t t0 = rf_now_ns();
        allowed = rf_constraint_mask(c, bits);
        t_mask[r] = (double)(rf_now_ns() - t0) / 1e3;
        /* the lazy check: 64 token ids spread over the vocabulary, per token */
        t0 = rf_now_ns();
        int hits = 0;
        for (int32_t k = 0; k < 64; k++)
            hits += rf_constraint_allows(c, (int32_t)((int64_t)k * v->n_vocab / 64 + r));
        t_lazy[r] = (double)(rf_now_ns() - t0) / 1e3 / 64;
        if (hits < 0) printf("?");
    }
    printf("  %-28s mask %8.1f us  lazy check %6.2f us/token  (%d tokens allowed)\n", sc->name,
           median(t_mask, REPS), median(t_lazy, REPS), allowed);
    free(bits);
done:
    free(ids);
    rf_constraint_free(c);
    rf_jschema_free(s);
}

int main(int argc, char **argv) {
    if (argc < 2) {
        fprintf(stderr, "usage: constraint_cost MODEL.gguf [MODEL.gguf ...]\n");
        return 2;
    }
    const state_case cases[] = {
        {"value start (json_object)", false, 0, "{\"type\":\"object\"}", ""},
        {"structural (after '{')", true, RF_TOOL_CHOICE_REQUIRED, NULL, "{"},
        {"key (after ', \"')", true, RF_TOOL_CHOICE_REQUIRED, NULL,
         "{\"name\": \"get_weather\", \"%s\": {\"city\": \"Oslo\", \""},
        {"free string", true, RF_TOOL_CHOICE_REQUIRED, NULL,
         "{\"name\": \"get_weather\", \"%s\": {\"city\": \"Par"},
        {"number", true, RF_TOOL_CHOICE_REQUIRED, NULL,
         "{\"name\": \"get_weather\", \"%s\": {\"city\": \"Oslo\", \"days\": 12"},
        {"any value, nested", false, 0, "{}", "{\"a\": [1, {\"b\": "},
        {"auto: free text", true, RF_TOOL_CHOICE_AUTO, NULL, "Let me see"},
    };
    for (int i = 1; i < argc; i++) {
        rf_model *m = NULL;
        rf_error err = {0};
        if (rf_model_load(argv[i], &m, &err)) {
            fprintf(stderr, "%s: %s\n", argv[i], err.msg);
            return 2;
        }
        int64_t t0 = rf_now_ns();
        rf_vocab_index *v = NULL;
        if (rf_vocab_index_build(rf_model_tokenizer(m), &v, &err)) {
            fprintf(stderr, "%s: %s\n", argv[i], err.msg);
            rf_model_free(m);
            return 2;
        }
        double build_ms = (double)(rf_now_ns() - t0) / 1e6;
        int family = rf_model_chat_template(m)->family;
        printf("%s: %d tokens (longest %d bytes), trie %u nodes (non-plain %u), %d specials; index "
               "built in %.1f "
               "ms; family %s\n",
               argv[i], v->n_vocab, v->max_len, v->all.n_nodes, v->nonplain.n_nodes, v->n_specials,
               build_ms, rf_chat_family_name((rf_chat_family)family));
        for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++)
            run_case(m, v, family, &cases[k]);
        rf_vocab_index_free(v);
        rf_model_free(m);
    }
    return 0;
}
