/* opt.c: the table-driven option parser and its help printer (opt.h). */
#include "util/opt.h"

#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define HELP_WIDTH 100 /* columns of the help text */
#define HELP_COL   24  /* where an option's help starts (further when the spelling is longer) */

static const rf_opt g_help_row = {
    .name = "--help", .alias = "-h", .kind = RF_OPT_TRUE, .help = "print this help and exit"};

const rf_opt *rf_opt_help_row(void) {
    return &g_help_row;
}

static bool takes_value(const rf_opt *o) {
    return o->kind != RF_OPT_TRUE && o->kind != RF_OPT_FALSE;
}

static bool spelled_as(const rf_opt *o, const char *a) {
    return (o->name && !strcmp(o->name, a)) || (o->alias && !strcmp(o->alias, a));
}

int rf_opt_next(const rf_opt_spec *s, int argc, char **argv, int *i, rf_opt_hit *hit,
                rf_error *err) {
    if (*i >= argc) return 0;
    const char *a = argv[(*i)++];
    *hit = (rf_opt_hit){.spelled = a};
    if (a[0] != '-' || !a[1]) { /* "-" alone is a positional argument (stdin, by custom) */
        hit->val = a;
        return 1;
    }
    if (spelled_as(&g_help_row, a)) {
        hit->opt = &g_help_row;
        return 1;
    }
    for (size_t k = 0; k < s->n_opts; k++)
        if (spelled_as(&s->opts[k], a)) hit->opt = &s->opts[k];
    if (!hit->opt) {
        rf_error_set(err, RF_ERR_ARG, "unknown option '%s' (%s --help)", a, s->prog);
        return -1;
    }
    if (takes_value(hit->opt)) {
        if (*i >= argc) {
            rf_error_set(err, RF_ERR_ARG, "%s needs a value%s%s (%s --help)", a,
                         hit->opt->metavar ? " " : "", hit->opt->metavar ? hit->opt->metavar : "",
                         s->prog);
            return -1;
        }
        hit->val = argv[(*i)++];
    }
    return 1;
}

/* v into an integer of size bytes (a value in range fits it: the table says so). */
static void store_int(void *dest, size_t size, long long v) {
    if (size == 1) {
        uint8_t u = (uint8_t)v;
        memcpy(dest, &u, 1);
    } else if (size == 2) {
        uint16_t u = (uint16_t)v;
        memcpy(dest, &u, 2);
    } else if (size == 4) {
        uint32_t u = (uint32_t)v;
        memcpy(dest, &u, 4);
    } else {
        uint64_t u = (uint64_t)v;
        memcpy(dest, &u, 8);
    }
}

static rf_status range_error(const rf_opt *o, const char *spelled, const char *val, rf_error *err) {
    if (o->kind == RF_OPT_INT)
        return rf_error_set(err, RF_ERR_ARG, "%s expects %s in [%lld, %lld], got '%s'", spelled,
                            o->what ? o->what : "an integer", (long long)o->lo, (long long)o->hi,
                            val);
    return rf_error_set(err, RF_ERR_ARG, "%s expects %s in [%g, %g], got '%s'", spelled,
                        o->what ? o->what : "a number", o->lo, o->hi, val);
}

static rf_status apply_value(const rf_opt *o, const char *spelled, const char *val, rf_error *err) {
    long long iv = 0;
    double dv = 0;
    if (o->kind == RF_OPT_INT) {
        char *end = NULL;
        errno = 0;
        iv = strtoll(val, &end, 10);
        if (!*val || *end || errno || !((double)iv >= o->lo && (double)iv <= o->hi))
            return range_error(o, spelled, val, err);
    } else if (o->kind == RF_OPT_DOUBLE) {
        char *end = NULL;
        dv = strtod(val, &end);
        if (!*val || *end || !(dv >= o->lo && dv <= o->hi))
            return range_error(o, spelled, val, err);
    }
    if (o->fn) return o->fn(o->dest, spelled, val, err);
    if (!o->dest) return RF_OK;
    switch (o->kind) {
    case RF_OPT_TRUE:
    case RF_OPT_FALSE:
        *(bool *)o->dest = o->kind == RF_OPT_TRUE;
        break;
    case RF_OPT_INT:
        store_int(o->dest, o->dest_size, iv);
        break;
    case RF_OPT_DOUBLE:
        *(double *)o->dest = dv;
        break;
    case RF_OPT_STRING:
        *(const char **)o->dest = val;
        break;
    case RF_OPT_LIST: {
        size_t cap = o->dest_size / sizeof(const char *);
        if (!o->count || (size_t)*o->count >= cap)
            return rf_error_set(err, RF_ERR_ARG, "%s: at most %zu values", spelled, cap);
        ((const char **)o->dest)[(*o->count)++] = val;
        break;
    }
    }
    return RF_OK;
}

rf_status rf_opt_apply(const rf_opt_spec *s, const rf_opt_hit *hit, rf_error *err) {
    if (!hit->opt) {
        if (!s->positional)
            return rf_error_set(err, RF_ERR_ARG, "unexpected argument '%s' (%s --help)", hit->val,
                                s->prog);
        return s->positional(s->ctx, hit->val, err);
    }
    if (hit->opt == &g_help_row) return RF_OK;
    return apply_value(hit->opt, hit->spelled, hit->val, err);
}

