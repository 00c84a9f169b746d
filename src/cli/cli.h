/* cli.h: what the verbs of the roofline command share: option helpers, the default-model lookup
 * and the exit statuses (0 ok, 1 runtime failure, 2 bad input: usage, file or model errors). */
#ifndef RF_CLI_H
#define RF_CLI_H

#include <stdbool.h>
#include <stdint.h>

#include "roofline/status.h"
#include "util/opt.h"

struct rf_context;

/* RF_EXIT_UNANSWERED: roofline bench ran, but a suite got no successful reply from a backend. */
enum { RF_EXIT_OK = 0, RF_EXIT_FAIL = 1, RF_EXIT_BAD_INPUT = 2, RF_EXIT_UNANSWERED = 3 };

/* The model file of what -m gave (an embedded model's name, a path, or NULL: $ROOFLINE_MODEL,
 * else the default model), through the one resolver (model/registry.h); NULL after printing
 * "roofline VERB: ..." when it cannot be resolved (a name not installed names the setup
 * command). The path stays valid until the next call. */
const char *cli_model(const char *verb, const char *given);
/* The default model's path, for help texts. */
const char *cli_default_model(void);

/* Prints "roofline VERB: message" to stderr. */
void cli_errorf(const char *verb, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* Exit status for a failed rf_status: bad input (2) for file/model/argument/context errors,
 * 1 otherwise. */
int cli_exit_for(rf_status st);

/* Parses a verb's argv with its option table (util/opt.h): -1 to go on; RF_EXIT_OK after
 * printing the help (rf_opt_help) to stdout; RF_EXIT_BAD_INPUT after printing the error as
 * "roofline VERB: ...". */
int cli_opts(const char *verb, const rf_opt_spec *spec, int argc, char **argv);

/* Raises the soft descriptor limit (often 1024) to the hard one, so a thousand streams or
 * connections are not refused by this process's own default; prints why when it cannot. */
void cli_raise_fd_limit(const char *verb);

/* Prints to stderr where the profiled decode steps of c went, per stage (rf_context_profile),
 * under the heading `title`; nothing when nothing was profiled. */
void cli_print_profile(const struct rf_context *c, const char *title);
/* The same table from per-stage nanoseconds summed over `steps` forward steps of `tokens`
 * tokens (stage i is names[i], ns[i]); nothing when nothing was profiled. */
void cli_print_stages(const char *title, int64_t steps, int64_t tokens, int n,
                      const char *const *names, const int64_t *ns);

int cli_inspect(int argc, char **argv);
int cli_quantize(int argc, char **argv);
int cli_tokenize(int argc, char **argv);
int cli_run(int argc, char **argv);
int cli_serve(int argc, char **argv);
int cli_membw(int argc, char **argv);
int cli_speed(int argc, char **argv);
int cli_fake(int argc, char **argv);
int cli_bench(int argc, char **argv);
int cli_report(int argc, char **argv);
int cli_cost(int argc, char **argv);
int cli_prices(int argc, char **argv);
int cli_models(int argc, char **argv);

#endif
