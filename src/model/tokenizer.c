/* tokenizer.c: the generic part of the tokenizer (see tokenizer.h and tokenizer_int.h).
 *
 * Built once, read-only afterwards:
 *   - the vocabulary: every token's text (one NUL-terminated pool), score, stored type and the
 *     attribute bits llama.cpp derives from it (tokenizer_int.h);
 *   - an open-addressing hash table from token text to id;
 *   - an Aho-Corasick automaton over the special tokens' texts (control, user-defined, unknown),
 *     used to split them out of the raw text before the family encoder sees it;
 *   - the end-of-generation set (an attribute bit).
 *
 * Special-token splitting follows llama.cpp's order: tokens are taken longest first, each one
 * at every leftmost non-overlapping occurrence inside text not already taken. Tokens of equal
 * length are taken together in text order; llama.cpp's order among them is that of an unstable
 * sort, which only matters when two different special tokens of the same length can overlap (none
 * do in the Gemma 3 vocabulary).
 *
 * The cost is linear in the text whatever the special tokens are (a vocabulary may hold one of
 * 200 kB): the automaton is built over the texts reversed, so one pass over the text from its end
 * gives, for every position, the longest eligible token that starts there, and its fail links
 * the shorter ones (each visited at most once, only when the longer one was blocked). Each
 * position then waits in the bucket of its current length; the lengths are taken longest first,
 * each bucket in text order, against a byte map of the taken text. A token of length L overlaps
 * taken text exactly when its first or its last byte is taken, since everything taken so far is
 * at least L long, so no check looks at more than two bytes. No token text is ever compared.
 */
#include "model/tokenizer.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "model/tokenizer_int.h"
#include "util/file.h"

/* The families. A new one adds its vtable here. */
static const rf_tokenizer_vtable *const k_families[] = {&rf_tokenizer_spm_vtable,
                                                        &rf_tokenizer_bpe_vtable};

/* Per-family defaults for keys the file leaves out (llama.cpp's). */
typedef struct family_defaults {
    const char *model;
    int64_t bos, eos, unk;
    bool add_bos, add_eos, add_space_prefix;
} family_defaults;

static const family_defaults k_defaults[] = {
    {"llama", 1, 2, 0, true, false, true},
    {"gpt2", 11, 11, -1, false, false, false},
};

struct rf_tokenizer {
    const rf_tokenizer_vtable *vt;
    int32_t n_vocab;
    char *pool;     /* all token texts, each NUL-terminated */
    size_t *off;    /* n_vocab + 1 offsets into pool */
    float *scores;  /* n_vocab */
    uint8_t *types; /* n_vocab, rf_token_type as stored */
    uint8_t *attr;  /* n_vocab, RF_TOKATTR_* */
    int32_t *hash;  /* hash_mask + 1 slots, -1 empty */
    uint64_t hash_mask;
    int32_t byte_id[256];
    rf_special_tokens special;
    int32_t eom;
    bool add_bos, add_eos, add_space_prefix;

    /* The special-token automaton over the reversed texts. Node 0 is the root, whose children
     * root_child indexes by byte; nodes are numbered breadth first, so the children of a node
     * are the n_child nodes from first on, sorted by byte. */
    struct ac_node {
        int32_t first;   /* first child */
        int32_t fail;    /* the longest proper suffix of this node's text that is a node */
        int32_t hit[2];  /* the longest suffix (itself included) that ends a token eligible
                          * without [0] / with [1] parse_special, or -1 */
        int32_t id;      /* the token whose reversed text this node spells, or -1 */
        int32_t len_idx; /* index of that token's length in special_lens */
        uint16_t n_child;
        uint8_t byte; /* the byte on the edge from the parent */
    } * ac;
    int32_t n_ac;
    int32_t root_child[256];
    uint32_t *special_lens; /* distinct special-token lengths, longest first */
    int32_t n_special_lens;
    void *family; /* the family's own tables (vt->init), freed by vt->destroy */
};

/* ---- small helpers ---------------------------------------------------------------------- */

static uint64_t hash_bytes(const char *p, size_t n) {
    uint64_t h = 0xcbf29ce484222325ull; /* FNV-1a */
    for (size_t i = 0; i < n; i++) {
        h ^= (uint8_t)p[i];
        h *= 0x100000001b3ull;
    }
    return h ^ (h >> 29);
}

static inline size_t tok_len(const rf_tokenizer *t, int32_t id) {
    return t->off[id + 1] - t->off[id] - 1;
}

void *rf_tok_scratch_get(rf_tok_scratch *s, int slot, size_t bytes) {
    if (bytes <= s->cap[slot] && s->buf[slot]) return s->buf[slot];
    size_t want = s->cap[slot] ? s->cap[slot] : 256;
    while (want < bytes) {
        if (want > SIZE_MAX / 2) {
            want = bytes;
            break;
        }
        want *= 2;
    }
    void *p = malloc(want);
    if (!p) return NULL;
    free(s->buf[slot]);
    s->buf[slot] = p;
    s->cap[slot] = want;
    return p;
}

static void scratch_free(rf_tok_scratch *s) {
    for (int i = 0; i < RF_TOK_SCRATCH_SLOTS; i++) free(s->buf[i]);
}

/* ---- accessors ------------------------------------------------------------------------- */

int32_t rf_tok_lookup(const rf_tokenizer *t, const char *text, size_t len) {
    uint64_t i = hash_bytes(text, len) & t->hash_mask;
    for (;;) {
        int32_t id = t->hash[i];
        if (id < 0) return -1;
        if (tok_len(t, id) == len && memcmp(t->pool + t->off[id], text, len) == 0) return id;
        i = (i + 1) & t->hash_mask;
    }
}

float rf_tok_score(const rf_tokenizer *t, int32_t id) {
    return t->scores[id];
}
uint32_t rf_tok_attr(const rf_tokenizer *t, int32_t id) {
    return t->attr[id];
}
int32_t rf_tok_byte_id(const rf_tokenizer *t, uint8_t byte) {
    return t->byte_id[byte];
}
bool rf_tok_add_space_prefix(const rf_tokenizer *t) {
    return t->add_space_prefix;
}
const void *rf_tok_family_data(const rf_tokenizer *t) {
    return t->family;
}

