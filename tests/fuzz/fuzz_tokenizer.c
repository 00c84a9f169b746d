/* fuzz_tokenizer.c: the libFuzzer target for the tokenizer on arbitrary bytes, for every family
 * roofline has (src/model/tokenizer*.c).
 *
 * Input: one byte choosing the vocabulary (its value mod 3) and parse_special (bit 2), then the
 * text. The vocabularies are built once, in memory, through rf_tokenizer_from_desc (the checks
 * rf_tokenizer_from_gguf runs after reading the keys):
 *   0. Gemma (SentencePiece, "llama"): Gemma's six specials, the 256 <0xHH> byte tokens, "▁",
 *      letters and a few "▁" words; add_space_prefix false, as Gemma 3. (tests/unit/
 *      tiny_model.h's vocabulary has no "▁" token, so a space there falls back to the bytes
 *      E2 96 81 and decodes as "▁", in llama.cpp too: no round trip to assert on it);
 *   1. Qwen2 (byte-level BPE, pre "qwen2"): the 256 byte characters, a few merges, ChatML control
 *      tokens and the user-defined <tool_call>;
 *   2. SmolLM2 (BPE, pre "smollm"): the same without the 21 byte characters SmolLM2 lacks.
 * Every text: encode never fails (every family has a token for every byte, or drops it as
 * llama.cpp does), the count is the same with a short buffer, rf_tokenizer_encode_alloc gives the
 * same ids, every id is in the vocabulary and has a piece, decode needs what it writes.
 * Round trip (docs/tokenizer.md), for valid UTF-8 text, decoding with specials rendered:
 *   - BPE: decode(encode(s)) == s when every byte of s has a token (always for Qwen2);
 *   - SentencePiece: decode(encode(s)) == s with every U+2581 of s read as ' ' (spaces are
 *     U+2581 inside the vocabulary and both decode to ' '); no space is added in front. */
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz_util.h"
#include "gpt2_bytes.h"
#include "model/tokenizer.h"
#include "model/tokenizer_int.h"
#include "util/utf8.h"

/* SmolLM2's vocabulary has no token for these bytes' characters (docs/tokenizer.md). */
static bool smollm_lacks(int b) {
    return b == 0x04 || b == 0x06 || b == 0x13 || b == 0x14 || b == 0x16 || b == 0x1D ||
           b == 0xC0 || b == 0xC1 || b == 0xF1 || b == 0xF2 || b >= 0xF5;
}

/* Raw bytes as GPT-2 byte-level text (tests/unit/gpt2_bytes.h). */
static char *byte_level(const char *raw, size_t n) {
    char *out = gpt2_text(raw, n);
    REQUIRE(out != NULL);
    return out;
}

/* Gemma's shape in small: its six leading specials, the 256 byte tokens <0xHH>, "▁" (a space),
 * the letters and a few "▁" words, scored so that longer pieces win. */
