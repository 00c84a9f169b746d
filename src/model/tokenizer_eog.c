/* tokenizer_eog.c: which tokens end a turn and end generation, found by text as llama.cpp's
 * loader does it when the file does not say (see rf_tokenizer_from_gguf in tokenizer.h).
 */
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "model/tokenizer_impl.h"

/* Token texts llama.cpp takes as the end-of-turn token when the file names none. */
static const char *const k_eot_texts[] = {
    "<|eot_id|>",
    "<|im_end|>",
    "<|end|>",
    "<end_of_turn>",
    "<|endoftext|>",
    "<|end_of_text|>",
    "<EOT>",
    "_<EOT>",
    "[EOT]",
    "<\357\275\234end\342\226\201of\342\226\201sentence\357\275\234>",
    "<end_of_utterance>",
};

/* Token texts llama.cpp treats as end of generation (and marks control) wherever present. */
static const char *const k_eog_texts[] = {
    "<|eot_id|>",
    "<|im_end|>",
    "<|end|>",
    "<|return|>",
    "<|call|>",
    "<|flush|>",
    "<|calls|>",
    "<end_of_turn>",
    "<|endoftext|>",
    "</s>",
    "<|eom_id|>",
    "<EOT>",
    "_<EOT>",
    "[EOT]",
    "[EOS]",
    "<|end_of_text|>",
    "<end_of_utterance>",
    "<eos>",
    "<turn|>",
    "<|tool_response>",
    /* llama.cpp adds the fill-in-the-middle pad, repo and file separators to its eog set */
    "<|fim_pad|>",
    "<fim-pad>",
    "<fim_pad>",
    "<|repo_name|>",
    "<fim-repo>",
    "<repo_name>",
    "<|file_sep|>",
    "<fim-sep>",
    "<file_sep>",
    "<\357\275\234end\342\226\201of\342\226\201sentence\357\275\234>",
    "[e~[",
};

/* The end-of-turn token by text when the file names none; it is control. */
static void find_eot(rf_tokenizer *t) {
    if (t->special.eot >= 0) return;
    for (size_t i = 0; i < RF_TOK_COUNT(k_eot_texts) && t->special.eot < 0; i++) {
        int32_t id = rf_tok_find_text(t, k_eot_texts[i]);
        if (id >= 0) t->special.eot = id;
    }
    if (t->special.eot >= 0) t->attr[t->special.eot] |= RF_TOKATTR_CONTROL;
}

/* The end-of-generation set: the texts of k_eog_texts (made control), eos, eot and eom; and the
 * tokens that are always rendered. */
static void mark_eog_tokens(rf_tokenizer *t) {
    for (size_t i = 0; i < RF_TOK_COUNT(k_eog_texts); i++) {
        int32_t id = rf_tok_find_text(t, k_eog_texts[i]);
        if (id >= 0) t->attr[id] |= RF_TOKATTR_EOG | RF_TOKATTR_CONTROL;
    }
    /* These are always rendered (gpt-oss). */
    static const char *const k_user[] = {"<|channel|>", "<|message|>", "<|start|>",
                                         "<|constrain|>"};
    for (size_t i = 0; i < RF_TOK_COUNT(k_user); i++) {
        int32_t id = rf_tok_find_text(t, k_user[i]);
        if (id >= 0) t->attr[id] = RF_TOKATTR_USER_DEFINED | (t->attr[id] & RF_TOKATTR_EOG);
    }
    if (t->special.eos >= 0) t->attr[t->special.eos] |= RF_TOKATTR_EOG;
    if (t->special.eot >= 0) t->attr[t->special.eot] |= RF_TOKATTR_EOG;
    if (t->eom >= 0) t->attr[t->eom] |= RF_TOKATTR_EOG;
}

/* Whether the token with text s exists and ends generation. */
static bool is_eog_text(const rf_tokenizer *t, const char *s) {
    int32_t id = rf_tok_find_text(t, s);
    return id >= 0 && (t->attr[id] & RF_TOKATTR_EOG);
}

/* llama.cpp's exceptions to the set: tokens that end generation only where no other does. */
static void unmark_exceptions(rf_tokenizer *t) {
    /* "<|end|>" is not an end of generation when "<|return|>"/"<|call|>" (or "<|calls|>" and
     * "<|flush|>") are there: it becomes user-defined. */
    int32_t end = rf_tok_find_text(t, "<|end|>");
    bool has_call = is_eog_text(t, "<|call|>") || is_eog_text(t, "<|calls|>");
    bool has_ret = is_eog_text(t, "<|return|>");
    bool has_flush = is_eog_text(t, "<|flush|>");
    if (end >= 0 && (t->attr[end] & RF_TOKATTR_EOG) && has_call && (has_ret || has_flush))
        t->attr[end] = RF_TOKATTR_USER_DEFINED;

    /* "</s>" is a normal token where "<|tool_response>" or "<|plamo:eos|>" exist. */
    int32_t s_end = rf_tok_find_text(t, "</s>");
    bool marker = is_eog_text(t, "<|tool_response>") || is_eog_text(t, "<|plamo:eos|>");
    if (s_end >= 0 && (t->attr[s_end] & RF_TOKATTR_EOG) && marker)
        t->attr[s_end] = RF_TOKATTR_NORMAL;
}

/* End-of-turn / end-of-generation detection, as llama.cpp's loader does it. */
void rf_tok_mark_eog(rf_tokenizer *t) {
    find_eot(t);
    mark_eog_tokens(t);
    unmark_exceptions(t);
}
