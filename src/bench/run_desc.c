/* run_desc.c: the run description's defaults (bench.h: rf_run_desc_defaults), which the run
 * file and the flags (runfile.c) start from. */
#include <string.h>

#include "bench/bench.h"

void rf_run_desc_defaults(rf_run_desc *d) {
    memset(d, 0, sizeof *d);
    d->speed_runs = 3;
    d->speed_tokens = 512;
    d->speed_prompt =
        "Write a long story about a lighthouse keeper who finds a message in a bottle.";
    d->levels[0] = 1, d->levels[1] = 4, d->levels[2] = 16;
    d->n_levels = 3;
    d->load_tokens = 128;
    d->load_warmup = 1;
    d->rate_requests = 32;
    d->rate_seed = 1;
    d->accuracy_tokens = 48;
    d->accuracy_concurrency = 8;
    d->probe_question = "What is the capital of France? Answer with one word.";
    d->progress = true;
    d->membw = true;
}
