/* sections.c: the registry of the report's sections (see section.h). A new section: its file,
 * section_NAME.c, defining rf_section_NAME, and one line in the list below. */
#include "report/section.h"

/* In the report's order (report.md, report.html's tables, csv/). */
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
