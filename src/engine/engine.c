/* engine.c: the public engine API over the model, context and scheduler thread. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analysis/roofline.h"
#include "engine/engine_int.h"
#include "model/chat.h"
#include "model/toolcall.h"
#include "util/clock.h"
#include "util/file.h"

rf_engine_params rf_engine_default_params(void) {
    rf_engine_params p = {0};
    p.max_seqs = 16;
    p.max_step_tokens = 512;
    p.prefill_chunk = 64;
    p.max_queue = 256;
    p.isa = -1;
    p.prefix_cache = true;
    return p;
}

rf_request_params rf_request_default_params(void) {
    rf_request_params p = {0};
    p.temperature = 0.0f;
    p.top_k = 40;
    p.top_p = 1.0f;
    p.max_tokens = 256;
    p.logprobs = -1;
    return p;
}

bool rf_engine_chat_template_known(const char *name) {
    rf_chat_family fam;
    return name && rf_chat_family_parse(name, &fam);
}

const char *rf_finish_name(rf_finish f) {
    switch (f) {
    case RF_FINISH_NONE:
        return "none";
    case RF_FINISH_STOP:
        return "stop";
    case RF_FINISH_LENGTH:
        return "length";
    case RF_FINISH_CANCELLED:
        return "cancelled";
    case RF_FINISH_ERROR:
        return "error";
    }
    return "?";
}

static rf_status check_params(const rf_engine_params *p, rf_error *err) {
    if (!p->model_path) return rf_error_set(err, RF_ERR_ARG, "engine: no model path");
    if (p->max_seqs < 1 || p->max_seqs > 256)
        return rf_error_set(err, RF_ERR_ARG, "engine: max_seqs %d is not in [1, 256]", p->max_seqs);
    if (p->max_step_tokens < p->max_seqs || p->max_step_tokens > 65536)
        return rf_error_set(err, RF_ERR_ARG,
                            "engine: max_step_tokens %d is not in [max_seqs, 65536]",
                            p->max_step_tokens);
    if (p->prefill_chunk < 1 || p->prefill_chunk > p->max_step_tokens)
        return rf_error_set(err, RF_ERR_ARG,
                            "engine: prefill_chunk %d is not in [1, max_step_tokens]",
                            p->prefill_chunk);
    if (p->max_queue < 1 || p->max_queue > 1 << 20)
        return rf_error_set(err, RF_ERR_ARG, "engine: max_queue %d is not in [1, 2^20]",
                            p->max_queue);
    if (p->kv_budget < 0) return rf_error_set(err, RF_ERR_ARG, "engine: negative KV budget");
    return RF_OK;
}

static char *model_name(const rf_model *m) {
    rf_str s = {0};
    const char *path = rf_model_path(m);
    if (rf_gguf_get_str(rf_model_gguf(m), "general.name", false, &s, NULL) != RF_OK || !s.len) {
        const char *slash = strrchr(path, '/');
        return strdup(slash ? slash + 1 : path);
    }
    char shown[160]; /* shown in reports and on terminals: a printable excerpt of the file's */
    return strdup(rf_printable(s.ptr, (size_t)s.len, shown, sizeof shown));
}