const char *rf_tok_text(const rf_tokenizer *t, int32_t id, uint32_t *len) {
    if (len) *len = (uint32_t)tok_len(t, id);
    return t->pool + t->off[id];
}

int32_t rf_tokenizer_n_vocab(const rf_tokenizer *t) {
    return t->n_vocab;
}
rf_special_tokens rf_tokenizer_special(const rf_tokenizer *t) {
    return t->special;
}

rf_token_type rf_tokenizer_token_type(const rf_tokenizer *t, int32_t id) {
    if (id < 0 || id >= t->n_vocab) return RF_TOKEN_UNDEFINED;
    return (rf_token_type)t->types[id];
}

const char *rf_tokenizer_token_text(const rf_tokenizer *t, int32_t id) {
    if (id < 0 || id >= t->n_vocab) return NULL;
    return t->pool + t->off[id];
}

bool rf_tokenizer_is_eog(const rf_tokenizer *t, int32_t id) {
    return id >= 0 && id < t->n_vocab && (t->attr[id] & RF_TOKATTR_EOG);
}

bool rf_tokenizer_add_bos(const rf_tokenizer *t) {
    return t->add_bos;
}
bool rf_tokenizer_add_eos(const rf_tokenizer *t) {
    return t->add_eos;
}

/* ---- construction ------------------------------------------------------------------------ */

rf_tokenizer_desc rf_tokenizer_desc_init(void) {
    rf_tokenizer_desc d;
    memset(&d, 0, sizeof d);
    d.bos = d.eos = d.unk = d.pad = d.eot = d.eom = RF_TOK_ID_ABSENT;
    d.add_bos = d.add_eos = d.add_space_prefix = -1;
    return d;
}

void rf_tokenizer_free(rf_tokenizer *t) {
    if (!t) return;
    if (t->vt && t->vt->destroy) t->vt->destroy(t->family);
    free(t->pool);
    free(t->off);
    free(t->scores);
    free(t->types);
    free(t->attr);
    free(t->hash);
    free(t->ac);
    free(t->special_lens);
    free(t);
}

static bool is_upper_hex(char c) {
    return (c >= '0' && c <= '9') || (c >= 'A' && c <= 'F');
}
static int hex_val(char c) {
    return c <= '9' ? c - '0' : c - 'A' + 10;
}

/* Text of a byte token, validated at load: "<0xHH>". */
static uint8_t byte_token_value(const char *s) {
    return (uint8_t)(hex_val(s[3]) * 16 + hex_val(s[4]));
}

static int32_t find_text(const rf_tokenizer *t, const char *s) {
    return rf_tok_lookup(t, s, strlen(s));
}

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

#define COUNT(a) (sizeof(a) / sizeof((a)[0]))

/* A special id out of range: shown is the value as it was stored. */
static rf_status id_range_error(const char *name, const char *key, const char *shown, uint64_t n,
                                rf_error *err) {
    return rf_error_set(err, RF_ERR_MODEL,
                        "%s: key '%s' = %s is out of range (vocabulary of %llu tokens)",
                        name ? name : "tokenizer", key, shown, (unsigned long long)n);
}

static rf_status check_id(const rf_tokenizer_desc *d, const char *key, int64_t v, int64_t dflt,
                          uint64_t n, int32_t *out, rf_error *err) {
    if (v == RF_TOK_ID_ABSENT) {
        *out = (dflt >= 0 && (uint64_t)dflt < n) ? (int32_t)dflt : -1;
        return RF_OK;
    }
    if (v < 0 || (uint64_t)v >= n) {
        char shown[24];
        snprintf(shown, sizeof shown, "%lld", (long long)v);
        return id_range_error(d->name, key, shown, n, err);
    }
    *out = (int32_t)v;
    return RF_OK;
}

static rf_status build_hash(rf_tokenizer *t, const char *name, rf_error *err) {
    uint64_t slots = 1;
    while (slots < 2 * (uint64_t)t->n_vocab) slots *= 2;
    t->hash = malloc(slots * sizeof *t->hash);
    if (!t->hash) return rf_error_set(err, RF_ERR_NOMEM, "tokenizer: out of memory (hash table)");
    memset(t->hash, 0xff, slots * sizeof *t->hash);
    t->hash_mask = slots - 1;
    for (int32_t id = 0; id < t->n_vocab; id++) {
        const char *s = t->pool + t->off[id];
        size_t n = tok_len(t, id);
        uint64_t i = hash_bytes(s, n) & t->hash_mask;
        while (t->hash[i] >= 0) {
            int32_t o = t->hash[i];
            if (tok_len(t, o) == n && memcmp(t->pool + t->off[o], s, n) == 0) {
                char shown[80];
                return rf_error_set(err, RF_ERR_MODEL,
                                    "%s: key 'tokenizer.ggml.tokens': tokens %d and %d have the "
                                    "same text '%s'",
                                    name, o, id, rf_printable(s, n, shown, sizeof shown));
            }
            i = (i + 1) & t->hash_mask;
        }
        t->hash[i] = id;
    }
    return RF_OK;
}

static bool special_attr(uint32_t a) {
    return (a & (RF_TOKATTR_CONTROL | RF_TOKATTR_USER_DEFINED | RF_TOKATTR_UNKNOWN)) != 0;
}

/* Whether a special token is split out of the text: user-defined ones always, control and
 * unknown ones only when parsing specials (llama.cpp's rule). */
static bool eligible_attr(uint32_t a, bool parse_special) {
    if (parse_special) return special_attr(a);
    return (a & RF_TOKATTR_USER_DEFINED) && !(a & (RF_TOKATTR_CONTROL | RF_TOKATTR_UNKNOWN));
}

static int cmp_u32_desc(const void *a, const void *b) {
    uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
    return (x < y) - (x > y);
}

