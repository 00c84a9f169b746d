/* cmd_tokenize.c: `roofline tokenize [-m MODEL] [--no-bos] [--no-parse-special] TEXT`. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "model/tokenizer.h"
#include "util/file.h"

static void usage(void) {
    printf("usage: roofline tokenize [-m MODEL] [--no-bos] [--no-parse-special] [-f FILE | TEXT]\n"
           "Prints the token ids of TEXT (or of FILE's bytes) on one line, space-separated.\n"
           "Special-token text such as <start_of_turn> becomes the special token unless\n"
           "--no-parse-special is given; BOS is added when the vocabulary asks for it unless\n"
           "--no-bos. With no -m, the embedded model (%s).\n",
           cli_default_model());
}

int cli_tokenize(int argc, char **argv) {
    const char *model = NULL, *text = NULL, *file = NULL;
    bool bos = true, parse_special = true;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
            usage();
            return RF_EXIT_OK;
        } else if (!strcmp(a, "--no-bos")) {
            bos = false;
        } else if (!strcmp(a, "--no-parse-special")) {
            parse_special = false;
        } else if ((!strcmp(a, "-m") || !strcmp(a, "-f")) && i + 1 < argc) {
            *(a[1] == 'm' ? &model : &file) = argv[++i];
        } else if (a[0] == '-' && a[1] && !text) {
            cli_errorf("tokenize", "unknown option '%s' (roofline tokenize --help)", a);
            return RF_EXIT_BAD_INPUT;
        } else if (!text) {
            text = a;
        } else {
            cli_errorf("tokenize", "more than one TEXT argument (quote the text)");
            return RF_EXIT_BAD_INPUT;
        }
    }
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
