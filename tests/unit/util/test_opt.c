/* test_opt.c: the table-driven option parser (util/opt.h): every argument kind into its
 * destination, callbacks, positional arguments, repeated values, the errors (unknown option,
 * missing value, out of range, not a number, unexpected argument) with the option and the value
 * named, -h/--help, the step-by-step walk, and the help text printed from the table. */
#include <stdint.h>
#include <string.h>

#include "check.h"
#include "util/opt.h"

typedef struct vals {
    bool flag, off;
    long n;
    int32_t i32;
    uint16_t u16;
    uint64_t u64;
    double x;
    const char *s;
    const char *list[3];
    int n_list;
    int isa;
    const char *pos[4];
    int n_pos;
} vals;

static rf_status parse_isa(void *dest, const char *opt, const char *v, rf_error *err) {
    if (strcmp(v, "scalar") && strcmp(v, "avx2"))
        return rf_error_set(err, RF_ERR_ARG, "%s expects scalar or avx2, got '%s'", opt, v);
    *(int *)dest = v[0] == 'a';
    return RF_OK;
}

static rf_status add_pos(void *ctx, const char *arg, rf_error *err) {
    vals *v = ctx;
    if (v->n_pos == 4) return rf_error_set(err, RF_ERR_ARG, "too many: '%s'", arg);
    v->pos[v->n_pos++] = arg;
    return RF_OK;
}

/* Parses the space-separated words of line (after the verb) into *v; returns the status, the
 * message in err, and *help. */
static rf_status parse(const char *line, vals *v, bool *help, rf_error *err, bool positional) {
    memset(v, 0, sizeof *v);
    v->off = true;
    v->isa = -1;
    const rf_opt opts[] = {
        {"--flag", "-f", RF_OPT_TRUE, RF_OPT_DEST(v->flag), .help = "a flag"},
        {"--no-off", NULL, RF_OPT_FALSE, RF_OPT_DEST(v->off), .help = "turns off off"},
        {"--count", "-n", RF_OPT_INT, RF_OPT_DEST(v->n), .lo = -1, .hi = 100, .metavar = "N",
         .help = "a count"},
        {"--i32", NULL, RF_OPT_INT, RF_OPT_DEST(v->i32), .lo = 0, .hi = 2147483647.0,
         .metavar = "N"},
        {"--u16", NULL, RF_OPT_INT, RF_OPT_DEST(v->u16), .lo = 0, .hi = 65535, .metavar = "N"},
        {"--u64", NULL, RF_OPT_INT, RF_OPT_DEST(v->u64), .lo = 0, .hi = 1e15, .what = "bytes",
         .metavar = "B"},
        {"--x", NULL, RF_OPT_DOUBLE, RF_OPT_DEST(v->x), .lo = 0.01, .hi = 1, .metavar = "X",
         .help = "a fraction"},
        {"--name", NULL, RF_OPT_STRING, RF_OPT_DEST(v->s), .metavar = "NAME"},
        {"--add", NULL, RF_OPT_LIST, RF_OPT_DEST(v->list), .count = &v->n_list, .metavar = "ITEM",
         .help = "one more item"},
        {"--isa", NULL, RF_OPT_STRING, .dest = &v->isa, .fn = parse_isa, .metavar = "K"},
    };
    const rf_opt_spec spec = {
        .prog = "roofline test",
        .opts = opts,
        .n_opts = sizeof opts / sizeof opts[0],
        .positional = positional ? add_pos : NULL,
        .ctx = v,
    };
    static char buf[512]; /* the values point into it until the next parse */
    char *argv[32] = {"test"};
    int argc = 1;
    snprintf(buf, sizeof buf, "%s", line);
    for (char *t = strtok(buf, " "); t && argc < 32; t = strtok(NULL, " ")) argv[argc++] = t;
    return rf_opt_parse(&spec, argc, argv, help, err);
}

static void expect_error(const char *line, const char *n1, const char *n2) {
    vals v;
    bool help = false;
    rf_error err = {0};
    rf_status st = parse(line, &v, &help, &err, true);
    CHECK_MSG(st == RF_ERR_ARG && (!n1 || strstr(err.msg, n1)) && (!n2 || strstr(err.msg, n2)),
              "'%s' gave %d: %s", line, st, err.msg);
}