/* The child of automaton node `node` along byte c, or -1; *work counts the probes. */
static inline int32_t ac_child(const rf_tokenizer *t, int32_t node, uint8_t c, uint64_t *work) {
    (*work)++;
    if (node == 0) return t->root_child[c];
    int32_t lo = t->ac[node].first, hi = lo + t->ac[node].n_child;
    while (lo < hi) { /* children sorted by byte */
        (*work)++;
        int32_t mid = lo + (hi - lo) / 2;
        uint8_t b = t->ac[mid].byte;
        if (b == c) return mid;
        if (b < c)
            lo = mid + 1;
        else
            hi = mid;
    }
    return -1;
}

/* A trie of the reversed special texts with sibling lists, then renumbered breadth first into
 * t->ac with sorted children, fail links and the eligible-suffix links; and the distinct
 * special lengths. The automaton takes about 50 bytes per byte of special text while it is
 * built: RF_TOK_MAX_SPECIAL_BYTES bounds what a hostile file can make it allocate. */
typedef struct trie_node {
    int32_t child, sibling, id;
    uint8_t byte;
} trie_node;

static rf_status build_trie(rf_tokenizer *t, const char *name, rf_error *err) {
    rf_status st = RF_OK;
    size_t cap = 1024, n_trie = 1, n_special = 0;
    trie_node *tr = malloc(cap * sizeof *tr);
    int32_t *queue = NULL, *parent = NULL;
    if (!tr) return rf_error_set(err, RF_ERR_NOMEM, "tokenizer: out of memory (special tokens)");
    tr[0] = (trie_node){-1, -1, -1, 0};
    for (int i = 0; i < 256; i++) t->root_child[i] = -1;

    size_t total = 0;
    for (int32_t id = 0; id < t->n_vocab; id++)
        if (special_attr(t->attr[id])) total += tok_len(t, id);
    if (total > RF_TOK_MAX_SPECIAL_BYTES) {
        st = rf_error_set(err, RF_ERR_MODEL,
                          "%s: the special tokens (control, user-defined, unknown) of "
                          "'tokenizer.ggml.tokens' hold %zu bytes of text, more than the %d MiB "
                          "roofline accepts",
                          name, total, RF_TOK_MAX_SPECIAL_BYTES >> 20);
        goto out;
    }
    for (int32_t id = 0; id < t->n_vocab; id++) {
        if (!special_attr(t->attr[id])) continue;
        const uint8_t *s = (const uint8_t *)t->pool + t->off[id];
        size_t n = tok_len(t, id);
        if (n == 0) continue;
        n_special++;
        int32_t node = 0;
        for (size_t k = n; k-- > 0;) { /* reversed */
            int32_t c = tr[node].child;
            while (c >= 0 && tr[c].byte != s[k]) c = tr[c].sibling;
            if (c < 0) {
                if (n_trie == cap) { /* at most total + 1 nodes: no overflow of int32 */
                    void *p = realloc(tr, 2 * cap * sizeof *tr);
                    if (!p) {
                        st = rf_error_set(err, RF_ERR_NOMEM,
                                          "tokenizer: out of memory (special tokens)");
                        goto out;
                    }
                    tr = p;
                    cap *= 2;
                }
                c = (int32_t)n_trie++;
                tr[c] = (trie_node){-1, tr[node].child, -1, s[k]};
                tr[node].child = c;
            }
            node = c;
        }
        tr[node].id = id; /* texts are unique (build_hash) */
    }

    /* Distinct lengths, longest first. */
    t->special_lens = malloc((n_special ? n_special : 1) * sizeof *t->special_lens);
    t->ac = malloc(n_trie * sizeof *t->ac);
    queue = malloc(n_trie * sizeof *queue);
    parent = malloc(n_trie * sizeof *parent);
    if (!t->special_lens || !t->ac || !queue || !parent) {
        st = rf_error_set(err, RF_ERR_NOMEM, "tokenizer: out of memory (special tokens)");
        goto out;
    }
    size_t k = 0;
    for (int32_t id = 0; id < t->n_vocab; id++)
        if (special_attr(t->attr[id]) && tok_len(t, id) > 0)
            t->special_lens[k++] = (uint32_t)tok_len(t, id);
    qsort(t->special_lens, k, sizeof *t->special_lens, cmp_u32_desc);
    int32_t u = 0;
    for (size_t i = 0; i < k; i++)
        if (u == 0 || t->special_lens[u - 1] != t->special_lens[i])
            t->special_lens[u++] = t->special_lens[i];
    t->n_special_lens = u;

    /* Breadth-first renumbering: queue[new] = old; a node's children land next to each other,
     * sorted by byte (insertion sort into the queue's tail). */
    size_t head = 0, tail = 1;
    queue[0] = 0;
    parent[0] = -1;
    t->n_ac = (int32_t)n_trie;
    while (head < tail) {
        int32_t i = (int32_t)head, old = queue[head++];
        struct ac_node *a = &t->ac[i];
        a->first = (int32_t)tail;
        a->n_child = 0;
        a->id = tr[old].id;
        a->byte = tr[old].byte;
        a->len_idx = -1;
        for (int32_t c = tr[old].child; c >= 0; c = tr[c].sibling) {
            size_t j = tail++;
            while (j > (size_t)a->first && tr[queue[j - 1]].byte > tr[c].byte) {
                queue[j] = queue[j - 1];
                j--;
            }
            queue[j] = c;
            a->n_child++;
        }
        for (int32_t j = a->first; j < a->first + a->n_child; j++) parent[j] = i;
        if (a->id >= 0) { /* the index of its length: binary search, longest first */
            uint32_t len = (uint32_t)tok_len(t, a->id);
            int32_t lo = 0, hi = t->n_special_lens - 1;
            while (lo < hi) {
                int32_t mid = (lo + hi) / 2;
                if (t->special_lens[mid] > len)
                    lo = mid + 1;
                else
                    hi = mid;
            }
            a->len_idx = lo;
        }
    }
    for (int32_t j = t->ac[0].first; j < t->ac[0].first + t->ac[0].n_child; j++)
        t->root_child[t->ac[j].byte] = j;

    /* Fail links and eligible-suffix links, in breadth-first order (parents first). */
    uint64_t unused = 0;
    t->ac[0].fail = 0;
    t->ac[0].hit[0] = t->ac[0].hit[1] = -1;
    for (int32_t v = 1; v < t->n_ac; v++) {
        struct ac_node *a = &t->ac[v];
        int32_t p = parent[v], f = 0;
        if (p != 0) {
            for (f = t->ac[p].fail;;) {
                int32_t g = ac_child(t, f, a->byte, &unused);
                if (g >= 0) {
                    f = g;
                    break;
                }
                if (f == 0) break;
                f = t->ac[f].fail;
            }
        }
        a->fail = f;
        for (int m = 0; m < 2; m++)
            a->hit[m] = a->id >= 0 && eligible_attr(t->attr[a->id], m == 1) ? v : t->ac[f].hit[m];
    }
out:
    free(tr);
    free(queue);
    free(parent);
    return st;
}

