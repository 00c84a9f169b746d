/* opt.h: one table-driven command-line option parser, and the `--help` text printed from the
 * same table. Every verb of the roofline command and the bench's flags describe their options
 * as an array of rf_opt rows (spelling, argument kind, destination or callback, range, metavar,
 * help) inside an rf_opt_spec (the program's name, positional arguments, the text around the
 * option list); rf_opt_parse walks argv once, in order, and stores each value into its
 * destination or hands it to its callback.
 *
 * Syntax: an argument that starts with '-' and is longer than "-" names an option (its long or
 * its short spelling, whole: no "--x=v", no bundled "-abc"); an option with a value takes the
 * next argument whatever it looks like ("-n -1"); anything else is a positional argument. "-h"
 * and "--help" anywhere the parser reaches stop it with *help set. A value given twice: the
 * last one counts (RF_OPT_LIST keeps each).
 *
 * Errors are RF_ERR_ARG with a message naming the option as typed and the bad value:
 *   "unknown option '--bogus' (roofline run --help)"
 *   "--ctx needs a value N (roofline inspect --help)"
 *   "--temp expects a number in [0, 100], got 'banana'"
 *   "-t expects an integer in [1, 1024], got '0'"
 *   "unexpected argument 'x' (roofline models --help)"   (no positional callback)
 * A callback writes its own message (the same form: "OPT expects ..., got 'VALUE'").
 *
 * Ownership: the tables are the caller's (usually automatic arrays, so that destinations can
 * point at locals); string values stored are argv's own pointers (argv outlives the parse).
 * Nothing here allocates or keeps global state.
 */
#ifndef ROOFLINE_UTIL_OPT_H
#define ROOFLINE_UTIL_OPT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

#include "roofline/status.h"

typedef enum rf_opt_kind {
    RF_OPT_TRUE,   /* a flag: stores true into a bool */
    RF_OPT_FALSE,  /* a flag: stores false into a bool ("--no-x") */
    RF_OPT_INT,    /* a whole decimal number in [lo, hi], into an integer of dest_size bytes */
    RF_OPT_DOUBLE, /* a number in [lo, hi] (no NaN), into a double */
    RF_OPT_STRING, /* a string: the argv pointer into a const char * */
    RF_OPT_LIST,   /* a string that may be repeated: appended to a const char * array of
                    * dest_size bytes, *count values so far (or each handed to fn) */
} rf_opt_kind;

/* A custom option: dest is the row's dest, opt the spelling typed, val the value (NULL for a
 * flag kind). Returns RF_OK or an error (RF_ERR_ARG naming opt and val). */
typedef rf_status (*rf_opt_fn)(void *dest, const char *opt, const char *val, rf_error *err);

typedef struct rf_opt {
    const char *name;  /* the long spelling, "--temp", or NULL */
    const char *alias; /* a short or second spelling, "-t", or NULL */
    rf_opt_kind kind;
    void *dest;          /* where the value goes (or fn's first argument); may be NULL */
    size_t dest_size;    /* sizeof *dest for RF_OPT_INT (1, 2, 4 or 8), the array's for LIST */
    rf_opt_fn fn;        /* when set, called instead of storing (after the range check of
                          * RF_OPT_INT and RF_OPT_DOUBLE, which then store nothing) */
    double lo, hi;       /* RF_OPT_INT and RF_OPT_DOUBLE: the accepted range, ends included */
    const char *what;    /* the range message's noun ("requests per second"); NULL: "an
                          * integer" / "a number" */
    int *count;          /* RF_OPT_LIST without fn: values stored so far */
    const char *metavar; /* the value's name in help and usage: "N", "FILE" */
    const char *help;    /* one paragraph; word-wrapped by rf_opt_help */
} rf_opt;

/* A destination and its size, for an rf_opt initializer: RF_OPT_DEST(o.threads). */
#define RF_OPT_DEST(x) .dest = &(x), .dest_size = sizeof(x)

typedef struct rf_opt_spec {
    const char *prog;   /* "roofline run": usage line and messages */
    const char *args;   /* positional synopsis after prog ("IN.gguf OUT.gguf", "[PATH]"), or NULL */
    const char *usage;  /* the whole synopsis after prog, replacing the generated one, or NULL */
    const char *about;  /* printed after the usage line (its own line ends), or NULL */
    const char *epilog; /* printed after the option list (its own line ends), or NULL */
    const rf_opt *opts;
    size_t n_opts;
    /* a positional argument, in order; NULL: positional arguments are errors */
    rf_status (*positional)(void *ctx, const char *arg, rf_error *err);
    void *ctx;
} rf_opt_spec;

/* One step of a parse: an option found (opt set, val its value or NULL) or a positional
 * argument (opt NULL, val the argument). */
typedef struct rf_opt_hit {
    const rf_opt *opt;
    const char *spelled; /* the option as typed */
    const char *val;
} rf_opt_hit;

/* Walks argv[1..argc) in order (argv[0] is the verb), storing every value; on -h/--help stops
 * with *help = true and RF_OK. */
rf_status rf_opt_parse(const rf_opt_spec *s, int argc, char **argv, bool *help, rf_error *err);

/* The same walk one step at a time, for callers that look at all of argv before storing
 * (the bench reads its run files before the flags that override them): *i starts at 1;
 * returns 1 with *hit filled, 0 at the end, -1 on an error (unknown option, missing value).
 * Nothing is stored: rf_opt_apply stores a hit. -h and --help come back as an option hit
 * whose opt is rf_opt_help_row(). */
int rf_opt_next(const rf_opt_spec *s, int argc, char **argv, int *i, rf_opt_hit *hit,
                rf_error *err);
/* Stores one hit (checks its value) or hands a positional argument to s->positional. */
rf_status rf_opt_apply(const rf_opt_spec *s, const rf_opt_hit *hit, rf_error *err);
/* The row that -h and --help match. */
const rf_opt *rf_opt_help_row(void);

/* The usage line, about, "Options:" with one entry per row (spellings, metavar, the help
 * wrapped to the terminal-friendly width of 100 columns) and the epilog. */
void rf_opt_help(FILE *f, const rf_opt_spec *s);
/* The option list alone (what rf_opt_help prints under "Options:"). */
void rf_opt_help_list(FILE *f, const rf_opt *opts, size_t n_opts);
/* One entry in the same layout: "  left", then text word-wrapped from column col (on the next
 * line when left reaches it). */
void rf_opt_help_item(FILE *f, const char *left, const char *text, int col);

#endif
