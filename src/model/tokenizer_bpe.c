/* tokenizer_bpe.c: the "gpt2" family: byte-level BPE as llama.cpp's llm_tokenizer_bpe does it,
 * for the pre-tokenizers "qwen2" (Qwen2.5) and "smollm" (SmolLM2).
 *
 * Built once by bpe_init (owned by the tokenizer, freed by bpe_destroy), read-only afterwards:
 *   - the pre-tokenizer;
 *   - the GPT-2 byte-to-character map: bytes 0x21-0x7E, 0xA1-0xAC and 0xAE-0xFF are their own
 *     code point, the other 68 take U+0100.. in byte order; byte_tok[b] is the token whose text
 *     is b's character (-1: none), cp_byte the reverse map (for decoding);
 *   - the merge table: open addressing over (left id, right id) -> (rank, merged id), the rank
 *     being the merge's index in tokenizer.ggml.merges (the first of duplicates counts). Every
 *     merge must name two tokens and make a token; a line that is not LEFT SPACE RIGHT, or that
 *     names or makes a text that is no token, fails the load naming the merge.
 *
 * A fragment (raw text, special tokens already split out by tokenizer_special.c) is encoded as:
 *   1. decode it into code points with llama.cpp's rules (unicode.h: a bad byte is U+FFFD,
 *      one byte at a time; overlong forms give their code point) and re-encode them, as
 *      llama.cpp's unicode_regex_split does, so its words hold the same bytes; a code point past
 *      U+10FFFF (llama.cpp throws and llama-tokenize aborts) keeps its four original bytes;
 *   2. cut the code points into words with the pre-tokenizer, hand-written scanners with the
 *      semantics of llama.cpp's (unicode.cpp) for these regexes:
 *        qwen2:  (?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}|
 *                 ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+
 *        smollm: \p{N} first (each digit its own word), then in between GPT-2's
 *                's|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)
 *      where (?!\S) and "(?i:" are as llama.cpp implements them (a whitespace run followed by
 *      more text gives back its last character; the contraction letters compare lowercased);
 *   3. each word starts as one symbol per byte (byte_tok); adjacent pairs that have a merge go
 *      on a binary min-heap by (rank, left position); the top pair is merged unless a side has
 *      changed since it was pushed (their lengths no longer add up), and the pairs the merged
 *      symbol forms with its neighbours are pushed. A merge pops one pair and pushes at most
 *      two, so a word of n bytes takes at most n - 1 merges, 3n - 3 pushes and lookups, and
 *      holds at most 2n - 2 pairs: O(n log n), never a scan of the merge list;
 *   4. the remaining symbols are the ids. A byte whose character is no token (SmolLM2 lacks 21
 *      of the 256, among them 0x04 and 0x1D) becomes the tokens whose text is one of the bytes
 *      of that character's UTF-8, if any, else nothing: it is dropped, as llama.cpp drops it.
 * Decoding maps each character of a normal token back to its byte; a character outside the map
 * (hostile vocabularies only) is copied as it is.
 */
#include "model/tokenizer_bpe.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "model/unicode.h"
#include "util/file.h"
#include "util/heap.h"

enum { PRE_QWEN2, PRE_SMOLLM, PRE_COUNT };
static const char *const k_pre_names[PRE_COUNT] = {"qwen2", "smollm"};
#define PRE_SUPPORTED "qwen2, smollm"

#define N_MAPPED_CP 0x144 /* the byte map's code points are all below U+0144 */
#define MERGE_EMPTY UINT64_MAX

typedef struct bpe_merge {
    uint64_t key; /* (left id << 32) | right id; MERGE_EMPTY: a free slot */
    int32_t rank;
    int32_t merged;
} bpe_merge;

#define BPE_MAGIC 0x42504531u /* "BPE1": tells the hooks that family data is this family's */

typedef struct bpe_data {
    uint32_t magic;
    int pre;
    int32_t byte_tok[256];
    int32_t byte_fb[256][2];      /* byte_tok -1: tokens of the character's UTF-8 bytes, or -1 */
    int16_t cp_byte[N_MAPPED_CP]; /* -1: not a mapped code point */
    bpe_merge *tab;
    uint64_t mask;
} bpe_data;

static inline uint64_t merge_hash(uint64_t key) {
    key *= 0x9E3779B97F4A7C15ull;
    return key ^ (key >> 29);
}