/* End-of-turn / end-of-generation detection, as llama.cpp's loader does it. */
static void mark_eog(rf_tokenizer *t) {
    if (t->special.eot < 0) {
        for (size_t i = 0; i < COUNT(k_eot_texts) && t->special.eot < 0; i++) {
            int32_t id = find_text(t, k_eot_texts[i]);
            if (id >= 0) t->special.eot = id;
        }
        if (t->special.eot >= 0) t->attr[t->special.eot] |= RF_TOKATTR_CONTROL;
    }
    for (size_t i = 0; i < COUNT(k_eog_texts); i++) {
        int32_t id = find_text(t, k_eog_texts[i]);
        if (id >= 0) t->attr[id] |= RF_TOKATTR_EOG | RF_TOKATTR_CONTROL;
    }
    /* These are always rendered (gpt-oss). */
    static const char *const k_user[] = {"<|channel|>", "<|message|>", "<|start|>",
                                         "<|constrain|>"};
    for (size_t i = 0; i < COUNT(k_user); i++) {
        int32_t id = find_text(t, k_user[i]);
        if (id >= 0) t->attr[id] = RF_TOKATTR_USER_DEFINED | (t->attr[id] & RF_TOKATTR_EOG);
    }
    if (t->special.eos >= 0) t->attr[t->special.eos] |= RF_TOKATTR_EOG;
    if (t->special.eot >= 0) t->attr[t->special.eot] |= RF_TOKATTR_EOG;
    if (t->eom >= 0) t->attr[t->eom] |= RF_TOKATTR_EOG;

    /* "<|end|>" is not an end of generation when "<|return|>"/"<|call|>" (or "<|calls|>" and
     * "<|flush|>") are there: it becomes user-defined. */
    int32_t ret = find_text(t, "<|return|>"), call = find_text(t, "<|call|>");
    int32_t calls = find_text(t, "<|calls|>"), flush = find_text(t, "<|flush|>");
    int32_t end = find_text(t, "<|end|>");
    bool has_call = (call >= 0 && (t->attr[call] & RF_TOKATTR_EOG)) ||
                    (calls >= 0 && (t->attr[calls] & RF_TOKATTR_EOG));
    bool has_ret = ret >= 0 && (t->attr[ret] & RF_TOKATTR_EOG);
    bool has_flush = flush >= 0 && (t->attr[flush] & RF_TOKATTR_EOG);
    if (end >= 0 && (t->attr[end] & RF_TOKATTR_EOG) && has_call && (has_ret || has_flush))
        t->attr[end] = RF_TOKATTR_USER_DEFINED;

    /* "</s>" is a normal token where "<|tool_response>" or "<|plamo:eos|>" exist. */
    int32_t s_end = find_text(t, "</s>");
    int32_t tr = find_text(t, "<|tool_response>"), pe = find_text(t, "<|plamo:eos|>");
    bool marker =
        (tr >= 0 && (t->attr[tr] & RF_TOKATTR_EOG)) || (pe >= 0 && (t->attr[pe] & RF_TOKATTR_EOG));
    if (s_end >= 0 && (t->attr[s_end] & RF_TOKATTR_EOG) && marker)
        t->attr[s_end] = RF_TOKATTR_NORMAL;
}