static void test_values(void) {
    vals v;
    bool help = true;
    rf_error err = {0};
    CHECK(parse("-f --no-off -n -1 --i32 2147483647 --u16 65535 --u64 1000000000000000 --x 0.5 "
                "--name abc --add a --add b --isa avx2 p1 - p2",
                &v, &help, &err, true) == RF_OK);
    CHECK(!help);
    CHECK(v.flag && !v.off && v.n == -1 && v.i32 == 2147483647 && v.u16 == 65535);
    CHECK(v.u64 == 1000000000000000ull && v.x == 0.5 && !strcmp(v.s, "abc"));
    CHECK(v.n_list == 2 && !strcmp(v.list[0], "a") && !strcmp(v.list[1], "b"));
    CHECK(v.isa == 1);
    CHECK(v.n_pos == 3 && !strcmp(v.pos[0], "p1") && !strcmp(v.pos[1], "-") &&
          !strcmp(v.pos[2], "p2"));
    /* the last value counts; the long and the short spelling are one option */
    CHECK(parse("--count 3 -n 4 --name a --name b", &v, &help, &err, true) == RF_OK);
    CHECK(v.n == 4 && !strcmp(v.s, "b"));
    /* a value is the next argument whatever it looks like */
    CHECK(parse("--name --flag", &v, &help, &err, true) == RF_OK);
    CHECK(!strcmp(v.s, "--flag") && !v.flag);
    /* help stops the walk */
    CHECK(parse("-f --help --bogus", &v, &help, &err, true) == RF_OK && help && v.flag);
    CHECK(parse("-h", &v, &help, &err, true) == RF_OK && help);
    CHECK(parse("", &v, &help, &err, true) == RF_OK && !help && v.off && v.isa == -1);
}

static void test_errors(void) {
    expect_error("--bogus", "unknown option '--bogus'", "(roofline test --help)");
    expect_error("-f -x 1", "unknown option '-x'", NULL);
    expect_error("--count", "--count needs a value N", "(roofline test --help)");
    expect_error("--count 101", "--count expects an integer in [-1, 100], got '101'", NULL);
    expect_error("-n 1.5", "-n expects an integer in [-1, 100], got '1.5'", NULL);
    expect_error("-n 1e3", "-n expects an integer", "'1e3'");
    expect_error("--i32 2147483648", "--i32 expects an integer in [0, 2147483647]", NULL);
    expect_error("--i32 99999999999999999999999", "--i32", "99999999999999999999999");
    expect_error("--u64 -1", "--u64 expects bytes in [0, 1000000000000000], got '-1'", NULL);
    expect_error("--x 0", "--x expects a number in [0.01, 1], got '0'", NULL);
    expect_error("--x banana", "--x expects a number in [0.01, 1], got 'banana'", NULL);
    expect_error("--x nan", "--x", "'nan'");
    expect_error("--x 1x", "--x", "'1x'");
    expect_error("--isa neon", "--isa expects scalar or avx2, got 'neon'", NULL);
    expect_error("--add a --add b --add c --add d", "--add: at most 3 values", NULL);
    expect_error("a b c d e", "too many: 'e'", NULL);
    /* no positional callback: a positional argument is an error */
    vals v;
    bool help;
    rf_error err = {0};
    CHECK(parse("-f stray", &v, &help, &err, false) == RF_ERR_ARG);
    CHECK_MSG(strstr(err.msg, "unexpected argument 'stray' (roofline test --help)"), "%s", err.msg);
}

