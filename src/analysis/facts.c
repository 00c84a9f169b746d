/* facts.c: the facts record, what kind of checkpoint a path is, and the per-token and capacity
 * figures over the shared accounting (see facts.h). */
#include "analysis/facts.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "analysis/facts_int.h"
#include "util/file.h"

rf_model_facts *rf_facts_new(const char *path, rf_facts_format format, rf_error *err) {
    rf_model_facts *f = calloc(1, sizeof *f);
    if (f) f->path = strdup(path);
    if (!f || !f->path) {
        free(f);
        rf_error_set(err, RF_ERR_NOMEM, "%s: out of memory", path);
        return NULL;
    }
    f->format = format;
    rf_footprint_init(&f->fp);
    return f;
}

void rf_model_facts_free(rf_model_facts *f) {
    if (!f) return;
    for (size_t i = 0; i < f->n_tensors; i++) free(f->tensors[i].name);
    for (size_t i = 0; i < f->n_files; i++) free(f->files[i].path);
    free(f->tensors);
    free(f->files);
    free(f->config_path);
    free(f->index_path);
    free(f->path);
    free(f);
}

rf_status rf_facts_add_file(rf_model_facts *f, const char *path, uint64_t size, uint64_t header,
                            uint32_t *idx, rf_error *err) {
    rf_facts_file *nf = realloc(f->files, (f->n_files + 1) * sizeof *nf);
    if (!nf) return rf_error_set(err, RF_ERR_NOMEM, "%s: out of memory", path);
    f->files = nf;
    rf_facts_file *e = &f->files[f->n_files];
    memset(e, 0, sizeof *e);
    e->path = strdup(path);
    if (!e->path) return rf_error_set(err, RF_ERR_NOMEM, "%s: out of memory", path);
    e->size = size;
    e->header = header;
    *idx = (uint32_t)f->n_files++;
    f->file_bytes += size;
    return RF_OK;
}

rf_status rf_facts_add_tensor(rf_model_facts *f, const rf_facts_tensor *t, size_t name_len,
                              rf_error *err) {
    size_t n = f->n_tensors; /* capacity: 16, then doubled at each power of two */
    if (n == 0 || (n >= 16 && (n & (n - 1)) == 0)) {
        size_t cap = n ? 2 * n : 16;
        rf_facts_tensor *nt = realloc(f->tensors, cap * sizeof *nt);
        if (!nt) return rf_error_set(err, RF_ERR_NOMEM, "%s: out of memory", f->path);
        f->tensors = nt;
    }
    rf_facts_tensor *e = &f->tensors[f->n_tensors];
    *e = *t;
    e->name = malloc(name_len + 1);
    if (!e->name) return rf_error_set(err, RF_ERR_NOMEM, "%s: out of memory", f->path);
    memcpy(e->name, t->name, name_len);
    e->name[name_len] = 0;
    e->role = rf_role_classify(e->name, name_len);
    f->n_tensors++;
    return RF_OK;
}

void rf_facts_account(rf_model_facts *f) {
    rf_footprint_init(&f->fp);
    for (size_t i = 0; i < f->n_tensors; i++) {
        const rf_facts_tensor *t = &f->tensors[i];
        rf_footprint_add(&f->fp, t->role, t->dtype, t->nbytes, t->row_bytes);
    }
}

rf_token_read rf_model_facts_token_read(const rf_model_facts *f, int64_t ctx, rf_kv_dtype kvt) {
    return rf_footprint_read(&f->fp, &f->kv, ctx, kvt);
}

rf_status rf_model_facts_kv_capacity(const rf_model_facts *f, double mem_bytes, double util,
                                     int64_t len, rf_kv_dtype kvt, rf_kv_capacity *out,
                                     rf_error *err) {
    if (f->kv.n_layer < 1) {
        memset(out, 0, sizeof *out);
        return rf_error_set(err, RF_ERR_ARG, "%s: no KV cache geometry: %s", f->path,
                            f->kv_note[0] ? f->kv_note : "unknown");
    }
    return rf_kv_capacity_compute(&f->kv, mem_bytes, util, rf_model_facts_weights(f), len, kvt, out,
                                  err);
}

/* ---- what a path is ------------------------------------------------------------------------ */