rf_status rf_tokenizer_from_desc(const rf_tokenizer_desc *d, rf_tokenizer **out, rf_error *err) {
    *out = NULL;
    const char *name = d->name ? d->name : "tokenizer";
    if (!d->model)
        return rf_error_set(err, RF_ERR_MODEL, "%s: missing metadata key 'tokenizer.ggml.model'",
                            name);
    const rf_tokenizer_vtable *vt = NULL;
    for (size_t i = 0; i < COUNT(k_families); i++)
        if (strcmp(k_families[i]->model, d->model) == 0) vt = k_families[i];
    if (!vt) {
        char shown[80], list[128] = "";
        for (size_t i = 0; i < COUNT(k_families); i++)
            snprintf(list + strlen(list), sizeof list - strlen(list), "%s%s", i ? ", " : "",
                     k_families[i]->model);
        return rf_error_set(err, RF_ERR_UNSUPPORTED,
                            "%s: key 'tokenizer.ggml.model': unsupported tokenizer model '%s' "
                            "(supported: %s)",
                            name, rf_printable(d->model, strlen(d->model), shown, sizeof shown),
                            list);
    }
    const family_defaults *df = NULL;
    for (size_t i = 0; i < COUNT(k_defaults); i++)
        if (strcmp(k_defaults[i].model, d->model) == 0) df = &k_defaults[i];

    uint64_t n = d->n_tokens;
    if (n == 0 || !d->tokens)
        return rf_error_set(err, RF_ERR_MODEL, "%s: key 'tokenizer.ggml.tokens' is empty", name);
    if (n > (uint64_t)INT32_MAX - 1)
        return rf_error_set(err, RF_ERR_MODEL, "%s: key 'tokenizer.ggml.tokens' has %llu tokens",
                            name, (unsigned long long)n);
    if (d->scores && d->n_scores != n)
        return rf_error_set(err, RF_ERR_MODEL,
                            "%s: key 'tokenizer.ggml.scores' has %llu entries, "
                            "'tokenizer.ggml.tokens' %llu",
                            name, (unsigned long long)d->n_scores, (unsigned long long)n);
    if (d->types && d->n_types != n)
        return rf_error_set(err, RF_ERR_MODEL,
                            "%s: key 'tokenizer.ggml.token_type' has %llu entries, "
                            "'tokenizer.ggml.tokens' %llu",
                            name, (unsigned long long)d->n_types, (unsigned long long)n);

    rf_tokenizer *t = calloc(1, sizeof *t);
    if (!t) return rf_error_set(err, RF_ERR_NOMEM, "tokenizer: out of memory");
    t->vt = vt;
    t->n_vocab = (int32_t)n;
    rf_status st = RF_OK;

    /* Texts: empty ones become "[EMPTY_<id>]" as in llama.cpp. */
    size_t pool_size = 0;
    for (uint64_t i = 0; i < n; i++) {
        uint64_t len = d->tokens[i].len;
        if (len > 0 && !d->tokens[i].ptr) {
            st = rf_error_set(err, RF_ERR_MODEL, "%s: key 'tokenizer.ggml.tokens'[%llu] is NULL",
                              name, (unsigned long long)i);
            goto fail;
        }
        if (len > UINT32_MAX) {
            st =
                rf_error_set(err, RF_ERR_MODEL, "%s: key 'tokenizer.ggml.tokens'[%llu] is too long",
                             name, (unsigned long long)i);
            goto fail;
        }
        pool_size += (len ? len : 24) + 1;
    }
    t->pool = malloc(pool_size);
    t->off = malloc((n + 1) * sizeof *t->off);
    t->scores = malloc(n * sizeof *t->scores);
    t->types = malloc(n);
    t->attr = malloc(n);
    if (!t->pool || !t->off || !t->scores || !t->types || !t->attr) {
        st = rf_error_set(err, RF_ERR_NOMEM, "tokenizer: out of memory (%llu tokens)",
                          (unsigned long long)n);
        goto fail;
    }
    size_t pos = 0;
    for (uint64_t i = 0; i < n; i++) {
        t->off[i] = pos;
        const rf_str s = d->tokens[i];
        if (s.len) {
            memcpy(t->pool + pos, s.ptr, s.len);
            pos += s.len;
        } else {
            pos += (size_t)sprintf(t->pool + pos, "[EMPTY_%llu]", (unsigned long long)i);
        }
        t->pool[pos++] = 0;
    }
    t->off[n] = pos;

    for (uint64_t i = 0; i < n; i++) {
        float sc = d->scores ? d->scores[i] : 0.0f;
        if (isnan(sc)) {
            st = rf_error_set(err, RF_ERR_MODEL, "%s: key 'tokenizer.ggml.scores'[%llu] is NaN",
                              name, (unsigned long long)i);
            goto fail;
        }
        t->scores[i] = sc;
        int32_t ty = d->types ? d->types[i] : RF_TOKEN_NORMAL;
        static const uint8_t k_attr[7] = {0,
                                          RF_TOKATTR_NORMAL,
                                          RF_TOKATTR_UNKNOWN,
                                          RF_TOKATTR_CONTROL,
                                          RF_TOKATTR_USER_DEFINED,
                                          RF_TOKATTR_UNUSED,
                                          RF_TOKATTR_BYTE};
        if (ty < 0 || ty > RF_TOKEN_BYTE) ty = RF_TOKEN_UNDEFINED; /* as llama.cpp */
        t->types[i] = (uint8_t)ty;
        t->attr[i] = k_attr[ty];
        if (ty == RF_TOKEN_BYTE) {
            const char *s = t->pool + t->off[i];
            if (tok_len(t, (int32_t)i) != 6 || memcmp(s, "<0x", 3) != 0 || !is_upper_hex(s[3]) ||
                !is_upper_hex(s[4]) || s[5] != '>') {
                char shown[24];
                st = rf_error_set(err, RF_ERR_MODEL,
                                  "%s: key 'tokenizer.ggml.tokens'[%llu] is a byte token "
                                  "(token_type 6) but its text '%s' is not <0xHH>",
                                  name, (unsigned long long)i,
                                  rf_printable(s, tok_len(t, (int32_t)i), shown, sizeof shown));
                goto fail;
            }
        }
    }

    /* Special ids and flags. */
    int64_t dbos = df ? df->bos : -1, deos = df ? df->eos : -1, dunk = df ? df->unk : -1;
    if ((st = check_id(d, "tokenizer.ggml.bos_token_id", d->bos, dbos, n, &t->special.bos, err)) ||
        (st = check_id(d, "tokenizer.ggml.eos_token_id", d->eos, deos, n, &t->special.eos, err)) ||
        (st = check_id(d, "tokenizer.ggml.unknown_token_id", d->unk, dunk, n, &t->special.unk,
                       err)) ||
        (st =
             check_id(d, "tokenizer.ggml.padding_token_id", d->pad, -1, n, &t->special.pad, err)) ||
        (st = check_id(d, "tokenizer.ggml.eot_token_id", d->eot, -1, n, &t->special.eot, err)) ||
        (st = check_id(d, "tokenizer.ggml.eom_token_id", d->eom, -1, n, &t->eom, err)))
        goto fail;
    t->add_bos = d->add_bos >= 0 ? d->add_bos != 0 : (df ? df->add_bos : false);
    t->add_eos = d->add_eos >= 0 ? d->add_eos != 0 : (df ? df->add_eos : false);
    t->add_space_prefix =
        d->add_space_prefix >= 0 ? d->add_space_prefix != 0 : (df ? df->add_space_prefix : false);
    if (t->add_bos && t->special.bos < 0) {
        st = rf_error_set(err, RF_ERR_MODEL,
                          "%s: key 'tokenizer.ggml.add_bos_token' is true but the vocabulary has "
                          "no BOS token",
                          name);
        goto fail;
    }
    if (t->add_eos && t->special.eos < 0) {
        st = rf_error_set(err, RF_ERR_MODEL,
                          "%s: key 'tokenizer.ggml.add_eos_token' is true but the vocabulary has "
                          "no EOS token",
                          name);
        goto fail;
    }

    if ((st = build_hash(t, name, err))) goto fail;
    mark_eog(t);
    t->special.start_of_turn = find_text(t, "<start_of_turn>");
    if ((st = build_trie(t, name, err))) goto fail;

    /* Byte fallback: "<0xHH>", else the single byte as a token (llama.cpp's order). */
    for (int b = 0; b < 256; b++) {
        char buf[7];
        snprintf(buf, sizeof buf, "<0x%02X>", b);
        int32_t id = rf_tok_lookup(t, buf, 6);
        if (id < 0) {
            char c = (char)b;
            id = rf_tok_lookup(t, &c, 1);
        }
        t->byte_id[b] = id;
    }
    if (vt->init && (st = vt->init(t, d, &t->family, err))) goto fail;
    *out = t;
    return RF_OK;

fail:
    rf_tokenizer_free(t);
    return st;
}