/* The slot of (l, r), or -1; *probes counts the slots visited. */
static inline const bpe_merge *merge_find(const bpe_data *bd, int32_t l, int32_t r,
                                          uint64_t *probes) {
    uint64_t key = (uint64_t)(uint32_t)l << 32 | (uint32_t)r;
    for (uint64_t i = merge_hash(key) & bd->mask;; i = (i + 1) & bd->mask) {
        (*probes)++;
        if (bd->tab[i].key == key) return &bd->tab[i];
        if (bd->tab[i].key == MERGE_EMPTY) return NULL;
    }
}

/* The GPT-2 character of byte b. */
static uint32_t byte_cp(int b) {
    if ((b >= 0x21 && b <= 0x7E) || (b >= 0xA1 && b <= 0xAC) || (b >= 0xAE && b <= 0xFF))
        return (uint32_t)b;
    /* the n-th unmapped byte, in byte order: 0x00-0x20, 0x7F-0xA0, 0xAD */
    int n = b <= 0x20 ? b : b <= 0xA0 ? 0x21 + (b - 0x7F) : 0x21 + 0x22;
    return 0x100u + (uint32_t)n;
}

/* ---- construction ------------------------------------------------------------------------ */

static void bpe_destroy(void *data) {
    bpe_data *bd = data;
    if (!bd) return;
    free(bd->tab);
    free(bd);
}

static rf_status merge_error(const char *name, uint64_t i, rf_str m, const char *what,
                             const char *part, size_t part_len, rf_error *err) {
    char shown[96], ps[96];
    rf_printable(m.ptr, (size_t)m.len, shown, sizeof shown);
    if (!part)
        return rf_error_set(err, RF_ERR_MODEL, "%s: key 'tokenizer.ggml.merges'[%llu] = '%s' %s",
                            name, (unsigned long long)i, shown, what);
    return rf_error_set(
        err, RF_ERR_MODEL, "%s: key 'tokenizer.ggml.merges'[%llu] = '%s': %s'%s' is not a token",
        name, (unsigned long long)i, shown, what, rf_printable(part, part_len, ps, sizeof ps));
}