static rf_tokenizer *make_spm(void) {
    static const char *const special[] = {"<pad>", "<eos>",           "<bos>",
                                          "<unk>", "<start_of_turn>", "<end_of_turn>"};
    static const int32_t special_type[] = {RF_TOKEN_CONTROL, RF_TOKEN_CONTROL, RF_TOKEN_CONTROL,
                                           RF_TOKEN_UNKNOWN, RF_TOKEN_CONTROL, RF_TOKEN_CONTROL};
    static const char *const words[] = {"\xe2\x96\x81",
                                        "\xe2\x96\x81t",
                                        "\xe2\x96\x81th",
                                        "\xe2\x96\x81the",
                                        ("\xe2\x96\x81"
                                         "a"),
                                        "in",
                                        "ing",
                                        "er",
                                        "\xe2\x96\x81\xe2\x96\x81",
                                        "\n",
                                        "\xc3\xa9"};
    enum { NS = 6, NW = sizeof words / sizeof words[0], N = NS + 256 + 26 + NW };
    rf_str tok[N];
    int32_t types[N];
    float scores[N];
    char bytes[256][8], letters[26][2];
    size_t n = 0;
    for (size_t i = 0; i < NS; i++) {
        tok[n] = (rf_str){special[i], strlen(special[i])};
        scores[n] = 0;
        types[n++] = special_type[i];
    }
    for (int b = 0; b < 256; b++) {
        snprintf(bytes[b], sizeof bytes[b], "<0x%02X>", (unsigned)b);
        tok[n] = (rf_str){bytes[b], 6};
        scores[n] = 0;
        types[n++] = RF_TOKEN_BYTE;
    }
    for (int c = 0; c < 26; c++) {
        letters[c][0] = (char)('a' + c);
        letters[c][1] = 0;
        tok[n] = (rf_str){letters[c], 1};
        scores[n] = -100.0f - (float)c;
        types[n++] = RF_TOKEN_NORMAL;
    }
    for (size_t i = 0; i < NW; i++) {
        tok[n] = (rf_str){words[i], strlen(words[i])};
        scores[n] = -10.0f + (float)strlen(words[i]);
        types[n++] = RF_TOKEN_NORMAL;
    }
    rf_tokenizer_desc d = rf_tokenizer_desc_init();
    d.name = "tiny-gemma";
    d.model = "llama";
    d.n_tokens = d.n_types = d.n_scores = n;
    d.tokens = tok;
    d.types = types;
    d.scores = scores;
    d.pad = 0;
    d.eos = 1;
    d.bos = 2;
    d.unk = 3;
    d.add_bos = 1;
    d.add_space_prefix = 0; /* as Gemma 3's file says */
    rf_tokenizer *t = NULL;
    rf_error err = {0};
    REQUIRE(rf_tokenizer_from_desc(&d, &t, &err) == RF_OK);
    return t;
}

static rf_tokenizer *make_bpe(const char *pre, bool smollm) {
    /* merges, raw "LEFT|RIGHT"; each result is also a token */
    static const char *const merges[] = {" |t", "t|h", "th|e", " t|h",  " th|e",
                                         " |a", "i|n", "e|r",  "o|n",   " |s",
                                         "r|e", "a|n", "in|g", "\n|\n", " | "};
    static const char *const special[] = {"<|endoftext|>", "<|im_start|>", "<|im_end|>",
                                          "<tool_call>"};
    enum { NM = sizeof merges / sizeof merges[0], NS = sizeof special / sizeof special[0] };
    rf_str tok[256 + NM + NS];
    int32_t types[256 + NM + NS];
    char *owned[256 + 3 * NM];
    rf_str mer[NM];
    size_t n = 0, n_owned = 0;
    for (int b = 0; b < 256; b++) {
        if (smollm && smollm_lacks(b)) continue;
        char c = (char)b;
        char *s = owned[n_owned++] = byte_level(&c, 1);
        tok[n] = (rf_str){s, strlen(s)};
        types[n++] = RF_TOKEN_NORMAL;
    }
    for (size_t i = 0; i < NM; i++) {
        const char *bar = strchr(merges[i], '|');
        char *l = byte_level(merges[i], (size_t)(bar - merges[i]));
        char *r = byte_level(bar + 1, strlen(bar + 1));
        char *m = malloc(strlen(l) + strlen(r) + 2), *joined = malloc(strlen(l) + strlen(r) + 1);
        REQUIRE(m && joined);
        strcpy(m, l);
        strcat(m, " ");
        strcat(m, r);
        strcpy(joined, l);
        strcat(joined, r);
        free(l);
        free(r);
        owned[n_owned++] = m;
        owned[n_owned++] = joined;
        mer[i] = (rf_str){m, strlen(m)};
        tok[n] = (rf_str){joined, strlen(joined)};
        types[n++] = RF_TOKEN_NORMAL;
    }
    size_t first_special = n;
    for (size_t i = 0; i < NS; i++) {
        tok[n] = (rf_str){special[i], strlen(special[i])};
        types[n++] = i == 3 ? RF_TOKEN_USER_DEFINED : RF_TOKEN_CONTROL;
    }
    rf_tokenizer_desc d = rf_tokenizer_desc_init();
    d.name = smollm ? "tiny-smollm2" : "tiny-qwen2";
    d.model = "gpt2";
    d.pre = (rf_str){pre, strlen(pre)};
    d.n_tokens = d.n_types = n;
    d.tokens = tok;
    d.types = types;
    d.merges = mer;
    d.n_merges = NM;
    d.bos = (int64_t)first_special;
    d.eos = (int64_t)first_special + 2;
    d.add_bos = 0;
    rf_tokenizer *t = NULL;
    rf_error err = {0};
    REQUIRE(rf_tokenizer_from_desc(&d, &t, &err) == RF_OK);
    for (size_t i = 0; i < n_owned; i++) free(owned[i]);
    return t;
}