rf_status rf_opt_parse(const rf_opt_spec *s, int argc, char **argv, bool *help, rf_error *err) {
    *help = false;
    int i = 1;
    rf_opt_hit hit;
    for (;;) {
        int r = rf_opt_next(s, argc, argv, &i, &hit, err);
        if (r < 0) return err->code;
        if (!r) return RF_OK;
        if (hit.opt == &g_help_row) {
            *help = true;
            return RF_OK;
        }
        rf_status st = rf_opt_apply(s, &hit, err);
        if (st) return st;
    }
}

/* ---- help ---- */

/* "-o, --prices FILE" into buf. */
static size_t spelling(const rf_opt *o, char *buf, size_t cap) {
    const char *a = o->alias, *n = o->name;
    bool short_alias = a && a[1] != '-';
    int w = snprintf(buf, cap, "%s%s%s%s%s%s%s", short_alias ? a : "", short_alias && n ? ", " : "",
                     n ? n : "", !short_alias && a && n ? ", " : "", !short_alias && a ? a : "",
                     takes_value(o) && o->metavar ? " " : "",
                     takes_value(o) && o->metavar ? o->metavar : "");
    return w < 0 ? 0 : (size_t)w < cap ? (size_t)w : cap - 1;
}

/* text word-wrapped from column col (the first line's first `at` columns are already written)
 * to HELP_WIDTH; a '\n' in text starts a new line. */
static void wrap(FILE *f, const char *text, int col, int at) {
    const char *p = text;
    while (*p) {
        if (*p == '\n') {
            fprintf(f, "\n%*s", col, "");
            at = col;
            p++;
            continue;
        }
        if (*p == ' ') {
            p++;
            continue;
        }
        size_t w = strcspn(p, " \n");
        bool fresh = at == col;
        if (!fresh && at + 1 + (int)w > HELP_WIDTH) {
            fprintf(f, "\n%*s", col, "");
            at = col;
            fresh = true;
        }
        if (!fresh) {
            fputc(' ', f);
            at++;
        }
        fwrite(p, 1, w, f);
        at += (int)w;
        p += w;
    }
    fputc('\n', f);
}

void rf_opt_help_item(FILE *f, const char *left, const char *text, int col) {
    int w = (int)strlen(left);
    fprintf(f, "  %s", left);
    if (!text) {
        fputc('\n', f);
    } else if (2 + w + 2 > col) {
        fprintf(f, "\n%*s", col, "");
        wrap(f, text, col, col);
    } else {
        fprintf(f, "%*s", col - 2 - w, "");
        wrap(f, text, col, col);
    }
}

void rf_opt_help_list(FILE *f, const rf_opt *opts, size_t n_opts) {
    int col = 0;
    char sp[128];
    for (size_t k = 0; k < n_opts; k++) {
        int w = (int)spelling(&opts[k], sp, sizeof sp) + 4;
        if (w > col && w <= HELP_COL) col = w;
    }
    if (!col) col = HELP_COL;
    for (size_t k = 0; k < n_opts; k++) {
        spelling(&opts[k], sp, sizeof sp);
        rf_opt_help_item(f, sp, opts[k].help, col);
    }
}

/* The synopsis: [SPELLING METAVAR] per option, wrapped under the program's name. */
static void synopsis(FILE *f, const rf_opt_spec *s) {
    int col = (int)strlen("usage: ") + (int)strlen(s->prog) + 1;
    fprintf(f, "usage: %s", s->prog);
    int at = col - 1;
    char item[160];
    for (size_t k = 0; k <= s->n_opts; k++) {
        if (k == 0 && !s->args) continue;
        if (k == 0) {
            snprintf(item, sizeof item, "%s", s->args);
        } else {
            const rf_opt *o = &s->opts[k - 1];
            const char *sp = o->name ? o->name : o->alias;
            snprintf(item, sizeof item, "[%s%s%s]%s", sp, takes_value(o) && o->metavar ? " " : "",
                     takes_value(o) && o->metavar ? o->metavar : "",
                     o->kind == RF_OPT_LIST ? "..." : "");
        }
        int w = (int)strlen(item);
        if (at + 1 + w > HELP_WIDTH && at > col) {
            fprintf(f, "\n%*s", col - 1, "");
            at = col - 1;
        }
        fprintf(f, " %s", item);
        at += 1 + w;
    }
    fputc('\n', f);
}

void rf_opt_help(FILE *f, const rf_opt_spec *s) {
    if (s->usage)
        fprintf(f, "usage: %s %s\n", s->prog, s->usage);
    else
        synopsis(f, s);
    if (s->about) fprintf(f, "\n%s", s->about);
    if (s->n_opts) {
        fputs("\nOptions:\n", f);
        rf_opt_help_list(f, s->opts, s->n_opts);
    }
    if (s->epilog) fprintf(f, "\n%s", s->epilog);
}