static rf_status bpe_init(const rf_tokenizer *t, const rf_tokenizer_desc *d, void **data,
                          rf_error *err) {
    const char *name = d->name ? d->name : "tokenizer";
    rf_status st = RF_OK;
    char *cat = NULL;
    bpe_data *bd = NULL;

    int pre = -1;
    if (!d->pre.ptr)
        return rf_error_set(err, RF_ERR_UNSUPPORTED,
                            "%s: missing metadata key 'tokenizer.ggml.pre' (the byte-level BPE "
                            "pre-tokenizer; supported: " PRE_SUPPORTED ")",
                            name);
    for (int i = 0; i < PRE_COUNT; i++)
        if (d->pre.len == strlen(k_pre_names[i]) &&
            memcmp(d->pre.ptr, k_pre_names[i], (size_t)d->pre.len) == 0)
            pre = i;
    if (pre < 0) {
        char shown[80];
        return rf_error_set(err, RF_ERR_UNSUPPORTED,
                            "%s: key 'tokenizer.ggml.pre': unsupported pre-tokenizer '%s' "
                            "(supported: " PRE_SUPPORTED ")",
                            name,
                            rf_printable(d->pre.ptr, (size_t)d->pre.len, shown, sizeof shown));
    }
    if (!d->merges)
        return rf_error_set(err, RF_ERR_MODEL,
                            "%s: missing metadata key 'tokenizer.ggml.merges' (needed by "
                            "tokenizer model 'gpt2')",
                            name);
    if (d->n_merges > (uint64_t)INT32_MAX)
        return rf_error_set(err, RF_ERR_MODEL, "%s: key 'tokenizer.ggml.merges' has %llu entries",
                            name, (unsigned long long)d->n_merges);

    bd = calloc(1, sizeof *bd);
    if (!bd) goto nomem;
    bd->magic = BPE_MAGIC;
    bd->pre = pre;
    for (int b = 0; b < 256; b++) {
        uint8_t u[4];
        size_t n = rf_utf8_encode(byte_cp(b), u);
        bd->byte_tok[b] = rf_tok_lookup(t, (const char *)u, n);
        bd->byte_fb[b][0] = bd->byte_fb[b][1] = -1;
        for (size_t k = 0; k < n && bd->byte_tok[b] < 0; k++)
            bd->byte_fb[b][k] = rf_tok_lookup(t, (const char *)u + k, 1);
    }
    for (uint32_t c = 0; c < N_MAPPED_CP; c++) bd->cp_byte[c] = -1;
    for (int b = 0; b < 256; b++) bd->cp_byte[byte_cp(b)] = (int16_t)b;

    uint64_t slots = 16;
    while (slots < 2 * d->n_merges) slots *= 2; /* load <= 1/2: ~2.5 probes for a miss */
    if (slots > SIZE_MAX / sizeof *bd->tab) goto nomem;
    bd->tab = malloc((size_t)slots * sizeof *bd->tab);
    if (!bd->tab) goto nomem;
    for (uint64_t i = 0; i < slots; i++) bd->tab[i].key = MERGE_EMPTY;
    bd->mask = slots - 1;

    size_t cat_cap = 0;
    for (uint64_t i = 0; i < d->n_merges; i++) {
        const rf_str m = d->merges[i];
        const char *p = m.ptr;
        size_t len = (size_t)m.len;
        if (len && !p) {
            st = rf_error_set(err, RF_ERR_MODEL, "%s: key 'tokenizer.ggml.merges'[%llu] is NULL",
                              name, (unsigned long long)i);
            goto fail;
        }
        /* LEFT ' ' RIGHT: the first space past the first byte (llama.cpp's split), and none
         * after it. */
        const char *sp = len > 1 ? memchr(p + 1, ' ', len - 1) : NULL;
        size_t ll = sp ? (size_t)(sp - p) : 0, rl = sp ? len - ll - 1 : 0;
        if (!sp || rl == 0 || memchr(sp + 1, ' ', rl)) {
            st = merge_error(name, i, m, "is not two tokens separated by one space", NULL, 0, err);
            goto fail;
        }
        int32_t l = rf_tok_lookup(t, p, ll), r = rf_tok_lookup(t, sp + 1, rl);
        if (l < 0 || r < 0) {
            st = l < 0 ? merge_error(name, i, m, "", p, ll, err)
                       : merge_error(name, i, m, "", sp + 1, rl, err);
            goto fail;
        }
        if (ll + rl > cat_cap) {
            free(cat);
            cat_cap = 2 * (ll + rl);
            cat = malloc(cat_cap);
            if (!cat) goto nomem;
        }
        memcpy(cat, p, ll);
        memcpy(cat + ll, sp + 1, rl);
        int32_t merged = rf_tok_lookup(t, cat, ll + rl);
        if (merged < 0) {
            st = merge_error(name, i, m, "the merged text ", cat, ll + rl, err);
            goto fail;
        }
        uint64_t key = (uint64_t)(uint32_t)l << 32 | (uint32_t)r;
        uint64_t k = merge_hash(key) & bd->mask;
        while (bd->tab[k].key != MERGE_EMPTY && bd->tab[k].key != key) k = (k + 1) & bd->mask;
        if (bd->tab[k].key == MERGE_EMPTY) /* a duplicate keeps its first rank */
            bd->tab[k] = (bpe_merge){key, (int32_t)i, merged};
    }
    free(cat);
    *data = bd;
    return RF_OK;

nomem:
    st = rf_error_set(err, RF_ERR_NOMEM, "tokenizer: out of memory (%llu merges)",
                      (unsigned long long)d->n_merges);
fail:
    free(cat);
    bpe_destroy(bd);
    return st;
}

/* ---- code points ---------------------------------------------------------------------------- */

/* A fragment as code points: cp[i] and its flags fl[i] occupy bytes [off[i], off[i + 1]) of the
 * re-encoded text nb. */
typedef struct bpe_cps {
    uint32_t *cp;
    uint32_t *off;
    uint16_t *fl;
    uint8_t *nb;
    size_t n;
} bpe_cps;

