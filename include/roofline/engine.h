/* roofline/engine.h: the inference engine's public API: a loaded model served by a scheduler
 * that batches every running request into one forward step (continuous batching).
 *
 * This is the seam: the HTTP server, the bench's in-process backend and `roofline run` use this
 * header and nothing below it (no kernels, no KV cache, no model internals).
 *
 * Threads: rf_engine_open starts one scheduler thread. rf_engine_submit and rf_engine_cancel may
 * be called from any thread at any time, including from inside an event callback. Callbacks run
 * on the scheduler thread, one at a time, and must return quickly (copy what they need and hand
 * it to another thread): the next step waits for them.
 *
 * Ownership: the engine owns the model and every request it accepted; submit copies the prompt,
 * parameters and stop strings. Text in an event is borrowed for the duration of the callback.
 * rf_engine_close cancels what is still queued or running (each gets its final event), joins the
 * scheduler and frees everything.
 */
#ifndef ROOFLINE_ENGINE_H
#define ROOFLINE_ENGINE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "roofline/status.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct rf_engine rf_engine;

typedef struct rf_engine_params {
    const char *model_path;    /* GGUF file */
    int32_t n_threads;         /* 0: physical cores */
    int32_t max_seqs;          /* requests decoded together (batch slots); default 16 */
    int32_t n_ctx;             /* most positions one request may use (prompt + output);
                                * 0: min(training context, 4096) */
    int64_t kv_budget;         /* positions the KV memory holds across running requests;
                                * 0: max_seqs * n_ctx. A request is admitted only when its
                                * worst case (prompt + max_tokens) fits what is left */
    int32_t max_step_tokens;   /* most tokens in one forward step; default 512 */
    int32_t prefill_chunk;     /* prompt tokens per step while other requests are decoding, so
                                * a long prompt does not stall them; default 64 */
    int32_t max_queue;         /* waiting requests beyond which submit answers RF_ERR_BUSY;
                                * default 256 */
    int32_t isa;               /* -1: the best kernels this CPU runs; else an rf_isa value */
    const char *chat_template; /* force a chat family ("gemma", "chatml", "qwen"); NULL: the
                                * one the file's template is recognised as */
    bool prefix_cache;         /* keep a finished request's KV in its idle slot and let a
                                * request whose prompt starts with the same tokens reuse it
                                * (results are the same); default on */
    bool widen;                /* every matmul on the widened path: each weight row decoded to
                                * floats on every call and dotted in floats, instead of the
                                * native integer kernels (kernels/matmul.h); default off */
} rf_engine_params;

rf_engine_params rf_engine_default_params(void);

/* Whether name is a chat family rf_engine_params.chat_template accepts ("gemma", "chatml",
 * "qwen"). */
bool rf_engine_chat_template_known(const char *name);

/* Loads the model and starts the scheduler. Errors: those of loading (RF_ERR_IO, _FORMAT,
 * _UNSUPPORTED, _MODEL) and RF_ERR_ARG for parameters out of range. */
rf_status rf_engine_open(const rf_engine_params *p, rf_engine **out, rf_error *err);
void rf_engine_close(rf_engine *e);

typedef struct rf_engine_info {
    const char *model_path;
    const char *model_name;    /* general.name (a printable excerpt: control bytes and invalid
                                * UTF-8 become '?'), or the file's base name */
    const char *arch;          /* "gemma3", "qwen2", "llama" */
    const char *chat_template; /* the chat family used: "gemma", "chatml", "qwen", "unknown" */
    int32_t n_vocab, n_ctx, n_ctx_train, max_seqs, n_threads;
    int64_t kv_budget;
    uint64_t kv_bytes;     /* memory allocated for the KV cache */
    uint64_t weight_bytes; /* tensor bytes of the model file */
    uint64_t file_bytes;
    uint64_t bytes_per_token; /* read per decoded token at an empty context (analysis/roofline) */
    const char *kernels;      /* "avx512", ... */
    bool widened;             /* every matmul on the widened path (rf_engine_params.widen) */
} rf_engine_info;

