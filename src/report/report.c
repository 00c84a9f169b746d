/* report.c: the report files of one or more runs (see report.h). */
#include "report/report.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "report/runset.h"
#include "util/file.h"
#include "util/json_dump.h"

static rf_status write_in(const char *dir, const char *name, const void *data, size_t len,
                          rf_error *err) {
    char *path = NULL;
    if (asprintf(&path, "%s/%s", dir, name) < 0)
        return rf_error_set(err, RF_ERR_NOMEM, "out of memory");
    rf_status st = rf_write_file_atomic(path, data, len, err);
    free(path);
    return st;
}

rf_status rf_report_build(const char *const *dirs, int n, const rf_report_opts *o,
                          const char *out_dir, json_t **summary_out, rf_error *err) {
    if (summary_out) *summary_out = NULL;
    rf_runset rs;
    rf_status st = rf_runset_load(dirs, n, &rs, err);
    if (st) return st;
    json_t *sum = rf_analyze(&rs, o, err);
    rf_runset_free(&rs);
    if (!sum) return err->code ? err->code : RF_ERR_INTERNAL;
    if (!out_dir) out_dir = dirs[0];
    if (mkdir(out_dir, 0755) && errno != EEXIST) {
        json_decref(sum);
        return rf_error_set(err, RF_ERR_IO, "%s: cannot create: %s", out_dir, strerror(errno));
    }
    rf_tables ts;
    char *text = NULL, *md = NULL;
    size_t md_len = 0;
    rf_buf html, csv;
    rf_buf_init(&html, 0);
    rf_buf_init(&csv, 0);
    st = rf_tables_build(sum, &ts, err);
    if (st) goto out;
    text = rf_json_dumps(sum, JSON_INDENT(2) | JSON_PRESERVE_ORDER | JSON_ENSURE_ASCII);
    if (!text) {
        st = rf_error_set(err, RF_ERR_NOMEM, "cannot serialise the summary");
        goto out;
    }
    st = write_in(out_dir, "summary.json", text, strlen(text), err);
    if (st) goto out;
    FILE *f = open_memstream(&md, &md_len);
    if (!f) {
        st = rf_error_set(err, RF_ERR_NOMEM, "out of memory");
        goto out;
    }
    rf_report_markdown(&ts, f);
    fclose(f);
    st = write_in(out_dir, "report.md", md, md_len, err);
    if (!st && rf_report_html(sum, &ts, &html))
        st = rf_error_set(err, RF_ERR_NOMEM, "cannot build report.html (out of memory)");
    if (!st) st = write_in(out_dir, "report.html", html.data, html.len, err);
    char *csvdir = NULL;
    if (!st && asprintf(&csvdir, "%s/csv", out_dir) < 0) {
        csvdir = NULL;
        st = rf_error_set(err, RF_ERR_NOMEM, "out of memory");
    }
    if (!st && mkdir(csvdir, 0755) && errno != EEXIST)
        st = rf_error_set(err, RF_ERR_IO, "%s: cannot create: %s", csvdir, strerror(errno));
    for (int i = 0; !st && i < ts.n; i++) {
        rf_buf_reset(&csv);
        char name[128];
        snprintf(name, sizeof name, "%s.csv", ts.t[i].id);
        if (rf_report_csv(&ts.t[i], &csv))
            st = rf_error_set(err, RF_ERR_NOMEM, "out of memory");
        else
            st = write_in(csvdir, name, csv.data ? (const char *)csv.data : "", csv.len, err);
    }
    free(csvdir);
    rf_tables_free(&ts);
out:
    free(text);
    free(md);
    rf_buf_free(&html);
    rf_buf_free(&csv);
    if (!st && summary_out)
        *summary_out = sum;
    else
        json_decref(sum);
    return st;
}