rf_status rf_engine_open(const rf_engine_params *params, rf_engine **out, rf_error *err) {
    *out = NULL;
    rf_status st = check_params(params, err);
    if (st) return st;
    rf_engine *e = calloc(1, sizeof *e);
    if (!e) return rf_error_set(err, RF_ERR_NOMEM, "out of memory");
    e->p = *params;
    pthread_mutex_init(&e->mu, NULL);
    pthread_cond_init(&e->cv, NULL);
    st = rf_model_load(params->model_path, &e->model, err);
    if (st) goto fail;
    if (params->chat_template) {
        rf_chat_family fam;
        if (!rf_chat_family_parse(params->chat_template, &fam)) {
            st = rf_error_set(err, RF_ERR_ARG,
                              "engine: unknown chat template '%.40s' (gemma, chatml, qwen)",
                              params->chat_template);
            goto fail;
        }
        rf_model_set_chat_family(e->model, fam);
    }
    rf_context_params cp = rf_context_default_params();
    cp.n_ctx = params->n_ctx;
    cp.n_seq = params->max_seqs;
    cp.n_batch = params->max_step_tokens;
    cp.n_outputs = params->max_seqs;
    cp.n_threads = params->n_threads;
    cp.isa = params->isa;
    cp.widen = params->widen;
    st = rf_context_new(e->model, &cp, &e->ctx, err);
    if (st) goto fail;
    e->p.n_ctx = rf_context_n_ctx(e->ctx);
    e->p.n_threads = rf_context_n_threads(e->ctx);
    int64_t full = (int64_t)e->p.max_seqs * e->p.n_ctx;
    if (!e->p.kv_budget || e->p.kv_budget > full) e->p.kv_budget = full;
    e->stats.kv_budget = e->p.kv_budget;
    e->model_name = model_name(e->model);
    e->bytes_per_token = rf_model_token_bytes(e->model, 0).total;
    const int32_t S = e->p.max_seqs, T = e->p.max_step_tokens;
    e->queue = calloc((size_t)e->p.max_queue, sizeof *e->queue);
    e->cancels = calloc((size_t)(e->p.max_queue + S), sizeof *e->cancels);
    e->slots = calloc((size_t)S, sizeof *e->slots);
    e->b_tok = malloc((size_t)T * sizeof(int32_t));
    e->b_pos = malloc((size_t)T * sizeof(int32_t));
    e->b_seq = malloc((size_t)T * sizeof(int32_t));
    e->b_out = malloc((size_t)T);
    e->out_slot = malloc((size_t)S * sizeof(int32_t));
    e->text = malloc(RF_TS_PENDING + RF_TS_PIECE_MAX);
    e->dropped = malloc((size_t)e->p.max_queue * sizeof *e->dropped);
    if (!e->model_name || !e->queue || !e->cancels || !e->slots || !e->b_tok || !e->b_pos ||
        !e->b_seq || !e->b_out || !e->out_slot || !e->text || !e->dropped) {
        st = rf_error_set(err, RF_ERR_NOMEM, "engine: out of memory");
        goto fail;
    }
    rf_sampler_params sp = {0.0f, 0, 1.0f, 0, 0.0f, 0.0f};
    for (int32_t i = 0; i < S; i++) {
        st = rf_sampler_new(&sp, rf_model_hparams(e->model)->n_vocab, &e->slots[i].smp, err);
        if (st) goto fail;
        e->slots[i].toks = malloc(((size_t)e->p.n_ctx + 1) * sizeof *e->slots[i].toks);
        if (!e->slots[i].toks) {
            st = rf_error_set(err, RF_ERR_NOMEM, "engine: out of memory");
            goto fail;
        }
    }
    e->next_id = 1;
    if (pthread_create(&e->thread, NULL, rf_scheduler_main, e) != 0) {
        st = rf_error_set(err, RF_ERR_INTERNAL, "engine: cannot start the scheduler thread");
        goto fail;
    }
    e->started = 1;
    *out = e;
    return RF_OK;
fail:
    rf_engine_close(e);
    return st;
}

void rf_engine_close(rf_engine *e) {
    if (!e) return;
    if (e->started) {
        pthread_mutex_lock(&e->mu);
        e->stop = 1;
        pthread_cond_broadcast(&e->cv);
        pthread_mutex_unlock(&e->mu);
        pthread_join(e->thread, NULL); /* the scheduler ends every request on its way out */
    }
    for (int32_t i = 0; e->queue && i < e->q_len; i++)
        rf_req_free(e->queue[(e->q_head + i) % e->p.max_queue]);
    if (e->slots)
        for (int32_t i = 0; i < e->p.max_seqs; i++) {
            rf_sampler_free(e->slots[i].smp);
            free(e->slots[i].toks);
            rf_constraint_free(e->slots[i].con);
            free(e->slots[i].masked);
            free(e->slots[i].mask);
        }
    rf_vocab_index_free(e->vidx);
    free(e->slots);
    free(e->queue);
    free(e->cancels);
    free(e->b_tok);
    free(e->b_pos);
    free(e->b_seq);
    free(e->b_out);
    free(e->out_slot);
    free(e->text);
    free(e->dropped);
    free(e->model_name);
    rf_context_free(e->ctx);
    rf_model_free(e->model);
    pthread_mutex_destroy(&e->mu);
    pthread_cond_destroy(&e->cv);
    free(e);
}