void rf_engine_get_info(const rf_engine *e, rf_engine_info *out);

/* ---- text ---- */

/* As rf_tokenizer_encode: writes at most cap ids, returns how many the text needs, -1 on
 * failure. add_bos adds the model's BOS when its vocabulary asks for one. */
int64_t rf_engine_tokenize(const rf_engine *e, const char *text, size_t len, bool add_bos,
                           bool parse_special, int32_t *out, int64_t cap, rf_error *err);
/* As rf_engine_tokenize into a new array *out (the caller frees it; NULL on failure): one pass
 * when the text needs at most len + 8 ids (almost always), a second only when it needs more.
 * Returns the number of ids, -1 on failure (err says why: the tokenizer's error or out of
 * memory). */
int64_t rf_engine_tokenize_alloc(const rf_engine *e, const char *text, size_t len, bool add_bos,
                                 bool parse_special, int32_t **out, rf_error *err);
/* Decodes ids to text (NUL-terminated when cap > 0); returns the length needed, -1 for a bad id. */
int64_t rf_engine_detokenize(const rf_engine *e, const int32_t *ids, int64_t n, char *buf,
                             int64_t cap);

typedef struct rf_message {
    const char *role;         /* system, developer, user, assistant, tool */
    const char *content;      /* NULL only for an assistant turn that only calls tools */
    const char *tool_calls;   /* assistant: the OpenAI tool_calls array as JSON text, or NULL */
    const char *tool_call_id; /* tool: the call it answers, or NULL */
} rf_message;

/* Renders a conversation (and tools_json, an OpenAI "tools" array as JSON text, or NULL) with
 * the model's chat template, in the model's own tool format, into *out (malloc'd,
 * NUL-terminated; caller frees). add_generation_prompt appends the opening of the assistant's
 * turn. RF_ERR_UNSUPPORTED when the model's template is of no family roofline renders. */
rf_status rf_engine_chat_prompt(const rf_engine *e, const rf_message *msgs, size_t n,
                                const char *tools_json, bool add_generation_prompt, char **out,
                                rf_error *err);

/* A reply read for tool calls in the model's own format (and, as several vLLM parsers accept,
 * a bare JSON object naming a declared tool with an "arguments" object). */
typedef struct rf_reply_call {
    char *name;
    char *arguments; /* compact JSON object text */
} rf_reply_call;

typedef struct rf_reply {
    rf_reply_call *calls;
    int32_t n_calls;
    const char *form; /* "none", "tagged", "bare_json", "prompt_json" (static) */
    char *content;    /* the text outside the calls, or NULL */
} rf_reply;

rf_status rf_engine_parse_reply(const rf_engine *e, const char *text, size_t len,
                                const char *tools_json, rf_reply *out, rf_error *err);
void rf_reply_free(rf_reply *r);

/* How this model writes a tool call, for a reader that splits a reply while it streams: the
 * texts a call is written between (e.g. "<tool_call>" and "</tool_call>"), or both NULL when
 * the model's call is a bare JSON object that is the whole reply. Either way the call is an
 * object {"name": ..., "arguments" (or "parameters"): {...}}. Static strings. */
void rf_engine_tool_markers(const rf_engine *e, const char **open, const char **close);

/* ---- requests ---- */

#define RF_MAX_STOPS    8
#define RF_MAX_STOP_LEN 128

#define RF_MAX_TOP_LOGPROBS 20

/* How a request's tools (tools_json) constrain its output. */
typedef enum rf_tool_choice {
    RF_TOOL_CHOICE_NONE = 0, /* not constrained (the tools are only described in the prompt) */
    RF_TOOL_CHOICE_AUTO,     /* free text; once the model opens a call in its own format, the
                              * rest of the call is constrained to a declared tool's name and
                              * its parameters' schema */
    RF_TOOL_CHOICE_REQUIRED, /* the reply is a call to a declared tool (several when
                              * parallel_tool_calls) */
    RF_TOOL_CHOICE_NAMED,    /* the reply is a call to tool_name */
} rf_tool_choice;

