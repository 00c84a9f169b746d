/* fuzz_openai_req.c: the libFuzzer target for request JSON to validated parameters
 * (src/openai/request.c and tools.c): what `roofline serve` does with a POST body.
 *
 * Input: one byte choosing the endpoint (even: /v1/chat/completions, odd: /v1/completions), then
 * the body. A refused body must get a 400, 404 or 413 with a message; an accepted one must hold
 * only values inside the documented ranges, a prompt or at least one message, tools as a JSON
 * array, a named tool choice naming a string, and engine parameters that say the same. */
#include <jansson.h>
#include <string.h>

#include "fuzz_util.h"
#include "openai/request.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    if (size < 1) return 0;
    rf_openai_kind kind = data[0] & 1 ? RF_OPENAI_COMPLETION : RF_OPENAI_CHAT;
    static const char *const models[] = {"m", NULL};
    rf_openai_limits lim = {models, 4096};
    rf_openai_req q;
    rf_openai_error e;
    memset(&e, 0, sizeof e);
    rf_status st = rf_openai_parse(kind, (const char *)data + 1, size - 1, &lim, &q, &e);
    if (st) {
        REQUIRE(st == RF_ERR_ARG || st == RF_ERR_NOMEM);
        if (st == RF_ERR_ARG) REQUIRE(e.http == 400 || e.http == 404 || e.http == 413);
        REQUIRE(fuzz_msg_ok(e.msg, sizeof e.msg, ""));
        REQUIRE(memchr(e.param, 0, sizeof e.param) && memchr(e.type, 0, sizeof e.type));
        REQUIRE(memchr(e.code, 0, sizeof e.code));
        return 0;
    }
    REQUIRE(q.kind == kind && q.root != NULL);
    if (kind == RF_OPENAI_CHAT)
        REQUIRE(q.n_msgs >= 1 && q.msgs != NULL);
    else
        REQUIRE(q.prompt != NULL);
    REQUIRE(q.max_tokens == -1 || (q.max_tokens >= 0 && q.max_tokens <= lim.n_ctx));
    REQUIRE(q.temperature >= 0 && q.temperature <= 2);
    REQUIRE(q.top_p > 0 && q.top_p <= 1 && q.top_k >= 0);
    REQUIRE(q.presence_penalty >= -2 && q.presence_penalty <= 2);
    REQUIRE(q.frequency_penalty >= -2 && q.frequency_penalty <= 2);
    REQUIRE(q.logprobs >= -1);
    int n_stop = 0;
    while (n_stop <= RF_OPENAI_MAX_STOPS && q.stop[n_stop]) n_stop++;
    REQUIRE(n_stop <= RF_OPENAI_MAX_STOPS);
    if (q.tools_json) {
        json_t *t = json_loads(q.tools_json, 0, NULL);
        REQUIRE(t && json_is_array(t));
        json_decref(t);
    }
    if (q.json_schema) {
        json_t *s = json_loads(q.json_schema, JSON_DECODE_ANY, NULL);
        REQUIRE(s != NULL);
        json_decref(s);
    }
    if (q.tool_choice == RF_TOOL_CHOICE_NAMED) REQUIRE(q.tool_name && q.tools_json);
    rf_request_params p = rf_openai_engine_params(&q);
    REQUIRE(p.temperature == q.temperature && p.top_p == q.top_p && p.top_k == q.top_k);
    rf_openai_req_free(&q);
    return 0;
}
