/* tok_ref.h: the tokenizer tests' reference files (tests/data/tokenizer_ref*.tsv: one case per
 * line, the text's bytes in hex, a tab, llama.cpp's ids space-separated) and printing a case's
 * text for a failure message. read_ref's cases are freed with free_ref. */
#ifndef ROOFLINE_TESTS_TOK_REF_H
#define ROOFLINE_TESTS_TOK_REF_H

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>

#include "check.h"

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

#endif
