/* econ.h: what the measurements cost and how close they come to the hardware's bound, added to
 * a summary from analyze.c: a "cost" section ($/hour or per-token prices; $/M output tokens
 * single-stream and at each load level; 24x7 $/month; break-even output tok/s against every
 * per-token backend of the runs) and a "roofline" section (ceiling tok/s = memory bandwidth /
 * bytes read per decoded token; efficiency = measured single-stream decode tok/s / ceiling).
 *
 * Where each input comes from is written beside it: prices from the run file, else the prices
 * file (the local backend's price is its stated assumption); bandwidth measured by the run
 * (local: `roofline membw` once per run), given by the run file, or from the accelerator table;
 * bytes per token from the model file (the local backend's, or a remote backend's model_file) or
 * a number the run file gives. Units: GB = 1e9 bytes; GiB = 2^30 bytes. A figure without its
 * inputs is null (unknown).
 */
#ifndef RF_REPORT_ECON_H
#define RF_REPORT_ECON_H

#include <jansson.h>

#include "report/opts.h"
#include "report/runset.h"

/* Checks, before a run, that every instance type its backends name (without a price of their
 * own) is in the prices file (prices_path; NULL: the data directory's): RF_ERR_ARG naming the
 * backend, the instance type and the file otherwise. */
rf_status rf_econ_check_prices(const rf_run_desc *d, const char *prices_path, rf_error *err);

rf_status rf_econ_add(const rf_runset *rs, const rf_report_opts *o, json_t *summary, rf_error *err);

#endif
