/* request_own.c: what a parsed request owns (request.h): the strings its parser files make
 * (rf_openai_req_own) and their release with the tree (rf_openai_req_free). */
#include <stdlib.h>
#include <string.h>

#include "openai/request.h"

char *rf_openai_req_own(rf_openai_req *r, char *s) {
    if (!s) return NULL;
    char **more = realloc(r->owned, (r->n_owned + 1) * sizeof *more);
    if (!more) {
        free(s);
        return NULL;
    }
    r->owned = more;
    r->owned[r->n_owned++] = s;
    return s;
}

void rf_openai_req_free(rf_openai_req *r) {
    if (!r) return;
    for (size_t i = 0; i < r->n_owned; i++) free(r->owned[i]);
    free(r->owned);
    free(r->msgs);
    json_decref(r->root);
    memset(r, 0, sizeof *r);
}
