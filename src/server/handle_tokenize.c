/* handle_tokenize.c: POST /tokenize {"content", "add_special", "parse_special"} -> {"tokens"}
 * and POST /detokenize {"tokens"} -> {"content"} (llama-server's shapes; see srv.h).
 */
#include <stdlib.h>

#include "server/srv.h"

/* The body as a JSON object, or NULL with the 400 queued (*ret). */
static json_t *parse_body(srv_req *r, rf_httpd_ret *ret) {
    json_error_t je;
    const rf_buf *b = &r->h.body;
    json_t *root =
        json_loadb(b->len ? (const char *)b->data : "", b->len, JSON_REJECT_DUPLICATES, &je);
    if (!root || !json_is_object(root)) {
        json_decref(root);
        *ret = rf_srv_fail(r, 400, NULL, "invalid_json", "the body must be a JSON object%s%s",
                           root ? "" : ": ", root ? "" : je.text);
        return NULL;
    }
    return root;
}

rf_httpd_ret rf_srv_answer_tokenize(rf_httpd_req *h) {
    srv_req *r = (srv_req *)h;
    rf_httpd_ret ret = RF_HTTPD_OK;
    json_t *root = parse_body(r, &ret);
    if (!root) return ret;
    const json_t *content = json_object_get(root, "content");
    const json_t *as = json_object_get(root, "add_special");
    const json_t *ps = json_object_get(root, "parse_special");
    int32_t *ids = NULL;
    if (!json_is_string(content)) {
        ret = rf_srv_fail(r, 400, "content", "invalid_type", "'content' must be a string");
        goto out;
    }
    if ((as && !json_is_boolean(as)) || (ps && !json_is_boolean(ps))) {
        ret = rf_srv_fail(r, 400, as && !json_is_boolean(as) ? "add_special" : "parse_special",
                          "invalid_type", "add_special and parse_special must be booleans");
        goto out;
    }
    rf_error err = {0};
    pthread_rwlock_rdlock(&r->s->lock);
    int64_t n = r->s->e ? rf_engine_tokenize_alloc(r->s->e, json_string_value(content),
                                                   json_string_length(content), json_is_true(as),
                                                   !ps || json_is_true(ps), &ids, &err)
                        : -2;
    pthread_rwlock_unlock(&r->s->lock);
    if (n < 0) {
        ret = n == -2 ? rf_srv_fail(r, 503, NULL, "server_unavailable", "the model is loading")
                      : rf_srv_fail(r, 500, NULL, NULL, "tokenizing: %s", err.msg);
        goto out;
    }
    json_t *arr = json_array();
    for (int64_t i = 0; arr && i < n; i++)
        if (json_array_append_new(arr, json_integer(ids[i]))) {
            json_decref(arr);
            arr = NULL;
        }
    ret = arr ? rf_httpd_reply_json(h, 200, json_pack("{s:o}", "tokens", arr), NULL, NULL)
              : RF_HTTPD_CLOSE;
out:
    free(ids);
    json_decref(root);
    return ret;
}

rf_httpd_ret rf_srv_answer_detokenize(rf_httpd_req *h) {
    srv_req *r = (srv_req *)h;
    rf_httpd_ret ret = RF_HTTPD_OK;
    json_t *root = parse_body(r, &ret);
    if (!root) return ret;
    const json_t *toks = json_object_get(root, "tokens");
    int32_t *ids = NULL;
    char *text = NULL;
    if (!json_is_array(toks)) {
        ret =
            rf_srv_fail(r, 400, "tokens", "invalid_type", "'tokens' must be an array of integers");
        goto out;
    }
    size_t n = json_array_size(toks);
    ids = malloc((n ? n : 1) * sizeof *ids);
    if (!ids) {
        ret = RF_HTTPD_CLOSE;
        goto out;
    }
    for (size_t i = 0; i < n; i++) {
        const json_t *v = json_array_get(toks, i);
        json_int_t x = json_is_integer(v) ? json_integer_value(v) : -1;
        if (x < 0 || x >= r->s->n_vocab) {
            ret =
                rf_srv_fail(r, 400, "tokens", "invalid_value",
                            "tokens[%zu] must be an integer id in [0, %d)", i, (int)r->s->n_vocab);
            goto out;
        }
        ids[i] = (int32_t)x;
    }
    pthread_rwlock_rdlock(&r->s->lock);
    int64_t len = r->s->e ? rf_engine_detokenize(r->s->e, ids, (int64_t)n, NULL, 0) : -2;
    if (len >= 0) {
        text = malloc((size_t)len + 1);
        if (!text || rf_engine_detokenize(r->s->e, ids, (int64_t)n, text, len + 1) != len) len = -1;
    }
    pthread_rwlock_unlock(&r->s->lock);
    if (len < 0)
        ret = len == -2
                  ? rf_srv_fail(r, 503, NULL, "server_unavailable", "the model is loading")
                  : rf_srv_fail(r, 400, "tokens", "invalid_value", "the tokens do not decode");
    else
        ret = rf_httpd_reply_json(h, 200, json_pack("{s:s%}", "content", text, (size_t)len), NULL,
                                  NULL);
out:
    free(text);
    free(ids);
    json_decref(root);
    return ret;
}
