/* section_agreement_matrix.c: the report's agreement matrix, at the end of report.html (HTML
 * only; report.md and csv/ have the pairs as the accuracy section's "Reply agreement" table):
 * for every pair of backends, the replies identical character for character, shaded by the
 * share. */
#include <string.h>

#include "report/section.h"
#include "report/svg.h"

/* The agreement pairs as a matrix: identical replies of every pair, shaded by the share. */
static rf_status html(const rf_report_section *s, rf_buf *o, const json_t *sum) {
    const json_t *pairs = json_object_get(sum, "agreement");
    const json_t *acc = json_object_get(sum, "accuracy");
    if (json_object_size((json_t *)acc) < 2) return RF_OK;
    rf_status st = rf_buf_printf(o, "<h2 id=\"s-%s\">", s->id);
    if (!st) st = rf_xml_text(o, s->title);
    if (!st)
        st = rf_buf_printf(o,
                           "</h2><p class=\"note\">Replies identical character for character, "
                           "of the questions both answered.</p><table id=\"t-%s\"><thead><tr>"
                           "<th></th>",
                           s->id);
    const char *na, *nb;
    const json_t *x, *y;
    json_object_foreach((json_t *)acc, nb, y) {
        if (st) break;
        st = rf_buf_append_str(o, "<th>");
        if (!st) st = rf_xml_text(o, nb);
        if (!st) st = rf_buf_append_str(o, "</th>");
    }
    if (!st) st = rf_buf_append_str(o, "</tr></thead><tbody>");
    json_object_foreach((json_t *)acc, na, x) {
        if (st) break;
        st = rf_buf_append_str(o, "<tr><th>");
        if (!st) st = rf_xml_text(o, na);
        if (!st) st = rf_buf_append_str(o, "</th>");
        json_object_foreach((json_t *)acc, nb, y) {
            if (st) break;
            if (!strcmp(na, nb)) {
                st = rf_buf_append_str(o, "<td class=\"u\">-</td>");
                continue;
            }
            const json_t *p = NULL;
            size_t i;
            const json_t *q;
            json_array_foreach((json_t *)pairs, i, q) {
                const char *a = json_string_value(json_object_get(q, "a"));
                const char *b = json_string_value(json_object_get(q, "b"));
                if (a && b &&
                    ((!strcmp(a, na) && !strcmp(b, nb)) || (!strcmp(a, nb) && !strcmp(b, na))))
                    p = q;
            }
            double same = rf_sum_num(p, "identical", NULL), tot = rf_sum_num(p, "total", NULL);
            if (!p || !(tot > 0)) {
                st = rf_buf_append_str(o, "<td class=\"u\">unknown</td>");
                continue;
            }
            double share = same / tot;
            st = rf_buf_printf(o, "<td class=\"n m%d\">%d/%d</td>",
                               share < 0.5   ? 0
                               : share < 0.9 ? 1
                                             : 2,
                               (int)same, (int)tot);
        }
        if (!st) st = rf_buf_append_str(o, "</tr>");
    }
    return st ? st : rf_buf_append_str(o, "</tbody></table>\n");
}

const rf_report_section rf_section_agreement_matrix = {
    .id = "agreement-matrix", .title = "Agreement matrix", .html = html};
