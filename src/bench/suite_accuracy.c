/* suite_accuracy.c: the question suite (default: the seeds' 40 questions) at temperature 0,
 * graded per question (number, exact, word) as each reply arrives, the grade written into its
 * record; the scores per category and the reply agreement between backends are computed from
 * the records by the report.
 * Requests run `accuracy_concurrency` at a time (greedy results do not depend on batching in
 * roofline's engine; for other servers this is the usual trade of wall time for nothing).
 */
#include <stdlib.h>
#include <string.h>

#include "bench/bench.h"
#include "bench/graders.h"
#include "bench/questions.h"

typedef struct acc_run {
    rf_bench *b;
    rf_send *sends;
    const rf_question *qs;
    int32_t n, next, in_flight, max_in_flight, outstanding, done;
    char what[96];
} acc_run;

static void acc_start(acc_run *a);
static void grade(rf_send *s, const rf_question *q);

static void acc_graded(rf_send *s) {
    acc_run *a = s->user;
    grade(s, &a->qs[s - a->sends]);
}

static void acc_done(rf_send *s) {
    acc_run *a = s->user;
    a->outstanding--;
    a->in_flight--;
    a->done++;
    rf_bench_progress(a->b, a->what, a->done, a->n);
    acc_start(a);
}

static void acc_start(acc_run *a) {
    if (rf_bench_stopped(a->b)) {
        a->outstanding -= a->n - a->next;
        a->next = a->n;
        return;
    }
    while (a->next < a->n && a->in_flight < a->max_in_flight) {
        rf_send *s = &a->sends[a->next++];
        a->in_flight++;
        rf_send_at(s, 0);
    }
}

/* Grades a finished send (on_result: before its record is written). */
static void grade(rf_send *s, const rf_question *q) {
    json_decref(s->grade);
    const rf_bk_result *r = &s->req.res;
    rf_grade g;
    rf_grade_question(q, (const char *)r->text.data ? (const char *)r->text.data : "", r->text.len,
                      &g);
    s->grade = json_object();
    json_object_set_new(s->grade, "category", json_string(q->category));
    json_object_set_new(s->grade, "grader", json_string(rf_grader_kind_name(q->grader)));
    json_object_set_new(s->grade, "expected", json_string(q->answer));
    json_object_set_new(s->grade, "extracted", rf_json_text(g.value, strlen(g.value)));
    json_object_set_new(s->grade, "correct", json_boolean(r->err == RF_BK_OK && g.correct));
}

rf_status rf_accuracy_preflight(const rf_run_desc *d, rf_error *err) {
    char buf[RF_BENCH_PATH_MAX];
    rf_question *qs = NULL;
    int32_t n = 0;
    const char *path =
        rf_bench_data_path(d->questions, "accuracy/seed40.jsonl", buf, sizeof buf, err);
    if (!path) return err->code;
    rf_status st = rf_questions_load(path, NULL, &qs, &n, err);
    if (st) return st;
    rf_questions_free(qs, n);
    return RF_OK;
}

rf_status rf_suite_accuracy(rf_bench *b, rf_bench_backend *bb, rf_error *err) {
    rf_run_desc *d = rf_bench_run(b);
    char pbuf[RF_BENCH_PATH_MAX];
    const char *path =
        rf_bench_data_path(d->questions, "accuracy/seed40.jsonl", pbuf, sizeof pbuf, err);
    if (!path) return err->code;
    rf_question *qs = NULL;
    int32_t n = 0;
    rf_status st = rf_questions_load(path, NULL, &qs, &n, err);
    if (st) return st;
    acc_run a = {0};
    a.b = b;
    a.qs = qs;
    a.n = n;
    a.max_in_flight = d->accuracy_concurrency;
    a.sends = calloc((size_t)n, sizeof *a.sends);
    if (!a.sends) {
        rf_questions_free(qs, n);
        return rf_error_set(err, RF_ERR_NOMEM, "out of memory");
    }
    snprintf(a.what, sizeof a.what, "accuracy %s", bb->cfg.name);
    for (int32_t i = 0; i < n; i++) {
        rf_send *s = &a.sends[i];
        rf_send_init(s, b, bb, "accuracy", qs[i].prompt, d->accuracy_tokens);
        snprintf(s->item, sizeof s->item, "%s", qs[i].id);
        s->index = i;
        s->on_result = acc_graded;
        s->on_done = acc_done;
        s->user = &a;
    }
    a.outstanding = n;
    rf_bench_progress(b, a.what, 0, n);
    acc_start(&a);
    st = rf_bench_wait(b, &a.outstanding, err);
    for (int32_t i = 0; i < n; i++) rf_send_free(&a.sends[i]);
    free(a.sends);
    rf_questions_free(qs, n);
    return st;
}
