/* tok_ref.h: the tokenizer tests' reference files (tests/data/tokenizer_ref*.tsv: one case per
 * line, the text's bytes in hex, a tab, llama.cpp's ids space-separated) and printing a case's
 * text for a failure message. read_ref's cases are freed with free_ref. */
#ifndef ROOFLINE_TESTS_TOK_REF_H
#define ROOFLINE_TESTS_TOK_REF_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>

#include "check.h"
#include "model/tokenizer.h"

typedef struct ref_case {
    char *text;
    size_t len;
    int32_t *ids;
    int64_t n;
} ref_case;

static int hexval(int c) {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    return -1;
}

static ref_case *read_ref(const char *path, size_t *n_out) {
    *n_out = 0;
    FILE *f = fopen(path, "rb");
    CHECK_MSG(f != NULL, "cannot open %s", path);
    if (!f) return NULL;
    size_t n = 0, cap = 16;
    ref_case *rc = xmalloc(cap * sizeof *rc);
    char *line = NULL;
    size_t lcap = 0;
    ssize_t ll;
    while ((ll = getline(&line, &lcap, f)) > 0) {
        while (ll > 0 && (line[ll - 1] == '\n' || line[ll - 1] == '\r')) line[--ll] = 0;
        char *tab = strchr(line, '\t');
        CHECK_MSG(tab != NULL, "bad line in %s: %s", path, line);
        if (!tab) continue;
        if (n == cap) {
            rc = realloc(rc, (cap *= 2) * sizeof *rc);
            if (!rc) abort();
        }
        ref_case *c = &rc[n++];
        c->len = (size_t)(tab - line) / 2;
        c->text = xmalloc(c->len + 1);
        for (size_t i = 0; i < c->len; i++)
            c->text[i] = (char)(hexval(line[2 * i]) * 16 + hexval(line[2 * i + 1]));
        c->text[c->len] = 0;
        c->n = 0;
        c->ids = xmalloc((strlen(tab) / 2 + 2) * sizeof *c->ids);
        for (char *p = tab + 1; *p;) {
            char *e;
            long v = strtol(p, &e, 10);
            if (e == p) break;
            c->ids[c->n++] = (int32_t)v;
            p = e;
        }
    }
    free(line);
    fclose(f);
    *n_out = n;
    return rc;
}

static void free_ref(ref_case *rc, size_t n) {
    for (size_t i = 0; i < n; i++) {
        free(rc[i].text);
        free(rc[i].ids);
    }
    free(rc);
}

static void print_escaped(const char *s, size_t n) {
    fputc('"', stderr);
    for (size_t i = 0; i < n && i < 200; i++) {
        unsigned char c = (unsigned char)s[i];
        if (c == '\n')
            fputs("\\n", stderr);
        else if (c == '\t')
            fputs("\\t", stderr);
        else if (c == '\r')
            fputs("\\r", stderr);
        else if (c < 32 || c == 127)
            fprintf(stderr, "\\x%02x", c);
        else
            fputc(c, stderr);
    }
    fputs(n > 200 ? "...\"" : "\"", stderr);
}

/* Our ids for s through rf_tokenizer_encode_alloc (*ids malloc'd, the caller frees), -1 on an
 * error, -2 when a count-then-fill pair of rf_tokenizer_encode calls gives other ids. Uses no
 * CHECK, so threads may call it. */
static int64_t ref_encode(const rf_tokenizer *t, const char *s, size_t len, int32_t **ids) {
    rf_error err = {0};
    int64_t n = rf_tokenizer_encode_alloc(t, s, len, true, true, ids, &err);
    if (n < 0) return -1;
    int64_t count = rf_tokenizer_encode(t, s, len, true, true, NULL, 0, &err);
    int32_t *two = xmalloc((size_t)(count + 1) * sizeof *two);
    int64_t filled = rf_tokenizer_encode(t, s, len, true, true, two, count, &err);
    bool same = count == n && filled == n && !memcmp(two, *ids, (size_t)n * sizeof *two);
    free(two);
    return same ? n : -2;
}

/* A thread's share of the concurrency check: every case, three times, against its ids. */
typedef struct ref_thread_arg {
    const rf_tokenizer *t;
    const ref_case *cases;
    size_t n;
    int mismatches;
} ref_thread_arg;

static void *ref_thread_main(void *p) {
    ref_thread_arg *a = p;
    for (int rep = 0; rep < 3; rep++)
        for (size_t i = 0; i < a->n; i++) {
            int32_t *ids = NULL;
            int64_t n = ref_encode(a->t, a->cases[i].text, a->cases[i].len, &ids);
            if (n != a->cases[i].n || memcmp(ids, a->cases[i].ids, (size_t)n * sizeof *ids) != 0)
                a->mismatches++;
            free(ids);
        }
    return NULL;
}

#endif