static rf_status to_cps(rf_tok_scratch *s, const uint8_t *text, size_t len, bpe_cps *c,
                        rf_error *err) {
    if (len > (size_t)INT32_MAX / 4)
        return rf_error_set(err, RF_ERR_ARG, "tokenizer: a text fragment of %zu bytes is too long",
                            len);
    uint8_t *mem = rf_tok_scratch_get(s, 0, 10 * len + 4);
    c->nb = rf_tok_scratch_get(s, 1, 3 * len + 1); /* U+FFFD for a byte: 3 bytes for 1 */
    if (!mem || !c->nb)
        return rf_error_set(err, RF_ERR_NOMEM, "tokenizer: out of memory (%zu-byte fragment)", len);
    c->cp = (uint32_t *)(void *)mem;
    c->off = (uint32_t *)(void *)(mem + 4 * len);
    c->fl = (uint16_t *)(void *)(mem + 8 * len + 4);
    size_t i = 0, k = 0, o = 0;
    while (i < len) {
        uint32_t cp;
        size_t used = 1, w = 1;
        c->off[k] = (uint32_t)o;
        if (text[i] < 0x80) {
            cp = text[i];
            c->nb[o] = text[i];
        } else {
            cp = rf_utf8_decode(text + i, len - i, &used);
            w = rf_utf8_encode(cp, c->nb + o);
            if (w == 0) { /* past U+10FFFF: the original bytes */
                memcpy(c->nb + o, text + i, used);
                w = used;
            }
        }
        c->cp[k] = cp;
        c->fl[k] = (uint16_t)rf_unicode_flags(cp);
        o += w;
        i += used;
        k++;
    }
    c->off[k] = (uint32_t)o;
    c->n = k;
    return RF_OK;
}

/* ---- pre-tokenizers ---------------------------------------------------------------------- */

/* Where the scanners send each word: code points [a, b). */
typedef struct bpe_ctx bpe_ctx;
typedef rf_status (*word_fn)(bpe_ctx *x, size_t a, size_t b);

struct bpe_ctx {
    const bpe_cps *c;
    word_fn word;
    /* encoding */
    const rf_tokenizer *t;
    const bpe_data *bd;
    rf_tok_scratch *s;
    rf_tok_out *out;
    rf_bpe_work *work;
    rf_error *err;
    /* splitting (rf_bpe_split) */
    size_t *ends, n_ends, cap_ends;
};

#define OOR 0xFFFFFFFFu /* "no code point": past the end of the segment */
enum { F_L = RF_UCP_LETTER, F_N = RF_UCP_NUMBER, F_W = RF_UCP_WHITESPACE };

static inline uint32_t fl_at(const bpe_cps *c, size_t i, size_t end) {
    return i < end ? c->fl[i] : 0;
}
static inline uint32_t cp_at(const bpe_cps *c, size_t i, size_t end) {
    return i < end ? c->cp[i] : OOR;
}
static inline bool is_rn(uint32_t cp) {
    return cp == '\r' || cp == '\n';
}

/* The contraction at pos ('s 't 'm 'd: 2, 're 've 'll: 3), or 0. fold: compare lowercased. */
static inline size_t contraction(const bpe_cps *c, size_t pos, size_t end, bool fold) {
    if (c->cp[pos] != '\'' || pos + 1 >= end) return 0;
    uint32_t a = c->cp[pos + 1], b = cp_at(c, pos + 2, end);
    if (fold) {
        a = rf_unicode_lower_ascii(a);
        b = b == OOR ? OOR : rf_unicode_lower_ascii(b);
    }
    if (a == 's' || a == 't' || a == 'm' || a == 'd') return 2;
    if ((a == 'r' && b == 'e') || (a == 'v' && b == 'e') || (a == 'l' && b == 'l')) return 3;
    return 0;
}

/* A whitespace run at pos: its length *n, and the end of its last \r or \n (0: none). */
static inline size_t ws_run(const bpe_cps *c, size_t pos, size_t end, size_t *last_rn) {
    size_t n = 0;
    *last_rn = 0;
    while (fl_at(c, pos + n, end) & F_W) {
        if (is_rn(c->cp[pos + n])) *last_rn = pos + n + 1;
        n++;
    }
    return n;
}

/* How far '\s+(?!\S)|\s+' goes over a whitespace run of n at pos: a run followed by more text
 * gives its last character to the next word (when it has more than one); a run that ends the
 * segment is one word. No whitespace: one code point (no alternative matched). */
static inline size_t ws_step(size_t n, size_t pos, size_t end) {
    if (n > 1 && pos + n < end) return n - 1;
    return n ? n : 1;
}