void rf_engine_get_info(const rf_engine *e, rf_engine_info *o) {
    const rf_hparams *hp = rf_model_hparams(e->model);
    const rf_gguf *g = rf_model_gguf(e->model);
    memset(o, 0, sizeof *o);
    o->model_path = rf_model_path(e->model);
    o->model_name = e->model_name;
    o->arch = hp->arch;
    o->chat_template = rf_chat_family_name(rf_model_chat_template(e->model)->family);
    o->n_vocab = hp->n_vocab;
    o->n_ctx = e->p.n_ctx;
    o->n_ctx_train = hp->n_ctx_train;
    o->max_seqs = e->p.max_seqs;
    o->n_threads = e->p.n_threads;
    o->kv_budget = e->p.kv_budget;
    o->kv_bytes = rf_context_kv_bytes(e->ctx);
    for (uint64_t i = 0; i < rf_gguf_n_tensors(g); i++)
        o->weight_bytes += rf_gguf_tensor_at(g, i)->nbytes;
    o->file_bytes = rf_gguf_file_size(g);
    o->bytes_per_token = e->bytes_per_token;
    o->kernels = rf_isa_name(rf_context_isa(e->ctx));
    o->widened = rf_context_widened(e->ctx);
}

int64_t rf_engine_tokenize(const rf_engine *e, const char *text, size_t len, bool add_bos,
                           bool parse_special, int32_t *out, int64_t cap, rf_error *err) {
    return rf_tokenizer_encode(rf_model_tokenizer(e->model), text, len, add_bos, parse_special, out,
                               cap, err);
}

int64_t rf_engine_tokenize_alloc(const rf_engine *e, const char *text, size_t len, bool add_bos,
                                 bool parse_special, int32_t **out, rf_error *err) {
    return rf_tokenizer_encode_alloc(rf_model_tokenizer(e->model), text, len, add_bos,
                                     parse_special, out, err);
}

int64_t rf_engine_detokenize(const rf_engine *e, const int32_t *ids, int64_t n, char *buf,
                             int64_t cap) {
    return rf_tokenizer_decode(rf_model_tokenizer(e->model), ids, n, false, buf, cap);
}

rf_status rf_engine_chat_prompt(const rf_engine *e, const rf_message *msgs, size_t n,
                                const char *tools_json, bool add_generation_prompt, char **out,
                                rf_error *err) {
    *out = NULL;
    rf_chat_msg *m = malloc((n ? n : 1) * sizeof *m);
    if (!m) return rf_error_set(err, RF_ERR_NOMEM, "out of memory");
    for (size_t i = 0; i < n; i++)
        m[i] =
            (rf_chat_msg){msgs[i].role, msgs[i].content, msgs[i].tool_calls, msgs[i].tool_call_id};
    rf_buf b;
    rf_buf_init(&b, 0);
    rf_status st = rf_chat_render(rf_model_chat_template(e->model), m, n, tools_json,
                                  add_generation_prompt, &b, err);
    free(m);
    if (st) {
        rf_buf_free(&b);
        return st;
    }
    *out = (char *)rf_buf_take(&b, NULL);
    return RF_OK;
}

void rf_req_free(rf_req *r) {
    if (!r) return;
    rf_jschema_free(r->schema);
    free(r->prompt);
    free(r);
}

/* As rf_engine_check_request; *schema (when not NULL) receives the compiled constraint. */
static rf_status check_request(const rf_engine *e, const rf_request_params *p, rf_jschema **schema,
                               rf_error *err) {
    if (p->max_tokens < -1 || p->max_tokens == 0)
        return rf_error_set(err, RF_ERR_ARG, "max_tokens %d must be positive (or -1)",
                            p->max_tokens);
    rf_sampler_params sp = rf_req_sampler_params(p);
    rf_status st = rf_sampler_check(&sp, err); /* also the penalties' range, [-2, 2] */
    if (st) return st;
    if (p->logprobs < -1 || p->logprobs > RF_MAX_TOP_LOGPROBS)
        return rf_error_set(err, RF_ERR_ARG, "logprobs %d is not in [-1, %d]", p->logprobs,
                            RF_MAX_TOP_LOGPROBS);
    rf_jschema *s = NULL;
    st = rf_constraint_compile(rf_model_chat_template(e->model)->family, p, &s, err);
    if (schema)
        *schema = s;
    else
        rf_jschema_free(s);
    return st;
}