/* Reads a special id key (any integer type) into *out, checked against the n_tokens of the
 * vocabulary here, where the value is known as stored (a u64 past INT64_MAX, an i64 equal to
 * RF_TOK_ID_ABSENT); absent -> RF_TOK_ID_ABSENT. */
static rf_status read_id(const rf_gguf *g, const char *key, uint64_t n_tokens, int64_t *out,
                         rf_error *err) {
    *out = RF_TOK_ID_ABSENT;
    const rf_gguf_kv *kv = rf_gguf_find_kv(g, key);
    if (!kv) return RF_OK;
    char shown[24];
    switch (kv->type) {
    case RF_GGUF_U8:
    case RF_GGUF_U16:
    case RF_GGUF_U32:
    case RF_GGUF_U64:
        if (kv->v.u >= n_tokens) {
            snprintf(shown, sizeof shown, "%llu", (unsigned long long)kv->v.u);
            return id_range_error(rf_gguf_name(g), key, shown, n_tokens, err);
        }
        *out = (int64_t)kv->v.u;
        return RF_OK;
    case RF_GGUF_I8:
    case RF_GGUF_I16:
    case RF_GGUF_I32:
    case RF_GGUF_I64:
        if (kv->v.i < 0 || (uint64_t)kv->v.i >= n_tokens) {
            snprintf(shown, sizeof shown, "%lld", (long long)kv->v.i);
            return id_range_error(rf_gguf_name(g), key, shown, n_tokens, err);
        }
        *out = kv->v.i;
        return RF_OK;
    default:
        return rf_error_set(err, RF_ERR_MODEL, "%s: key '%s' must be an integer, found %s",
                            rf_gguf_name(g), key, rf_gguf_type_name(kv->type));
    }
}

static rf_status read_flag(const rf_gguf *g, const char *key, int *out, rf_error *err) {
    *out = -1;
    if (!rf_gguf_find_kv(g, key)) return RF_OK;
    bool v = false;
    rf_status st = rf_gguf_get_bool(g, key, true, &v, err);
    if (st) return st;
    *out = v ? 1 : 0;
    return RF_OK;
}

rf_status rf_tokenizer_from_gguf(const rf_gguf *g, rf_tokenizer **out, rf_error *err) {
    *out = NULL;
    rf_tokenizer_desc d = rf_tokenizer_desc_init();
    d.name = rf_gguf_name(g);
    rf_str model;
    rf_status st = rf_gguf_get_str(g, "tokenizer.ggml.model", true, &model, err);
    if (st) return st;
    char model_buf[65];
    size_t ml = model.len < 64 ? (size_t)model.len : 64;
    memcpy(model_buf, model.ptr, ml);
    model_buf[ml] = 0;
    if (model.len > 64 || memchr(model_buf, 0, ml)) model_buf[0] = '?';
    d.model = model_buf;

    const rf_gguf_kv *tokens = NULL, *scores = NULL, *types = NULL;
    if ((st = rf_gguf_get_arr(g, "tokenizer.ggml.tokens", RF_GGUF_STRING, true, &tokens, err)))
        return st;
    d.n_tokens = tokens->v.arr.n;
    d.tokens = tokens->v.arr.strs;

    /* Scores: f32 (or integers, which llama.cpp also accepts); optional. */
    scores = rf_gguf_find_kv(g, "tokenizer.ggml.scores");
    if (scores) {
        rf_gguf_type et = scores->type == RF_GGUF_ARRAY ? scores->v.arr.type : RF_GGUF_TYPE_COUNT;
        if (et != RF_GGUF_F32 && et != RF_GGUF_I32)
            return rf_error_set(err, RF_ERR_MODEL,
                                "%s: key 'tokenizer.ggml.scores' must be an array of f32", d.name);
    }
    if ((st = rf_gguf_get_arr(g, "tokenizer.ggml.token_type", RF_GGUF_I32, false, &types, err)))
        return st;
    /* Byte-level BPE: the pre-tokenizer and the merges (the family checks what it needs). */
    const rf_gguf_kv *merges = NULL;
    if ((st = rf_gguf_get_str(g, "tokenizer.ggml.pre", false, &d.pre, err)) ||
        (st = rf_gguf_get_arr(g, "tokenizer.ggml.merges", RF_GGUF_STRING, false, &merges, err)))
        return st;
    if (merges) {
        d.n_merges = merges->v.arr.n;
        d.merges = merges->v.arr.strs;
    }

    float *sc = NULL;
    int32_t *ty = NULL;
    if (scores) {
        d.n_scores = scores->v.arr.n;
        sc = malloc((d.n_scores ? d.n_scores : 1) * sizeof *sc);
        if (!sc) return rf_error_set(err, RF_ERR_NOMEM, "tokenizer: out of memory");
        for (uint64_t i = 0; i < d.n_scores; i++) sc[i] = (float)rf_gguf_arr_float(scores, i);
        d.scores = sc;
    }
    if (types) {
        d.n_types = types->v.arr.n;
        ty = malloc((d.n_types ? d.n_types : 1) * sizeof *ty);
        if (!ty) {
            free(sc);
            return rf_error_set(err, RF_ERR_NOMEM, "tokenizer: out of memory");
        }
        for (uint64_t i = 0; i < d.n_types; i++) {
            int64_t v = rf_gguf_arr_int(types, i);
            ty[i] = v < INT32_MIN || v > INT32_MAX ? -1 : (int32_t)v;
        }
        d.types = ty;
    }

    if ((st = read_id(g, "tokenizer.ggml.bos_token_id", d.n_tokens, &d.bos, err)) ||
        (st = read_id(g, "tokenizer.ggml.eos_token_id", d.n_tokens, &d.eos, err)) ||
        (st = read_id(g, "tokenizer.ggml.unknown_token_id", d.n_tokens, &d.unk, err)) ||
        (st = read_id(g, "tokenizer.ggml.padding_token_id", d.n_tokens, &d.pad, err)) ||
        (st = read_id(g, "tokenizer.ggml.eot_token_id", d.n_tokens, &d.eot, err)) ||
        (st = read_id(g, "tokenizer.ggml.eom_token_id", d.n_tokens, &d.eom, err)) ||
        (st = read_flag(g, "tokenizer.ggml.add_bos_token", &d.add_bos, err)) ||
        (st = read_flag(g, "tokenizer.ggml.add_eos_token", &d.add_eos, err)) ||
        (st = read_flag(g, "tokenizer.ggml.add_space_prefix", &d.add_space_prefix, err)))
        goto done;
    st = rf_tokenizer_from_desc(&d, out, err);
done:
    free(sc);
    free(ty);
    return st;
}

