/* data_path.c: where the bench's default data files are: the file given, or ROOFLINE_DATA
 * (default: the source tree's data/) + the file's path under it (bench.h). */
#include <stdio.h>
#include <stdlib.h>

#include "bench/bench.h"

const char *rf_bench_data_path(const char *given, const char *rel, char *buf, size_t cap,
                               rf_error *err) {
    if (given) return given;
    const char *dir = getenv("ROOFLINE_DATA");
    int n = snprintf(buf, cap, "%s/%s", dir && *dir ? dir : ROOFLINE_DATA_DIR, rel);
    if (n < 0 || (size_t)n >= cap) {
        rf_error_set(err, RF_ERR_ARG,
                     "ROOFLINE_DATA: the path of %s would be longer than %zu bytes", rel, cap - 1);
        return NULL;
    }
    return buf;
}