/* rf_opt_next and rf_opt_apply: a walk that looks before it stores (the bench's flags) */
static void test_walk(void) {
    int a = 0;
    const char *name = NULL;
    const rf_opt opts[] = {
        {"--a", NULL, RF_OPT_INT, RF_OPT_DEST(a), .lo = 0, .hi = 9, .metavar = "N"},
        {"--name", NULL, RF_OPT_STRING, RF_OPT_DEST(name), .metavar = "S"},
    };
    const rf_opt_spec spec = {.prog = "roofline walk", .opts = opts, .n_opts = 2};
    char *argv[] = {"walk", "--a", "3", "pos", "--name", "n", "--help"};
    int i = 1, n = 0, r;
    rf_opt_hit h;
    rf_error err = {0};
    const char *seen[5] = {0};
    while ((r = rf_opt_next(&spec, 7, argv, &i, &h, &err)) > 0)
        seen[n++] = h.opt ? h.spelled : h.val;
    CHECK(r == 0 && n == 4 && a == 0 && !name); /* nothing stored */
    CHECK(!strcmp(seen[0], "--a") && !strcmp(seen[1], "pos") && !strcmp(seen[2], "--name") &&
          !strcmp(seen[3], "--help"));
    i = 1;
    CHECK(rf_opt_next(&spec, 7, argv, &i, &h, &err) == 1 && rf_opt_apply(&spec, &h, &err) == RF_OK);
    CHECK(a == 3);
    CHECK(rf_opt_next(&spec, 7, argv, &i, &h, &err) == 1 && !h.opt);
    CHECK(rf_opt_apply(&spec, &h, &err) == RF_ERR_ARG && strstr(err.msg, "'pos'"));
    CHECK(rf_opt_next(&spec, 7, argv, &i, &h, &err) == 1 && rf_opt_apply(&spec, &h, &err) == RF_OK);
    CHECK(name && !strcmp(name, "n"));
    CHECK(rf_opt_next(&spec, 7, argv, &i, &h, &err) == 1 && h.opt == rf_opt_help_row());
    char *bad[] = {"walk", "--a"};
    i = 1;
    CHECK(rf_opt_next(&spec, 2, bad, &i, &h, &err) == -1 && strstr(err.msg, "--a needs a value"));
}

/* The help text: usage from the table, the options aligned, long help wrapped at 100 columns. */
static void test_help(void) {
    bool flag = false;
    long n = 0;
    const char *f = NULL;
    const rf_opt opts[] = {
        {"--flag", "-f", RF_OPT_TRUE, RF_OPT_DEST(flag), .help = "a flag"},
        {NULL, "-n", RF_OPT_INT, RF_OPT_DEST(n), .lo = 0, .hi = 9, .metavar = "N",
         .help = "a number (default 0)"},
        {"--prices", "-o", RF_OPT_STRING, RF_OPT_DEST(f), .metavar = "FILE",
         .help = "the prices file, with a help text long enough that it has to be wrapped onto a "
                 "second line of the help's option list"},
        {"--very-long-option-name", NULL, RF_OPT_LIST, RF_OPT_DEST(f), .metavar = "VALUE",
         .help = "its help starts on the next line"},
    };
    const rf_opt_spec spec = {.prog = "roofline demo",
                              .args = "IN OUT",
                              .about = "Does nothing.\n",
                              .epilog = "That is all.\n",
                              .opts = opts,
                              .n_opts = sizeof opts / sizeof opts[0]};
    char *text = NULL;
    size_t len = 0;
    FILE *mf = open_memstream(&text, &len);
    rf_opt_help(mf, &spec);
    fclose(mf);
    const char *want =
        "usage: roofline demo IN OUT [--flag] [-n N] [--prices FILE] [--very-long-option-name "
        "VALUE]...\n"
        "\n"
        "Does nothing.\n"
        "\n"
        "Options:\n"
        "  -f, --flag         a flag\n"
        "  -n N               a number (default 0)\n"
        "  -o, --prices FILE  the prices file, with a help text long enough that it has to be "
        "wrapped onto a\n"
        "                     second line of the help's option list\n"
        "  --very-long-option-name VALUE\n"
        "                     its help starts on the next line\n"
        "\n"
        "That is all.\n";
    CHECK_MSG(text && !strcmp(text, want), "help:\n%s\nwanted:\n%s", text ? text : "", want);
    for (const char *p = text, *e; p && *p; p = e + 1) { /* no line over 100 columns */
        e = strchr(p, '\n');
        if (!e) break;
        CHECK_MSG(e - p <= 100, "line of %d columns: %.*s", (int)(e - p), (int)(e - p), p);
    }
    free(text);
}

int main(void) {
    test_values();
    test_errors();
    test_walk();
    test_help();
    return check_summary("test_opt");
}