/* ---- encoding ---------------------------------------------------------------------------- */

static int cmp_i32(const void *a, const void *b) {
    int32_t x = *(const int32_t *)a, y = *(const int32_t *)b;
    return (x > y) - (x < y);
}

/* Finds the special tokens to split out of the text (see the file comment). On success *regs
 * holds *n_regs non-overlapping regions sorted by start (caller frees); *work the steps taken. */
static rf_status find_specials(const rf_tokenizer *t, const uint8_t *s, size_t len,
                               bool parse_special, rf_tok_region **regs, size_t *n_regs,
                               uint64_t *work, rf_error *err) {
    *regs = NULL;
    *n_regs = 0;
    *work = 0;
    if (len > (size_t)INT32_MAX)
        return rf_error_set(err, RF_ERR_ARG, "tokenizer: a text of %zu bytes is too long", len);
    const int mode = parse_special ? 1 : 0;
    const int32_t D = t->n_special_lens, n = (int32_t)len;
    const struct ac_node *ac = t->ac;
    uint64_t w = 0;
    rf_status st = RF_OK;
    int32_t *cur = malloc(len * sizeof *cur); /* per position: its current token node */
    uint8_t *taken = calloc(len, 1);          /* 1: taken, 2: a region starts here */
    size_t *bstart = calloc((size_t)D + 1, sizeof *bstart);   /* bucket bounds in order[] */
    int32_t *mhead = malloc(((size_t)D + 1) * sizeof *mhead); /* moved positions, per bucket */
    int32_t *order = NULL, *next = NULL, *tmp = NULL;
    if (!cur || !taken || !bstart || !mhead) goto nomem;

    /* 1. From the end: the automaton state after s[q] spells the longest reversed prefix of
     * s[q..] that is in it; its hit link is the longest eligible token starting at q. */
    int32_t node = 0;
    size_t n_cand = 0;
    for (int32_t q = n - 1; q >= 0; q--) {
        int32_t nx;
        for (;;) {
            nx = ac_child(t, node, s[q], &w);
            if (nx >= 0 || node == 0) break;
            node = ac[node].fail;
            w++;
        }
        node = nx >= 0 ? nx : 0;
        int32_t h = ac[node].hit[mode];
        cur[q] = h;
        if (h >= 0) {
            bstart[ac[h].len_idx + 1]++;
            n_cand++;
        }
    }
    if (!n_cand) goto done;

    /* 2. Positions into buckets by the length of their token, in text order (counting sort). */
    order = malloc(n_cand * sizeof *order);
    if (!order) goto nomem;
    for (int32_t i = 0; i < D; i++) bstart[i + 1] += bstart[i];
    {
        size_t *fill = bstart; /* bstart[i] walks to bstart[i + 1]; restored below */
        for (int32_t p = 0; p < n; p++)
            if (cur[p] >= 0) order[fill[ac[cur[p]].len_idx]++] = p;
        for (int32_t i = D; i > 0; i--) bstart[i] = bstart[i - 1];
        bstart[0] = 0;
        w += 2 * n_cand;
    }
    for (int32_t i = 0; i <= D; i++) mhead[i] = -1;

    /* 3. Lengths longest first; each bucket in text order, its initial positions merged with
     * those moved into it (blocked at a longer length; sorted first). */
    for (int32_t i = 0; i < D; i++) {
        const size_t L = t->special_lens[i];
        size_t m = 0;
        for (int32_t p = mhead[i]; p >= 0; p = next[p]) tmp[m++] = p;
        if (m > 1) qsort(tmp, m, sizeof *tmp, cmp_i32);
        w += m;
        size_t a = bstart[i], ae = bstart[i + 1], b = 0;
        while (a < ae || b < m) {
            int32_t p = (b == m || (a < ae && order[a] < tmp[b])) ? order[a++] : tmp[b++];
            w++;
            if (taken[p]) continue; /* inside a token taken before: none can start here */
            if (taken[p + L - 1]) { /* runs into one: try the next shorter token from p */
                int32_t nx = ac[ac[cur[p]].fail].hit[mode];
                if (nx < 0) continue;
                if (!next) { /* the first move: the list links, and room to sort a bucket */
                    next = malloc(len * sizeof *next);
                    tmp = malloc(len * sizeof *tmp);
                    if (!next || !tmp) goto nomem;
                }
                cur[p] = nx;
                int32_t j = ac[nx].len_idx;
                next[p] = mhead[j];
                mhead[j] = p;
                w++;
                continue;
            }
            memset(taken + p, 1, L);
            taken[p] = 2;
            w += L;
        }
    }

    /* 4. The regions, in text order. */
    size_t nr = 0;
    for (int32_t p = 0; p < n; p++) nr += taken[p] == 2;
    w += (uint64_t)len;
    if (nr) {
        rf_tok_region *r = malloc(nr * sizeof *r);
        if (!r) goto nomem;
        size_t k = 0;
        for (int32_t p = 0; p < n; p++)
            if (taken[p] == 2) {
                int32_t id = ac[cur[p]].id;
                r[k++] = (rf_tok_region){(size_t)p, tok_len(t, id), id};
            }
        *regs = r;
        *n_regs = nr;
    }
    goto done;
nomem:
    st = rf_error_set(err, RF_ERR_NOMEM, "tokenizer: out of memory (special tokens, %zu bytes)",
                      len);
done:
    free(cur);
    free(taken);
    free(bstart);
    free(mhead);
    free(order);
    free(next);
    free(tmp);
    *work = w;
    return st;
}