rf_status rf_engine_check_request(const rf_engine *e, const rf_request_params *p, rf_error *err) {
    return check_request(e, p, NULL, err);
}

rf_status rf_engine_submit(rf_engine *e, const int32_t *prompt, int32_t n_prompt,
                           const rf_request_params *p, rf_event_fn fn, void *user, uint64_t *id,
                           rf_error *err) {
    const int32_t n_vocab = rf_model_hparams(e->model)->n_vocab;
    if (!fn) return rf_error_set(err, RF_ERR_ARG, "no event callback");
    if (n_prompt < 1 || !prompt) return rf_error_set(err, RF_ERR_ARG, "empty prompt");
    for (int32_t i = 0; i < n_prompt; i++)
        if (prompt[i] < 0 || prompt[i] >= n_vocab)
            return rf_error_set(err, RF_ERR_ARG, "prompt token %d: id %d is not in [0, %d)", i,
                                prompt[i], n_vocab);
    rf_jschema *schema = NULL;
    rf_status st = check_request(e, p, &schema, err);
    if (st) return st;
    int64_t need = (int64_t)n_prompt + (p->max_tokens < 0 ? 1 : p->max_tokens);
    if (need > e->p.n_ctx || need > e->p.kv_budget) {
        rf_jschema_free(schema);
        const bool ctx = need > e->p.n_ctx; /* else only the KV budget is too small */
        return rf_error_set(err, RF_ERR_CONTEXT,
                            "the request needs %lld positions (%d prompt tokens + %d to generate), "
                            "more than the %s of %lld %s",
                            (long long)need, n_prompt, p->max_tokens < 0 ? 1 : p->max_tokens,
                            ctx ? "context" : "whole KV budget",
                            ctx ? (long long)e->p.n_ctx : (long long)e->p.kv_budget,
                            ctx ? "tokens" : "positions");
    }
    rf_req *r = calloc(1, sizeof *r);
    int32_t *copy = malloc((size_t)n_prompt * sizeof *copy);
    if (!r || !copy) {
        free(r);
        free(copy);
        rf_jschema_free(schema);
        return rf_error_set(err, RF_ERR_NOMEM, "out of memory");
    }
    r->schema = schema;
    memcpy(copy, prompt, (size_t)n_prompt * sizeof *copy);
    r->prompt = copy;
    r->n_prompt = n_prompt;
    r->fn = fn;
    r->user = user;
    r->p = *p;
    for (int i = 0; i < RF_MAX_STOPS && p->stop[i]; i++) {
        size_t n = strlen(p->stop[i]);
        if (n == 0 || n > RF_MAX_STOP_LEN) {
            rf_req_free(r);
            return rf_error_set(err, RF_ERR_ARG, "stop string %d: length %zu is not in [1, %d]", i,
                                n, RF_MAX_STOP_LEN);
        }
        memcpy(r->stops[r->n_stops++], p->stop[i], n + 1);
    }
    memset(r->p.stop, 0, sizeof r->p.stop);
    r->p.json_schema = r->p.tools_json = r->p.tool_name = NULL; /* compiled into r->schema */
    /* unbounded requests reserve the whole context */
    r->reserve = p->max_tokens < 0 ? e->p.n_ctx : need;
    if (r->reserve > e->p.kv_budget) r->reserve = e->p.kv_budget;
    r->t_submit_ns = rf_now_ns();
    pthread_mutex_lock(&e->mu);
    if (e->q_len >= e->p.max_queue || e->stop) {
        e->stats.refused_busy++;
        pthread_mutex_unlock(&e->mu);
        rf_req_free(r);
        return rf_error_set(err, RF_ERR_BUSY, "the request queue is full (%d waiting)",
                            e->p.max_queue);
    }
    r->id = e->next_id++;
    e->queue[(e->q_head + e->q_len++) % e->p.max_queue] = r;
    if (id) *id = r->id;
    pthread_cond_signal(&e->cv);
    pthread_mutex_unlock(&e->mu);
    return RF_OK;
}