static bool ends_with(const char *s, const char *suffix) {
    size_t n = strlen(s), k = strlen(suffix);
    return n >= k && strcmp(s + n - k, suffix) == 0;
}

static bool is_regular(const char *path) {
    struct stat sb;
    return stat(path, &sb) == 0 && S_ISREG(sb.st_mode);
}

static rf_status load_gguf(const char *path, rf_model_facts **out, rf_error *err) {
    rf_gguf *g = NULL;
    rf_status st = rf_gguf_open(path, &g, err);
    if (st) return st;
    st = rf_model_facts_from_gguf(g, out, err);
    rf_gguf_close(g);
    return st;
}

/* In a directory: the standard names first, else exactly one candidate of a kind. */
static rf_status load_dir(const char *dir, rf_model_facts **out, rf_error *err) {
    static const char *const suffixes[] = {".safetensors.index.json", ".safetensors"};
    char path[4096];
    snprintf(path, sizeof path, "%s/model.safetensors.index.json", dir);
    if (is_regular(path)) return rf_facts_load_index(path, out, err);
    snprintf(path, sizeof path, "%s/model.safetensors", dir);
    if (is_regular(path)) return rf_facts_load_safetensors(path, out, err);
    DIR *d = opendir(dir);
    if (!d) return rf_error_set(err, RF_ERR_IO, "%s: cannot open: %s", dir, strerror(errno));
    rf_status st = RF_OK;
    char found[2][1024] = {{0}};
    int count[2] = {0};
    struct dirent *e;
    while ((e = readdir(d)) != NULL) {
        for (int k = 0; k < 2; k++) {
            if (!ends_with(e->d_name, suffixes[k])) continue;
            if (k == 1 && ends_with(e->d_name, ".safetensors.index.json")) continue;
            if (count[k]++ == 0) snprintf(found[k], sizeof found[k], "%s", e->d_name);
            break;
        }
    }
    closedir(d);
    for (int k = 0; k < 2; k++) {
        if (count[k] == 0) continue;
        if (count[k] > 1) {
            st = rf_error_set(err, RF_ERR_IO,
                              "%s: holds %d *%s files and no model.safetensors.index.json or "
                              "model.safetensors: give the file (or the index) to inspect",
                              dir, count[k], suffixes[k]);
            return st;
        }
        snprintf(path, sizeof path, "%s/%s", dir, found[k]);
        if (k == 0) return rf_facts_load_index(path, out, err);
        return rf_facts_load_safetensors(path, out, err);
    }
    return rf_error_set(err, RF_ERR_IO,
                        "%s: a directory with no model.safetensors.index.json or *.safetensors "
                        "file (inspect takes a regular file, or a directory holding a "
                        "safetensors checkpoint)",
                        dir);
}

bool rf_model_facts_path_is_gguf(const char *path) {
    struct stat sb;
    if (stat(path, &sb) != 0 || S_ISDIR(sb.st_mode)) return false;
    if (ends_with(path, ".gguf")) return true;
    if (ends_with(path, ".json") || ends_with(path, ".safetensors") || !S_ISREG(sb.st_mode))
        return false;
    unsigned char magic[4] = {0};
    int fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
    if (fd < 0) return false;
    ssize_t got = read(fd, magic, sizeof magic);
    close(fd);
    return got == 4 && memcmp(magic, "GGUF", 4) == 0;
}

rf_status rf_model_facts_load(const char *path, rf_model_facts **out, rf_error *err) {
    *out = NULL;
    struct stat sb;
    if (stat(path, &sb) != 0)
        return rf_error_set(err, RF_ERR_IO, "%s: cannot open: %s", path, strerror(errno));
    if (S_ISDIR(sb.st_mode)) return load_dir(path, out, err);
    if (!S_ISREG(sb.st_mode)) return rf_error_set(err, RF_ERR_IO, "%s: not a regular file", path);
    if (rf_model_facts_path_is_gguf(path)) return load_gguf(path, out, err);
    if (ends_with(path, ".json")) return rf_facts_load_index(path, out, err);
    rf_status st = rf_facts_load_safetensors(path, out, err);
    if (st == RF_ERR_FORMAT && err && !ends_with(path, ".safetensors")) {
        size_t n = strlen(err->msg);
        snprintf(err->msg + n, sizeof err->msg - n, " (nor does it start with the GGUF magic)");
    }
    return st;
}