rf_status rf_tok_split_specials(const rf_tokenizer *t, const char *text, size_t len,
                                bool parse_special, rf_tok_region **regs, size_t *n_regs,
                                uint64_t *work, rf_error *err) {
    uint64_t w = 0;
    *regs = NULL;
    *n_regs = 0;
    if (work) *work = 0;
    if (len == 0) return RF_OK;
    if (!text) return rf_error_set(err, RF_ERR_ARG, "tokenizer: NULL text of %zu bytes", len);
    rf_status st =
        find_specials(t, (const uint8_t *)text, len, parse_special, regs, n_regs, &w, err);
    if (work) *work = w;
    return st;
}

int64_t rf_tokenizer_encode(const rf_tokenizer *t, const char *text, size_t len, bool add_special,
                            bool parse_special, int32_t *out, int64_t cap, rf_error *err) {
    rf_tok_out o = {out, out ? (cap > 0 ? cap : 0) : 0, 0};
    if (add_special && t->add_bos) rf_tok_out_push(&o, t->special.bos);
    if (len > 0 && !text) {
        rf_error_set(err, RF_ERR_ARG, "tokenizer: NULL text of %zu bytes", len);
        return -1;
    }

    rf_tok_region *regs = NULL;
    size_t n_regs = 0;
    uint64_t work = 0;
    rf_status st = RF_OK;
    if (len > 0)
        st =
            find_specials(t, (const uint8_t *)text, len, parse_special, &regs, &n_regs, &work, err);
    if (st) return -1;

    rf_tok_scratch scratch;
    memset(&scratch, 0, sizeof scratch);
    size_t pos = 0;
    bool prev_special = true;
    for (size_t i = 0; i <= n_regs && !st; i++) {
        size_t end = i < n_regs ? regs[i].start : len;
        if (end > pos) {
            st = t->vt->encode_fragment(t, &scratch, text + pos, end - pos, prev_special, &o, err);
            prev_special = false;
        }
        if (i < n_regs) {
            rf_tok_out_push(&o, regs[i].id);
            prev_special = true;
            pos = regs[i].start + regs[i].len;
        }
    }
    scratch_free(&scratch);
    free(regs);
    if (st) return -1;
    if (add_special && t->add_eos) rf_tok_out_push(&o, t->special.eos);
    return o.n;
}

int64_t rf_tokenizer_encode_alloc(const rf_tokenizer *t, const char *text, size_t len,
                                  bool add_special, bool parse_special, int32_t **out,
                                  rf_error *err) {
    *out = NULL;
    if (len > (size_t)INT32_MAX) {
        rf_error_set(err, RF_ERR_ARG, "text of %zu bytes: too long to tokenize", len);
        return -1;
    }
    int64_t cap = (int64_t)len + 8; /* a byte per id and BOS/EOS: short only when a byte becomes
                                       several ids */
    int32_t *ids = malloc((size_t)cap * sizeof *ids);
    if (!ids) goto oom;
    int64_t n = rf_tokenizer_encode(t, text, len, add_special, parse_special, ids, cap, err);
    if (n > cap) {
        int32_t *more = realloc(ids, (size_t)n * sizeof *ids);
        if (!more) goto oom;
        ids = more;
        cap = n;
        n = rf_tokenizer_encode(t, text, len, add_special, parse_special, ids, cap, err);
        if (n > cap) {
            free(ids);
            rf_error_set(err, RF_ERR_INTERNAL, "tokenizing %zu bytes: the count changed", len);
            return -1;
        }
    }
    if (n < 0) {
        free(ids);
        return -1;
    }
    *out = ids;
    return n;
oom:
    free(ids);
    rf_error_set(err, RF_ERR_NOMEM, "out of memory tokenizing %zu bytes", len);
    return -1;
}

/* ---- decoding ---------------------------------------------------------------------------- */

static int32_t copy_out(const char *src, size_t n, char *buf, int32_t cap) {
    if (cap > 0 && buf) memcpy(buf, src, n < (size_t)cap ? n : (size_t)cap);
    return (int32_t)n;
}

int32_t rf_tokenizer_piece(const rf_tokenizer *t, int32_t id, bool special, char *buf,
                           int32_t cap) {
    if (id < 0 || id >= t->n_vocab) return -1;
    uint32_t a = t->attr[id];
    if (a & (RF_TOKATTR_CONTROL | RF_TOKATTR_UNKNOWN)) {
        if (!special) return 0;
        return copy_out(t->pool + t->off[id], tok_len(t, id), buf, cap);
    }
    if (a & RF_TOKATTR_USER_DEFINED)
        return copy_out(t->pool + t->off[id], tok_len(t, id), buf, cap);
    if (a & RF_TOKATTR_NORMAL) return t->vt->normal_piece(t, id, buf, cap);
    if (a & RF_TOKATTR_BYTE) {
        char c = (char)byte_token_value(t->pool + t->off[id]);
        return copy_out(&c, 1, buf, cap);
    }
    return 0; /* unused and undefined tokens decode to nothing */
}

int64_t rf_tokenizer_decode(const rf_tokenizer *t, const int32_t *ids, int64_t n, bool special,
                            char *buf, int64_t cap) {
    int64_t total = 0;
    if (cap < 0) cap = 0;
    for (int64_t i = 0; i < n; i++) {
        int64_t room = cap > 0 ? cap - 1 - total : 0;
        if (room < 0) room = 0;
        if (room > INT32_MAX) room = INT32_MAX;
        int32_t k =
            rf_tokenizer_piece(t, ids[i], special, room ? buf + total : NULL, (int32_t)room);
        if (k < 0) {
            if (cap > 0) buf[0] = 0;
            return -1;
        }
        total += k;
    }
    if (cap > 0) buf[total < cap ? total : cap - 1] = 0;
    return total;
}
