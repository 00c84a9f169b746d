/* render_md.c: the tables as Markdown (report.md, and the scoreboard printed at the end of a
 * run). Cell text is made safe for a table: '|' escaped, line breaks as spaces, control bytes as
 * '?', long text cut on a character with "...". */
#include <string.h>

#include "report/report.h"
#include "util/utf8.h"

static void cell_text(FILE *f, const char *s, size_t max_chars) {
    size_t len = strlen(s), i = 0, chars = 0;
    while (i < len && chars < max_chars) {
        size_t k = rf_utf8_seq(s + i, len - i);
        if (k > 1) {
            fwrite(s + i, 1, k, f);
            i += k;
            chars++;
            continue;
        }
        char c = k ? s[i] : '?';
        i++;
        chars++;
        if (c == '\n' || c == '\r' || c == '\t') c = ' ';
        if ((unsigned char)c < 0x20 || c == 0x7f) c = '?';
        if (c == '|')
            fputs("\\|", f);
        else
            fputc(c, f);
    }
    if (i < len) fputs("...", f);
}

void rf_report_markdown(const rf_tables *ts, FILE *f) {
    fprintf(f, "# roofline bench scoreboard\n\n%s\n", ts->heading ? ts->heading : "");
    for (int i = 0; i < ts->n; i++) {
        const rf_table *t = &ts->t[i];
        fprintf(f, "\n## %s\n\n", t->title);
        if (t->note) fprintf(f, "%s\n\n", t->note);
        if (t->pre) {
            fputs("```\n", f);
            for (int r = 0; r < t->n_rows; r++) {
                char buf[64];
                fprintf(f, "%s\n",
                        rf_cell_str(&t->cells[(size_t)r * (size_t)t->n_cols], buf, sizeof buf));
            }
            fputs("```\n", f);
        } else if (t->n_rows) {
            fputc('|', f);
            for (int c = 0; c < t->n_cols; c++) fprintf(f, " %s |", t->cols[c]);
            fputs("\n|", f);
            for (int c = 0; c < t->n_cols; c++) fputs("---|", f);
            fputc('\n', f);
            for (int r = 0; r < t->n_rows; r++) {
                fputc('|', f);
                for (int c = 0; c < t->n_cols; c++) {
                    char buf[64];
                    fputc(' ', f);
                    cell_text(
                        f,
                        rf_cell_str(&t->cells[(size_t)r * (size_t)t->n_cols + c], buf, sizeof buf),
                        120);
                    fputs(" |", f);
                }
                fputc('\n', f);
            }
        }
        for (int k = 0; k < t->n_foot; k++) fprintf(f, "\n%s\n", t->foot[k]);
    }
}
