/* fuzz_runfile.c: the libFuzzer target for run files (src/bench/runfile.c).
 *
 * The input is a run file's text. A refused file must give RF_ERR_ARG (or RF_ERR_NOMEM) with a
 * message naming the file; an accepted one is checked as a whole (rf_run_desc_check) and, when
 * that passes, written back as the run.json a run saves (rf_run_desc_to_json), which must parse
 * and check again (what --resume reads). Deterministic; touches no file. */
#include <jansson.h>
#include <string.h>

#include "bench/runfile.h"
#include "fuzz_util.h"

static void reparse(const rf_runfile *rf) {
    json_t *j = rf_run_desc_to_json(&rf->desc);
    REQUIRE(j != NULL);
    char *text = json_dumps(j, JSON_COMPACT);
    json_decref(j);
    REQUIRE(text != NULL);
    rf_runfile back;
    memset(&back, 0, sizeof back);
    rf_run_desc_defaults(&back.desc);
    rf_error err = {0};
    REQUIRE(rf_runfile_parse_json("run.json", text, &back, &err) == RF_OK);
    REQUIRE(rf_run_desc_check(&back.desc, &err) == RF_OK);
    REQUIRE(back.desc.n_backends == rf->desc.n_backends);
    rf_runfile_free(&back);
    free(text);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    char *text = fuzz_strndup(data, size);
    rf_runfile rf;
    memset(&rf, 0, sizeof rf);
    rf_run_desc_defaults(&rf.desc);
    rf_error err = {0};
    rf_status st = rf_runfile_parse_json("fuzz.json", text, &rf, &err);
    if (st) {
        REQUIRE(st == RF_ERR_ARG || st == RF_ERR_NOMEM);
        REQUIRE(fuzz_msg_ok(err.msg, sizeof err.msg, "fuzz.json"));
    } else {
        st = rf_run_desc_check(&rf.desc, &err);
        if (st)
            REQUIRE(st == RF_ERR_ARG && fuzz_msg_ok(err.msg, sizeof err.msg, ""));
        else
            reparse(&rf);
    }
    rf_runfile_free(&rf);
    free(text);
    return 0;
}
