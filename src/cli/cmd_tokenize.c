/* cmd_tokenize.c: `roofline tokenize [-m MODEL] [--no-bos] [--no-parse-special] TEXT`. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "model/tokenizer.h"
#include "util/file.h"

/* TEXT: one */
static rf_status set_text(void *ctx, const char *arg, rf_error *err) {
    const char **text = ctx;
    if (*text) return rf_error_set(err, RF_ERR_ARG, "more than one TEXT argument (quote the text)");
    *text = arg;
    return RF_OK;
}

int cli_tokenize(int argc, char **argv) {
    const char *model = NULL, *text = NULL, *file = NULL;
    bool bos = true, parse_special = true;
    const rf_opt opts[] = {
        {NULL, "-m", RF_OPT_STRING, RF_OPT_DEST(model), .metavar = "MODEL",
         .help = "GGUF file or embedded model's name (default: the embedded model)"},
        {"--no-bos", NULL, RF_OPT_FALSE, RF_OPT_DEST(bos),
         .help = "no BOS, even when the vocabulary asks for it"},
        {"--no-parse-special", NULL, RF_OPT_FALSE, RF_OPT_DEST(parse_special),
         .help = "special-token text such as <start_of_turn> stays text"},
        {NULL, "-f", RF_OPT_STRING, RF_OPT_DEST(file), .metavar = "FILE",
         .help = "tokenize FILE's bytes instead of TEXT"},
    };
    char about[4400];
    snprintf(about, sizeof about,
             "Prints the token ids of TEXT (or of FILE's bytes) on one line, space-separated.\n"
             "Special-token text such as <start_of_turn> becomes the special token unless\n"
             "--no-parse-special is given; BOS is added when the vocabulary asks for it unless\n"
             "--no-bos. With no -m, the embedded model (%s).\n",
             cli_default_model());
    const rf_opt_spec spec = {
        .prog = "roofline tokenize",
        .args = "[TEXT]",
        .about = about,
        .opts = opts,
        .n_opts = sizeof opts / sizeof opts[0],
        .positional = set_text,
        .ctx = &text,
    };
    int prc = cli_opts("tokenize", &spec, argc, argv);
    if (prc >= 0) return prc;
    if (!text == !file) {
        cli_errorf("tokenize", "give exactly one of TEXT or -f FILE");
        return RF_EXIT_BAD_INPUT;
    }
    model = cli_model("tokenize", model);
    if (!model) return RF_EXIT_BAD_INPUT;
    size_t len = 0;
    char *owned = NULL;
    if (file) {
        rf_error ferr = {0};
        if (rf_read_file(file, (size_t)1 << 30, &owned, &len, &ferr)) {
            cli_errorf("tokenize", "%s", ferr.msg);
            return RF_EXIT_BAD_INPUT;
        }
        text = owned;
    } else {
        len = strlen(text);
    }
    rf_error err = {0};
    rf_gguf *g = NULL;
    rf_tokenizer *tok = NULL;
    int32_t *ids = NULL;
    int rc = RF_EXIT_OK;
    rf_status st = rf_gguf_open(model, &g, &err);
    if (!st) st = rf_tokenizer_from_gguf(g, &tok, &err);
    if (st) {
        cli_errorf("tokenize", "%s", err.msg);
        rc = cli_exit_for(st);
        goto out;
    }
    int64_t n = rf_tokenizer_encode_alloc(tok, text, len, bos, parse_special, &ids, &err);
    if (n < 0) {
        cli_errorf("tokenize", "%s", err.msg);
        rc = RF_EXIT_FAIL;
        goto out;
    }
    for (int64_t i = 0; i < n; i++) printf(i ? " %d" : "%d", ids[i]);
    putchar('\n');
out:
    free(ids);
    free(owned);
    rf_tokenizer_free(tok);
    rf_gguf_close(g);
    return rc;
}