/* GPT-2's split of code points [ini, end). */
static rf_status split_gpt2(bpe_ctx *x, size_t ini, size_t end) {
    const bpe_cps *c = x->c;
    for (size_t pos = ini; pos < end;) {
        const size_t start = pos;
        const uint32_t ch = c->cp[pos], f = c->fl[pos];
        size_t k = contraction(c, pos, end, false);
        if (k) {
            pos += k;
        } else {
            const uint32_t f2 = ch == ' ' ? fl_at(c, pos + 1, end) : f;
            if (f2 & (F_L | F_N)) { /* ' ?\p{L}+' and ' ?\p{N}+' */
                const uint32_t cls = f2 & (F_L | F_N);
                pos += ch == ' ';
                while (fl_at(c, pos, end) & cls) pos++;
            } else if (f2 && !(f2 & F_W)) { /* ' ?[^\s\p{L}\p{N}]+' */
                pos += ch == ' ';
                for (uint32_t g; (g = fl_at(c, pos, end)) && !(g & (F_W | F_L | F_N));) pos++;
            } else { /* '\s+(?!\S)', '\s+' */
                size_t last_rn, n = ws_run(c, pos, end, &last_rn);
                pos += ws_step(n, pos, end);
            }
        }
        rf_status st = x->word(x, start, pos);
        if (st) return st;
    }
    return RF_OK;
}

/* Qwen2's split of code points [ini, end). */
static rf_status split_qwen2(bpe_ctx *x, size_t ini, size_t end) {
    const bpe_cps *c = x->c;
    for (size_t pos = ini; pos < end;) {
        const size_t start = pos;
        const uint32_t ch = c->cp[pos], f = c->fl[pos];
        size_t k = contraction(c, pos, end, true);
        if (k) {
            pos += k;
        } else if (!is_rn(ch) && !(f & F_N) &&
                   ((f & F_L) || (fl_at(c, pos + 1, end) & F_L))) { /* [^\r\n\p{L}\p{N}]?\p{L}+ */
            pos++;
            while (fl_at(c, pos, end) & F_L) pos++;
        } else if (f & F_N) { /* \p{N} */
            pos++;
        } else {
            const uint32_t f2 = ch == ' ' ? fl_at(c, pos + 1, end) : f;
            if (f && !(f2 & (F_W | F_L | F_N))) { /* ' ?[^\s\p{L}\p{N}]+[\r\n]*' */
                pos += ch == ' ';
                for (uint32_t g; (g = fl_at(c, pos, end)) && !(g & (F_W | F_L | F_N));) pos++;
                while (is_rn(cp_at(c, pos, end))) pos++;
            } else { /* '\s*[\r\n]+', '\s+(?!\S)', '\s+' */
                size_t last_rn, n = ws_run(c, pos, end, &last_rn);
                if (last_rn)
                    pos = last_rn;
                else
                    pos += ws_step(n, pos, end);
            }
        }
        rf_status st = x->word(x, start, pos);
        if (st) return st;
    }
    return RF_OK;
}

/* SmolLM's split: every \p{N} code point is a word of its own; GPT-2's split in between. */
static rf_status split_smollm(bpe_ctx *x, size_t ini, size_t end) {
    size_t seg = ini;
    rf_status st = RF_OK;
    for (size_t i = ini; i < end && !st; i++) {
        if (!(x->c->fl[i] & F_N)) continue;
        if (i > seg) st = split_gpt2(x, seg, i);
        if (!st) st = x->word(x, i, i + 1);
        seg = i + 1;
    }
    if (!st && end > seg) st = split_gpt2(x, seg, end);
    return st;
}

static rf_status split(bpe_ctx *x, int pre) {
    return pre == PRE_QWEN2 ? split_qwen2(x, 0, x->c->n) : split_smollm(x, 0, x->c->n);
}

/* ---- merging ----------------------------------------------------------------------------- */

typedef struct bpe_sym {
    int32_t id; /* -1: a byte whose character is no token */
    int32_t prev, next;
    int32_t n; /* bytes; 0 once merged into its left neighbour */
} bpe_sym;

typedef struct bpe_pair {
    int32_t rank, left, right, merged;
    int32_t size; /* bytes of left + right when pushed */
} bpe_pair;

static inline bool pair_before(const bpe_pair *a, const bpe_pair *b) {
    return a->rank < b->rank || (a->rank == b->rank && a->left < b->left);
}

