/* fuzz_json_schema.c: the libFuzzer target for the constraint engine: the JSON Schema compiler
 * (src/engine/json_schema.c) and the byte-level matcher over its graph (src/engine/json_match.c).
 *
 * Input: SCHEMA \0 TEXT. The schema is compiled (a refusal must be RF_ERR_ARG or
 * RF_ERR_UNSUPPORTED with a message naming the path "fuzz"); when it compiles, TEXT is matched
 * byte by byte from the root. The work is bounded by the input: each byte is one step over at most
 * RF_JM_THREADS threads of at most RF_JM_DEPTH frames, and nothing is allocated while matching.
 * Properties: stepping byte by byte and rf_jm_feed on the whole text agree on whether the text
 * survives; a text the matcher lets end where every thread finished its root is one JSON value
 * that jansson parses (the matcher never lets a model end on invalid JSON). */
#include <jansson.h>
#include <stdlib.h>
#include <string.h>

#include "engine/json_match.h"
#include "engine/json_schema.h"
#include "fuzz_util.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    const uint8_t *p = data;
    size_t n = size, schema_len, text_len;
    const uint8_t *schema = fuzz_part(&p, &n, &schema_len);
    const uint8_t *text = p;
    text_len = n;
    char *schema_s = fuzz_strndup(schema, schema_len);

    rf_jschema *s = NULL;
    rf_error err = {0};
    REQUIRE(rf_jschema_new(&s, &err) == RF_OK);
    int32_t root = -1;
    rf_status st = rf_jschema_compile_text(s, schema_s, "fuzz", &root, &err);
    free(schema_s);
    if (st) {
        REQUIRE(st == RF_ERR_ARG || st == RF_ERR_UNSUPPORTED || st == RF_ERR_NOMEM);
        REQUIRE(fuzz_msg_ok(err.msg, sizeof err.msg, ""));
        rf_jschema_free(s);
        return 0;
    }
    REQUIRE(root >= 0 && root < s->n_nodes && s->n_nodes <= RF_JS_MAX_NODES);
    s->root = root;

    rf_jset *a = malloc(sizeof *a), *b = malloc(sizeof *b), *whole = malloc(sizeof *whole),
            *tmp = malloc(sizeof *tmp);
    REQUIRE(a && b && whole && tmp);
    rf_jm_init(s, a);
    size_t alive = 0; /* bytes consumed before the set died */
    for (; alive < text_len; alive++) {
        if (!rf_jm_step(s, a, text[alive], b)) {
            rf_jset *t = a;
            a = b;
            b = t;
        }
        REQUIRE(a->n >= 0 && a->n <= RF_JM_THREADS);
        if (a->n == 0) break;
        (void)rf_jm_in_free_string(s, a);
        (void)rf_jm_special_ok(s, a, tmp);
    }
    rf_jm_init(s, whole);
    bool survived = rf_jm_feed(s, whole, (const char *)text, text_len, tmp);
    REQUIRE(survived == (a->n > 0));
    if (a->n > 0 && rf_jm_done(a) && rf_jm_can_end(s, a) && text_len > 0) {
        json_error_t je;
        json_t *v = json_loadb((const char *)text, text_len, JSON_DECODE_ANY | JSON_ALLOW_NUL, &je);
        REQUIRE(v != NULL);
        json_decref(v);
    }
    free(a);
    free(b);
    free(whole);
    free(tmp);
    rf_jschema_free(s);
    return 0;
}
