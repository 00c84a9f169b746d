/* fuzz_questions.c: the libFuzzer target for question files (src/bench/questions.c).
 *
 * The input is a JSONL question file. A refused file gives a message naming the file and a line
 * and leaves nothing allocated; an accepted one has every question complete (non-empty id,
 * category, prompt and answer; a known grader; aliases only for "word") and unique ids. */
#include <string.h>

#include "bench/questions.h"
#include "fuzz_util.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    rf_question *qs = NULL;
    int32_t n = -1;
    rf_error err = {0};
    rf_questions_limits lim = {4096, 64};
    rf_status st = rf_questions_parse("q.jsonl", (const char *)data, size, &lim, &qs, &n, &err);
    if (st) {
        REQUIRE(qs == NULL && n == 0);
        REQUIRE(fuzz_msg_ok(err.msg, sizeof err.msg, "q.jsonl"));
        return 0;
    }
    REQUIRE(n >= 0 && n <= lim.max_count && (n == 0 || qs != NULL));
    for (int32_t i = 0; i < n; i++) {
        const rf_question *q = &qs[i];
        REQUIRE(q->id && q->id[0] && q->category && q->category[0]);
        REQUIRE(q->prompt && q->prompt[0] && q->answer && q->answer[0]);
        REQUIRE(rf_grader_kind_name(q->grader) != NULL);
        REQUIRE(q->n_aliases == 0 || q->grader == RF_GRADER_WORD);
        for (int32_t j = 0; j < i; j++) REQUIRE(strcmp(qs[j].id, q->id) != 0);
        REQUIRE(rf_questions_count_category(qs, n, q->category) >= 1);
    }
    rf_questions_free(qs, n);
    return 0;
}