/* The vocabularies, built on first use and read-only afterwards (encode and decode do not
 * change a tokenizer), so no state passes from one input to the next. */
static const rf_tokenizer *vocab(int which) {
    static rf_tokenizer *t[3];
    if (!t[which])
        t[which] = which == 0 ? make_spm() : make_bpe(which == 1 ? "qwen2" : "smollm", which == 2);
    return t[which];
}

static bool valid_utf8(const char *s, size_t n) {
    for (size_t i = 0; i < n;) {
        size_t k = rf_utf8_seq(s + i, n - i);
        if (!k) return false;
        i += k;
    }
    return true;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    if (size < 1) return 0;
    int which = data[0] % 3;
    bool ps = (data[0] & 4) != 0;
    const char *text = (const char *)data + 1;
    size_t len = size - 1;
    const rf_tokenizer *t = vocab(which);
    int32_t n_vocab = rf_tokenizer_n_vocab(t);

    rf_error err = {0};
    int32_t *ids = NULL;
    int64_t n = rf_tokenizer_encode_alloc(t, text, len, false, ps, &ids, &err);
    REQUIRE(n >= 0 && ids != NULL);
    int32_t few[4];
    REQUIRE(rf_tokenizer_encode(t, text, len, false, ps, few, 4, &err) == n);
    for (int64_t i = 0; i < n && i < 4; i++) REQUIRE(few[i] == ids[i]);
    char piece[64];
    for (int64_t i = 0; i < n; i++) {
        REQUIRE(ids[i] >= 0 && ids[i] < n_vocab);
        REQUIRE(rf_tokenizer_piece(t, ids[i], true, piece, sizeof piece) >= 0);
    }
    /* with BOS/EOS as the vocabulary asks: at most two ids more */
    int64_t n_special = rf_tokenizer_encode(t, text, len, true, ps, NULL, 0, &err);
    REQUIRE(n_special >= n && n_special <= n + 2);

    int64_t need = rf_tokenizer_decode(t, ids, n, true, NULL, 0);
    REQUIRE(need >= 0);
    char *back = malloc((size_t)need + 1);
    REQUIRE(back != NULL);
    REQUIRE(rf_tokenizer_decode(t, ids, n, true, back, need + 1) == need && back[need] == 0);

    if (valid_utf8(text, len)) {
        if (which == 0) {
            /* the text as SentencePiece gives it back: U+2581 (E2 96 81) reads as ' ' */
            char *want = malloc(len + 1);
            REQUIRE(want != NULL);
            size_t k = 0;
            for (size_t i = 0; i < len; i++) {
                if (i + 3 <= len && memcmp(text + i, "\xe2\x96\x81", 3) == 0) {
                    want[k++] = ' ';
                    i += 2;
                } else {
                    want[k++] = text[i];
                }
            }
            REQUIRE(fuzz_mem_eq(back, (size_t)need, want, k));
            free(want);
        } else {
            bool all_bytes = true;
            for (size_t i = 0; i < len && which == 2; i++)
                all_bytes = all_bytes && !smollm_lacks((uint8_t)text[i]);
            if (all_bytes) REQUIRE(fuzz_mem_eq(back, (size_t)need, text, len));
        }
    }
    free(back);
    free(ids);
    return 0;
}