typedef struct rf_request_params {
    float temperature; /* <= 0: greedy */
    int32_t top_k;     /* 0: off */
    float top_p;       /* (0, 1]; 1: off */
    uint64_t seed;
    int32_t max_tokens;             /* -1: until end of generation or the context is full */
    bool ignore_eos;                /* keep generating through end-of-generation tokens */
    const char *stop[RF_MAX_STOPS]; /* stop strings (NULL-terminated list, copied) */
    /* OpenAI's penalties over the tokens generated so far: a token's logit drops by
     * presence_penalty once it has appeared and by frequency_penalty per appearance */
    float presence_penalty;  /* [-2, 2]; 0: off */
    float frequency_penalty; /* [-2, 2]; 0: off */
    int32_t logprobs; /* -1: none; 0..RF_MAX_TOP_LOGPROBS: each token event carries the token's
                       * log-probability under the model (before temperature and penalties)
                       * and that many most likely alternatives */
    /* structured output, constrained token by token (docs/constraints.md); the strings are
     * compiled at submit and not kept */
    const char *json_schema;    /* non-NULL: the output is one JSON value matching this JSON
                                 * Schema (JSON text), without leading whitespace, and the
                                 * request ends ("stop") right after the value (a number or a
                                 * literal that could go on ends at an end-of-generation token);
                                 * "{\"type\":\"object\"}" is OpenAI's json_object mode.
                                 * Not together with tool_choice */
    const char *tools_json;     /* the OpenAI "tools" array as JSON text, for tool_choice */
    rf_tool_choice tool_choice; /* RF_TOOL_CHOICE_NONE unless tools_json is set. Calls are
                                 * written in the model's own format (qwen: "<tool_call>\n{...}
                                 * \n</tool_call>"; others: a bare {"name", "parameters"}
                                 * object) and, under REQUIRED and NAMED, the request ends
                                 * ("stop") right after the call */
    const char *tool_name;      /* RF_TOOL_CHOICE_NAMED: the function to call */
    bool parallel_tool_calls;   /* AUTO and REQUIRED: more than one call may follow, each
                                 * after "\n", and the request ends at an end-of-generation
                                 * token (qwen family; tag-less families write one call).
                                 * false: AUTO ends right after its first call too */
} rf_request_params;

rf_request_params rf_request_default_params(void); /* greedy, max_tokens 256, logprobs -1 */

/* Checks a request's parameters as rf_engine_submit does, without queueing anything: RF_OK, or
 * RF_ERR_ARG naming the parameter out of range, or RF_ERR_UNSUPPORTED naming the part of a
 * schema (or of a tool's parameters) that the constraint engine cannot enforce. */
rf_status rf_engine_check_request(const rf_engine *e, const rf_request_params *p, rf_error *err);

typedef enum rf_finish {
    RF_FINISH_NONE = 0,  /* not finished: a token event */
    RF_FINISH_STOP,      /* end-of-generation token or a stop string */
    RF_FINISH_LENGTH,    /* max_tokens reached or the context is full */
    RF_FINISH_CANCELLED, /* rf_engine_cancel or rf_engine_close */
    RF_FINISH_ERROR,     /* the engine failed, or the model gave NaN/Inf logits for this
                          * request ("non-finite logits at position N ..."): message in error */
} rf_finish;

const char *rf_finish_name(rf_finish f); /* "stop", "length", "cancelled", "error" */