RF_HEAP_DEFINE(bpe, bpe_pair, pair_before)

static void try_pair(bpe_ctx *x, const bpe_sym *sym, bpe_heap *h, int32_t l, int32_t r) {
    if (l < 0 || r < 0 || sym[l].id < 0 || sym[r].id < 0) return;
    x->work->lookups++;
    const bpe_merge *m = merge_find(x->bd, sym[l].id, sym[r].id, &x->work->probes);
    if (!m) return;
    bpe_push(h, (bpe_pair){m->rank, l, r, m->merged, sym[l].n + sym[r].n});
    x->work->pushes++;
    if ((uint64_t)h->n > x->work->max_heap) x->work->max_heap = (uint64_t)h->n;
}

/* A byte whose character is no token: llama.cpp's fallback (see step 4 above). */
static void push_fallback(bpe_ctx *x, uint8_t b) {
    for (int k = 0; k < 2; k++)
        if (x->bd->byte_fb[b][k] >= 0) rf_tok_out_push(x->out, x->bd->byte_fb[b][k]);
}

/* Merges the bytes of code points [a, b) and emits the tokens. */
static rf_status merge_word(bpe_ctx *x, size_t a, size_t b) {
    const uint8_t *w = x->c->nb + x->c->off[a];
    const int32_t n = (int32_t)(x->c->off[b] - x->c->off[a]);
    x->work->words++;
    x->work->bytes += (uint64_t)n;
    if (n == 1) {
        int32_t id = x->bd->byte_tok[w[0]];
        if (id >= 0)
            rf_tok_out_push(x->out, id);
        else
            push_fallback(x, w[0]);
        return RF_OK;
    }
    bpe_sym *sym = rf_tok_scratch_get(x->s, 2, (size_t)n * sizeof *sym);
    bpe_heap h = {rf_tok_scratch_get(x->s, 3, 2 * (size_t)n * sizeof *h.v), 0};
    if (!sym || !h.v)
        return rf_error_set(x->err, RF_ERR_NOMEM, "tokenizer: out of memory (%d-byte word)", n);
    for (int32_t i = 0; i < n; i++)
        sym[i] = (bpe_sym){x->bd->byte_tok[w[i]], i - 1, i + 1 < n ? i + 1 : -1, 1};
    for (int32_t i = 1; i < n; i++) try_pair(x, sym, &h, i - 1, i);
    while (h.n > 0) {
        bpe_pair p = bpe_pop(&h);
        x->work->pops++;
        bpe_sym *l = &sym[p.left], *r = &sym[p.right];
        if (l->n == 0 || r->n == 0 || l->n + r->n != p.size) continue; /* stale */
        x->work->merges++;
        l->id = p.merged;
        l->n += r->n;
        r->n = 0;
        l->next = r->next;
        if (r->next >= 0) sym[r->next].prev = p.left;
        try_pair(x, sym, &h, l->prev, p.left);
        try_pair(x, sym, &h, p.left, l->next);
    }
    for (int32_t i = 0; i != -1; i = sym[i].next) {
        if (sym[i].id >= 0)
            rf_tok_out_push(x->out, sym[i].id);
        else
            push_fallback(x, w[i]); /* an unmerged byte: sym[i] is still byte i */
    }
    return RF_OK;
}

static rf_status encode(const rf_tokenizer *t, rf_tok_scratch *s, const char *text, size_t len,
                        rf_tok_out *out, rf_bpe_work *work, rf_error *err) {
    if (len == 0) return RF_OK;
    bpe_cps c;
    rf_status st = to_cps(s, (const uint8_t *)text, len, &c, err);
    if (st) return st;
    const bpe_data *bd = rf_tok_family_data(t);
    bpe_ctx x = {.c = &c,
                 .word = merge_word,
                 .t = t,
                 .bd = bd,
                 .s = s,
                 .out = out,
                 .work = work,
                 .err = err};
    return split(&x, bd->pre);
}

static rf_status bpe_encode_fragment(const rf_tokenizer *t, rf_tok_scratch *s, const char *text,
                                     size_t len, bool prev_special, rf_tok_out *out,
                                     rf_error *err) {
    (void)prev_special;
    rf_bpe_work work = {0};
    return encode(t, s, text, len, out, &work, err);
}

