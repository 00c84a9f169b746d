/* tokenizer_special.c: splitting special-token text (control, user-defined, unknown tokens) out
 * of the raw text before the family encoder sees it: the automaton built at load
 * (rf_tok_build_specials) and the matcher (rf_tok_split_specials, used by rf_tokenizer_encode).
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
#include <stdlib.h>
#include <string.h>

#include "model/tokenizer_impl.h"

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

/* The trie being built: n nodes of cap, node 0 the root. */
typedef struct trie {
    trie_node *nodes;
    size_t n, cap;
} trie;

/* Fails when the special tokens hold more text than RF_TOK_MAX_SPECIAL_BYTES. */
static rf_status check_special_bytes(const rf_tokenizer *t, const char *name, rf_error *err) {
    size_t total = 0;
    for (int32_t id = 0; id < t->n_vocab; id++)
        if (special_attr(t->attr[id])) total += rf_tok_len(t, id);
    if (total > RF_TOK_MAX_SPECIAL_BYTES)
        return rf_error_set(err, RF_ERR_MODEL,
                            "%s: the special tokens (control, user-defined, unknown) of "
                            "'tokenizer.ggml.tokens' hold %zu bytes of text, more than the %d MiB "
                            "roofline accepts",
                            name, total, RF_TOK_MAX_SPECIAL_BYTES >> 20);
    return RF_OK;
}

/* Adds token id's text, reversed, to the trie (*n_special counts the tokens added). */
static rf_status trie_insert(trie *tr, const rf_tokenizer *t, int32_t id, size_t *n_special,
                             rf_error *err) {
    const uint8_t *s = (const uint8_t *)t->pool + t->off[id];
    size_t n = rf_tok_len(t, id);
    if (n == 0) return RF_OK;
    (*n_special)++;
    int32_t node = 0;
    for (size_t k = n; k-- > 0;) { /* reversed */
        int32_t c = tr->nodes[node].child;
        while (c >= 0 && tr->nodes[c].byte != s[k]) c = tr->nodes[c].sibling;
        if (c < 0) {
            if (tr->n == tr->cap) { /* at most total + 1 nodes: no overflow of int32 */
                void *p = realloc(tr->nodes, 2 * tr->cap * sizeof *tr->nodes);
                if (!p)
                    return rf_error_set(err, RF_ERR_NOMEM,
                                        "tokenizer: out of memory (special tokens)");
                tr->nodes = p;
                tr->cap *= 2;
            }
            c = (int32_t)tr->n++;
            tr->nodes[c] = (trie_node){-1, tr->nodes[node].child, -1, s[k]};
            tr->nodes[node].child = c;
        }
        node = c;
    }
    tr->nodes[node].id = id; /* texts are unique (build_hash) */
    return RF_OK;
}

/* The distinct special lengths, longest first, into t->special_lens (room for k). */
static void collect_lengths(rf_tokenizer *t) {
    size_t k = 0;
    for (int32_t id = 0; id < t->n_vocab; id++)
        if (special_attr(t->attr[id]) && rf_tok_len(t, id) > 0)
            t->special_lens[k++] = (uint32_t)rf_tok_len(t, id);
    qsort(t->special_lens, k, sizeof *t->special_lens, cmp_u32_desc);
    int32_t u = 0;
    for (size_t i = 0; i < k; i++)
        if (u == 0 || t->special_lens[u - 1] != t->special_lens[i])
            t->special_lens[u++] = t->special_lens[i];
    t->n_special_lens = u;
}

/* The index of length len in t->special_lens: binary search, longest first. */
static int32_t length_index(const rf_tokenizer *t, uint32_t len) {
    int32_t lo = 0, hi = t->n_special_lens - 1;
    while (lo < hi) {
        int32_t mid = (lo + hi) / 2;
        if (t->special_lens[mid] > len)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

/* Breadth-first renumbering of the trie into t->ac: queue[new] = old; a node's children land
 * next to each other, sorted by byte (insertion sort into the queue's tail); parent[new] is the
 * new number of its parent. Then the root's children by byte. */
static void renumber(rf_tokenizer *t, const trie_node *tr, int32_t *queue, int32_t *parent) {
    size_t head = 0, tail = 1;
    queue[0] = 0;
    parent[0] = -1;
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
        if (a->id >= 0) a->len_idx = length_index(t, (uint32_t)rf_tok_len(t, a->id));
    }
    for (int32_t j = t->ac[0].first; j < t->ac[0].first + t->ac[0].n_child; j++)
        t->root_child[t->ac[j].byte] = j;
}

/* Fail links and eligible-suffix links, in breadth-first order (parents first). */
static void link_fail(rf_tokenizer *t, const int32_t *parent) {
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
}

rf_status rf_tok_build_specials(rf_tokenizer *t, const char *name, rf_error *err) {
    rf_status st = RF_OK;
    size_t n_special = 0;
    trie tr = {malloc(1024 * sizeof(trie_node)), 1, 1024};
    int32_t *queue = NULL, *parent = NULL;
    if (!tr.nodes)
        return rf_error_set(err, RF_ERR_NOMEM, "tokenizer: out of memory (special tokens)");
    tr.nodes[0] = (trie_node){-1, -1, -1, 0};
    for (int i = 0; i < 256; i++) t->root_child[i] = -1;
    if ((st = check_special_bytes(t, name, err))) goto out;
    for (int32_t id = 0; id < t->n_vocab; id++)
        if (special_attr(t->attr[id]) && (st = trie_insert(&tr, t, id, &n_special, err))) goto out;

    t->special_lens = malloc((n_special ? n_special : 1) * sizeof *t->special_lens);
    t->ac = malloc(tr.n * sizeof *t->ac);
    queue = malloc(tr.n * sizeof *queue);
    parent = malloc(tr.n * sizeof *parent);
    if (!t->special_lens || !t->ac || !queue || !parent) {
        st = rf_error_set(err, RF_ERR_NOMEM, "tokenizer: out of memory (special tokens)");
        goto out;
    }
    collect_lengths(t);
    t->n_ac = (int32_t)tr.n;
    renumber(t, tr.nodes, queue, parent);
    link_fail(t, parent);
out:
    free(tr.nodes);
    free(queue);
    free(parent);
    return st;
}

/* ---- matching ---------------------------------------------------------------------------- */

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
                r[k++] = (rf_tok_region){(size_t)p, rf_tok_len(t, id), id};
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
