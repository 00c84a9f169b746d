/* sections.c: the registry of the report's sections, and the report's tables built from it
 * (see section.h). A new section: its file, section_NAME.c, defining rf_section_NAME, and one
 * line in the list below. */
#include "report/section.h"

#include <stdio.h>
#include <string.h>

/* In the report's order (report.md, report.html's tables, csv/). report.html's chart strip
 * orders the charts by each section's chart_rank: load 1, roofline 2, cost 3, accuracy 4, A/B/A
 * 5, precision 6 (the roofline chart before the cost chart, the tables the other way round). */
#define RF_REPORT_SECTIONS(X)                                                                      \
    X(backends)                                                                                    \
    X(speed)                                                                                       \
    X(load)                                                                                        \
    X(cost)                                                                                        \
    X(roofline)                                                                                    \
    X(memory)                                                                                      \
    X(accuracy)                                                                                    \
    X(agent)                                                                                       \
    X(probe)                                                                                       \
    X(aba)                                                                                         \
    X(precision)                                                                                   \
    X(agreement_matrix)

#define RF_SECTION_DECLARE(name) extern const rf_report_section rf_section_##name;
RF_REPORT_SECTIONS(RF_SECTION_DECLARE)

#define RF_SECTION_ENTRY(name) &rf_section_##name,
static const rf_report_section *const k_sections[] = {RF_REPORT_SECTIONS(RF_SECTION_ENTRY)};

const rf_report_section *const *rf_report_sections(int *n_out) {
    *n_out = (int)(sizeof k_sections / sizeof k_sections[0]);
    return k_sections;
}

rf_status rf_tables_build(const json_t *sum, rf_tables *out, rf_error *err) {
    memset(out, 0, sizeof *out);
    const json_t *run = json_object_get(sum, "run");
    if (asprintf(&out->heading, "run `%s`, %s%s", rf_sum_str(run, "dir"),
                 *rf_sum_str(run, "date") ? rf_sum_str(run, "date") : "date unknown",
                 json_is_true(json_object_get(sum, "interrupted"))
                     ? " (interrupted: partial results)"
                     : "") < 0) {
        out->heading = NULL;
        return rf_error_set(err, RF_ERR_NOMEM, "out of memory");
    }
    int n = 0;
    const rf_report_section *const *sec = rf_report_sections(&n);
    for (int i = 0; i < n; i++) {
        out->section = i;
        if (sec[i]->tables) sec[i]->tables(sec[i], out, sum);
    }
    /* a section with nothing measured leaves tables without rows: dropped, but a table with
     * footnotes is kept */
    rf_tables_drop_empty(out);
    return RF_OK;
}