/* Normal tokens: each character of the text back to its byte. */
static int32_t bpe_normal_piece(const rf_tokenizer *t, int32_t id, char *buf, int32_t cap) {
    const bpe_data *bd = rf_tok_family_data(t);
    uint32_t n;
    const uint8_t *s = (const uint8_t *)rf_tok_text(t, id, &n);
    int32_t w = 0;
    for (uint32_t i = 0; i < n;) {
        size_t used;
        uint32_t cp = rf_utf8_decode(s + i, n - i, &used);
        if (cp < N_MAPPED_CP && bd->cp_byte[cp] >= 0) {
            if (w < cap && buf) buf[w] = (char)bd->cp_byte[cp];
            w++;
        } else {
            for (size_t k = 0; k < used; k++, w++)
                if (w < cap && buf) buf[w] = (char)s[i + k];
        }
        i += (uint32_t)used;
    }
    return w;
}

const rf_tokenizer_vtable rf_tokenizer_bpe_vtable = {
    .model = "gpt2",
    .encode_fragment = bpe_encode_fragment,
    .normal_piece = bpe_normal_piece,
    .init = bpe_init,
    .destroy = bpe_destroy,
};

/* ---- test hooks (tokenizer_bpe.h) -------------------------------------------------------- */

static rf_status collect_word(bpe_ctx *x, size_t a, size_t b) {
    (void)a;
    if (x->n_ends == x->cap_ends) {
        size_t cap = x->cap_ends ? 2 * x->cap_ends : 64;
        size_t *p = realloc(x->ends, cap * sizeof *p);
        if (!p) return rf_error_set(x->err, RF_ERR_NOMEM, "tokenizer: out of memory (words)");
        x->ends = p;
        x->cap_ends = cap;
    }
    x->ends[x->n_ends++] = x->c->off[b];
    return RF_OK;
}

rf_status rf_bpe_split(const char *pre, const char *text, size_t len, char **norm, size_t *norm_len,
                       size_t **ends, size_t *n_words, rf_error *err) {
    *norm = NULL;
    *norm_len = 0;
    *ends = NULL;
    *n_words = 0;
    int p = -1;
    for (int i = 0; i < PRE_COUNT; i++)
        if (pre && strcmp(pre, k_pre_names[i]) == 0) p = i;
    if (p < 0)
        return rf_error_set(err, RF_ERR_UNSUPPORTED,
                            "unsupported pre-tokenizer '%s' (supported: " PRE_SUPPORTED ")",
                            pre ? pre : "(null)");
    if (len == 0) return RF_OK;
    if (!text) return rf_error_set(err, RF_ERR_ARG, "tokenizer: NULL text of %zu bytes", len);
    rf_tok_scratch s;
    memset(&s, 0, sizeof s);
    bpe_cps c;
    rf_bpe_work work;
    memset(&work, 0, sizeof work);
    bpe_ctx x = {.c = &c, .word = collect_word, .work = &work, .err = err};
    rf_status st = to_cps(&s, (const uint8_t *)text, len, &c, err);
    if (!st) st = split(&x, p);
    if (!st) {
        *norm = malloc(c.off[c.n]);
        if (!*norm) st = rf_error_set(err, RF_ERR_NOMEM, "tokenizer: out of memory");
    }
    if (!st) {
        memcpy(*norm, c.nb, c.off[c.n]);
        *norm_len = c.off[c.n];
        *ends = x.ends;
        *n_words = x.n_ends;
    } else {
        free(x.ends);
    }
    for (int i = 0; i < RF_TOK_SCRATCH_SLOTS; i++) free(s.buf[i]);
    return st;
}

rf_status rf_bpe_encode_counted(const rf_tokenizer *t, const char *text, size_t len,
                                rf_tok_out *out, rf_bpe_work *work, rf_error *err) {
    const bpe_data *bd = rf_tok_family_data(t);
    if (!bd || bd->magic != BPE_MAGIC)
        return rf_error_set(err, RF_ERR_ARG, "tokenizer: not a byte-level BPE vocabulary");
    if (len && !text)
        return rf_error_set(err, RF_ERR_ARG, "tokenizer: NULL text of %zu bytes", len);
    rf_tok_scratch s;
    memset(&s, 0, sizeof s);
    rf_status st = encode(t, &s, text, len, out, work, err);
    for (int i = 0; i < RF_TOK_SCRATCH_SLOTS; i++) free(s.buf[i]);
    return st;
}