rf_status rf_engine_cancel(rf_engine *e, uint64_t id) {
    rf_status st = RF_ERR_ARG;
    pthread_mutex_lock(&e->mu);
    for (int32_t i = 0; i < e->q_len && st; i++)
        if (e->queue[(e->q_head + i) % e->p.max_queue]->id == id) st = RF_OK;
    for (int32_t i = 0; i < e->p.max_seqs && st; i++)
        if (e->slots[i].state != SLOT_FREE && e->slots[i].req->id == id) st = RF_OK;
    if (!st) {
        int dup = 0;
        for (int32_t i = 0; i < e->n_cancels; i++) dup |= e->cancels[i] == id;
        if (!dup) e->cancels[e->n_cancels++] = id; /* bounded: at most queue + slots live ids */
        pthread_cond_signal(&e->cv);
    }
    pthread_mutex_unlock(&e->mu);
    return st;
}

void rf_engine_get_stats(rf_engine *e, rf_engine_stats *out) {
    pthread_mutex_lock(&e->mu);
    *out = e->stats;
    out->waiting = e->q_len;
    out->running = 0;
    for (int32_t i = 0; i < e->p.max_seqs; i++) out->running += e->slots[i].state != SLOT_FREE;
    out->kv_reserved = e->kv_reserved;
    pthread_mutex_unlock(&e->mu);
}

void rf_engine_profile_enable(rf_engine *e, bool on) {
    pthread_mutex_lock(&e->mu);
    e->prof_req = on ? 1 : -1;
    pthread_mutex_unlock(&e->mu);
}

void rf_engine_get_profile(rf_engine *e, rf_engine_profile *out) {
    _Static_assert(RF_PROF_COUNT <= RF_ENGINE_PROF_STAGES, "RF_ENGINE_PROF_STAGES is too small");
    memset(out, 0, sizeof *out);
    pthread_mutex_lock(&e->mu);
    rf_profile p = e->prof;
    pthread_mutex_unlock(&e->mu);
    out->steps = p.calls;
    out->tokens = p.tokens;
    out->n_stages = RF_PROF_COUNT;
    for (int i = 0; i < RF_PROF_COUNT; i++) {
        out->stage[i] = rf_prof_stage_name((rf_prof_stage)i);
        out->ns[i] = p.ns[i];
    }
}

rf_status rf_engine_parse_reply(const rf_engine *e, const char *text, size_t len,
                                const char *tools_json, rf_reply *out, rf_error *err) {
    memset(out, 0, sizeof *out);
    out->form = rf_call_form_name(RF_CALL_FORM_NONE);
    rf_toolcalls tc;
    if (rf_toolcalls_parse(rf_model_chat_template(e->model)->family, text, len, tools_json, &tc))
        return rf_error_set(err, RF_ERR_NOMEM, "out of memory");
    out->calls = calloc((size_t)tc.n + 1, sizeof *out->calls);
    if (!out->calls) {
        rf_toolcalls_free(&tc);
        return rf_error_set(err, RF_ERR_NOMEM, "out of memory");
    }
    for (int32_t i = 0; i < tc.n; i++) { /* the strings change hands */
        out->calls[i] = (rf_reply_call){tc.calls[i].name, tc.calls[i].arguments};
        tc.calls[i].name = tc.calls[i].arguments = NULL;
    }
    out->n_calls = tc.n;
    out->form = rf_call_form_name(tc.form);
    out->content = tc.content;
    tc.content = NULL;
    rf_toolcalls_free(&tc);
    return RF_OK;
}

void rf_engine_tool_markers(const rf_engine *e, const char **open, const char **close) {
    rf_toolcall_markers(rf_model_chat_template(e->model)->family, open, close);
}

void rf_reply_free(rf_reply *r) {
    for (int32_t i = 0; r->calls && i < r->n_calls; i++) {
        free(r->calls[i].name);
        free(r->calls[i].arguments);
    }
    free(r->calls);
    free(r->content);
    memset(r, 0, sizeof *r);
}