typedef struct rf_event {
    uint64_t id;
    int32_t token;    /* the generated token; -1 in a final event without one */
    const char *text; /* text now safe to show: bytes held back while they might be part of
                       * a stop string or an incomplete UTF-8 character come later */
    size_t text_len;
    int64_t t_ns;     /* monotonic clock (CLOCK_MONOTONIC) when the event was made */
    rf_finish finish; /* RF_FINISH_NONE except in the request's last event */
    /* final-event fields (also current in token events) */
    int32_t n_prompt;
    int32_t n_generated;
    int64_t t_submit_ns, t_admit_ns, t_first_ns; /* queued at, admitted to a slot at, first token */
    int32_t n_cached; /* prompt tokens whose KV came from the prefix cache, not computed */
    const char *error;
    /* logprobs >= 0, in every event with a token (a final one too): the token's log-softmax
     * under the raw logits and the most likely alternatives, descending (borrowed for the
     * callback; n_top is 0 and top_ids NULL otherwise) */
    float logprob;
    int32_t n_top;
    const int32_t *top_ids;
    const float *top_logprobs;
    /* the seed that continues this request's random stream: a request submitted with it as its
     * seed (and the same sampling parameters) draws the numbers this one would have drawn next,
     * so a conversation can sample turn after turn as one stream (roofline run --chat). Current
     * in every event; the request's own seed in a final event that never reached a slot */
    uint64_t next_seed;
} rf_event;

typedef void (*rf_event_fn)(void *user, const rf_event *ev);

/* Queues a request for prompt (ids). Every accepted request gets token events and exactly one
 * final event (finish != RF_FINISH_NONE), after which user may be freed. Errors (nothing is
 * queued and no event comes): RF_ERR_ARG (bad parameters or token ids), RF_ERR_CONTEXT (prompt
 * plus max_tokens does not fit n_ctx or the whole KV budget), RF_ERR_BUSY (the queue is full:
 * retry later). */
rf_status rf_engine_submit(rf_engine *e, const int32_t *prompt, int32_t n_prompt,
                           const rf_request_params *p, rf_event_fn fn, void *user, uint64_t *id,
                           rf_error *err);

/* Cancels a queued or running request: its final event (RF_FINISH_CANCELLED) comes within one
 * scheduler step and its slot and KV budget are free from then. RF_ERR_ARG when id is unknown or
 * already finished. */
rf_status rf_engine_cancel(rf_engine *e, uint64_t id);

typedef struct rf_engine_stats {
    int32_t running, waiting;
    int64_t kv_reserved; /* positions reserved by running requests */
    int64_t kv_used;     /* positions stored by running requests */
    int64_t kv_budget;
    uint64_t steps, prompt_tokens, generated_tokens;
    uint64_t finished[5]; /* by rf_finish */
    uint64_t refused_busy;
    uint64_t prefix_queries; /* prompt tokens admitted (looked up in the prefix cache; 0 with
                              * prefix_cache off) */
    uint64_t prefix_hits;    /* of those, tokens whose KV was reused */
    int64_t kv_cached;       /* positions kept by idle slots for prefix reuse (memory each
                              * slot owns anyway: not part of kv_reserved) */
} rf_engine_stats;

void rf_engine_get_stats(rf_engine *e, rf_engine_stats *out);

/* ---- profile ---- */

#define RF_ENGINE_PROF_STAGES 16

/* Where the time of forward steps went, per stage of the forward pass ("embed", "q/k/v",
 * "attention", ... "head"): nanoseconds summed over the steps run since profiling was turned
 * on. */
typedef struct rf_engine_profile {
    int64_t steps;                            /* forward steps profiled */
    int64_t tokens;                           /* tokens in them */
    int32_t n_stages;                         /* entries of stage and ns */
    const char *stage[RF_ENGINE_PROF_STAGES]; /* static names */
    int64_t ns[RF_ENGINE_PROF_STAGES];
} rf_engine_profile;

/* Turns per-stage profiling of the forward steps on (resetting the counters) or off (keeping
 * them): it takes effect before the next step. Any thread; called from an event callback it
 * applies to the steps after that event (a request's first token event: its decode steps
 * only). Off by default: profiling reads the clock twice per stage. */
void rf_engine_profile_enable(rf_engine *e, bool on);

/* The counters as of the last step that finished (any thread). */
void rf_engine_get_profile(rf_engine *e, rf_engine_profile *out);

#ifdef __cplusplus
}
#endif
#endif
