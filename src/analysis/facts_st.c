/* facts_st.c: facts from safetensors checkpoints: one file, or the shards of an index, with the
 * config.json beside them; compressed-tensors pack-quantized parts merged into logical weights
 * (see facts.h). Only headers are read. */
#include <errno.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "analysis/facts.h"
#include "analysis/facts_int.h"
#include "analysis/hf_config.h"
#include "format/safetensors.h"
#include "util/file.h"

#define MAX_INDEX_BYTES RF_ST_MAX_HEADER
#define MAX_SHARDS      65536

/* One tensor as a shard lists it. */
typedef struct raw {
    const rf_st_tensor *t; /* borrowed from its rf_st */
    uint32_t file;
    bool absorbed; /* a part of a pack-quantized weight */
} raw;

typedef struct loader {
    rf_model_facts *f;
    rf_st **shards;
    size_t n_shards;
    raw *raws;
    size_t n_raws;
    size_t *by_name; /* raws sorted by name */
    rf_hf_config cfg;
    bool have_cfg;
    rf_error *err;
} loader;

static void loader_free(loader *L) {
    for (size_t i = 0; i < L->n_shards; i++) rf_st_close(L->shards[i]);
    free(L->shards);
    free(L->raws);
    free(L->by_name);
}

static const char *esc(const char *s, char *buf, size_t cap) {
    return rf_escaped(s, strlen(s), buf, cap);
}

static rf_status add_shard(loader *L, rf_st *s, rf_error *err) {
    rf_st **ns = realloc(L->shards, (L->n_shards + 1) * sizeof *ns);
    if (!ns) {
        rf_st_close(s);
        return rf_error_set(err, RF_ERR_NOMEM, "%s: out of memory", rf_st_name(s));
    }
    L->shards = ns;
    L->shards[L->n_shards++] = s;
    uint32_t idx = 0;
    rf_status st = rf_facts_add_file(L->f, rf_st_name(s), rf_st_file_size(s),
                                     8 + rf_st_header_size(s), &idx, err);
    if (!st) L->f->files[idx].tensors = rf_st_n_tensors(s);
    return st;
}

typedef struct name_ix {
    const char *name;
    size_t i;
} name_ix;

static int cmp_name_ix(const void *a, const void *b) {
    return strcmp(((const name_ix *)a)->name, ((const name_ix *)b)->name);
}

static rf_status index_raws(loader *L) {
    size_t n = 0;
    for (size_t s = 0; s < L->n_shards; s++) n += rf_st_n_tensors(L->shards[s]);
    L->raws = calloc(n ? n : 1, sizeof *L->raws);
    L->by_name = calloc(n ? n : 1, sizeof *L->by_name);
    name_ix *ix = calloc(n ? n : 1, sizeof *ix);
    if (!L->raws || !L->by_name || !ix) {
        free(ix);
        return rf_error_set(L->err, RF_ERR_NOMEM, "%s: out of memory", L->f->path);
    }
    for (size_t s = 0; s < L->n_shards; s++)
        for (size_t i = 0; i < rf_st_n_tensors(L->shards[s]); i++) {
            L->raws[L->n_raws] = (raw){rf_st_tensor_at(L->shards[s], i), (uint32_t)s, false};
            ix[L->n_raws] = (name_ix){L->raws[L->n_raws].t->name, L->n_raws};
            L->n_raws++;
        }
    qsort(ix, L->n_raws, sizeof *ix, cmp_name_ix);
    for (size_t i = 0; i < L->n_raws; i++) L->by_name[i] = ix[i].i;
    free(ix);
    L->f->stored_tensors = L->n_raws;
    return RF_OK;
}

static raw *find_raw(loader *L, const char *name) {
    size_t lo = 0, hi = L->n_raws;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        raw *r = &L->raws[L->by_name[mid]];
        int c = strcmp(r->t->name, name);
        if (c == 0) return r;
        if (c < 0)
            lo = mid + 1;
        else
            hi = mid;
    }
    return NULL;
}

static uint64_t rows_of(const rf_st_tensor *t) {
    if (t->n_dims == 0) return 1;
    uint64_t inner = t->shape[t->n_dims - 1];
    return inner ? t->nelements / inner : 0;
}

static void fmt_dims(const uint64_t *shape, uint32_t n, char *buf, size_t cap) {
    size_t k = (size_t)snprintf(buf, cap, "[");
    for (uint32_t d = 0; d < n && k < cap; d++)
        k += (size_t)snprintf(buf + k, cap - k, "%s%llu", d ? ", " : "",
                              (unsigned long long)shape[d]);
    if (k < cap) snprintf(buf + k, cap - k, "]");
}

static rf_status add_plain(loader *L, const raw *r) {
    rf_facts_tensor ft;
    memset(&ft, 0, sizeof ft);
    ft.name = (char *)r->t->name;
    snprintf(ft.dtype, sizeof ft.dtype, "%s", rf_st_dtype_name(r->t->dtype));
    ft.n_dims = r->t->n_dims;
    memcpy(ft.shape, r->t->shape, sizeof(uint64_t) * r->t->n_dims);
    ft.nbytes = rf_st_tensor_bytes(r->t);
    uint64_t rows = rows_of(r->t);
    ft.row_bytes = rows ? ft.nbytes / rows : 0;
    ft.parts = 1;
    ft.file = r->file;
    return rf_facts_add_tensor(L->f, &ft, r->t->name_len, L->err);
}

/* NAME.weight_packed and its parts -> one logical NAME.weight. */
static rf_status add_packed(loader *L, raw *pk) {
    const rf_hf_quant *q = &L->cfg.quant;
    const rf_st_tensor *t = pk->t;
    const char *shard = rf_st_name(L->shards[pk->file]);
    char tn[200], sn[200], shp[96];
    rf_escaped(t->name, t->name_len, tn, sizeof tn);
    if (t->dtype != RF_ST_I32 || t->n_dims != 2) {
        fmt_dims(t->shape, t->n_dims, shp, sizeof shp);
        return rf_error_set(L->err, RF_ERR_MODEL,
                            "%s: '%s' is %s %s; pack-quantized weights are 2-D I32 (%u values of "
                            "%u bits in each)",
                            shard, tn, rf_st_dtype_name(t->dtype), shp, 32 / q->bits, q->bits);
    }
    size_t base_len = t->name_len - strlen("_packed"); /* "NAME.weight" */
    char name[1024];
    if (base_len + 16 > sizeof name)
        return rf_error_set(L->err, RF_ERR_MODEL, "%s: tensor name '%s' is too long", shard, tn);
    memcpy(name, t->name, base_len);
    uint64_t rows = t->shape[0], cols = t->shape[1] * (32 / q->bits);
    uint64_t nbytes = rf_st_tensor_bytes(t);
    uint32_t parts = 1;
    static const char *const suffixes[] = {"_scale", "_zero_point", "_shape", "_g_idx"};
    raw *scale = NULL;
    for (size_t k = 0; k < sizeof suffixes / sizeof suffixes[0]; k++) {
        snprintf(name + base_len, sizeof name - base_len, "%s", suffixes[k]);
        raw *p = find_raw(L, name);
        if (!p) continue;
        if (k == 0) scale = p;
        p->absorbed = true;
        nbytes += rf_st_tensor_bytes(p->t);
        parts++;
    }
    snprintf(name + base_len, sizeof name - base_len, "_scale");
    if (!scale)
        return rf_error_set(L->err, RF_ERR_MODEL,
                            "%s: '%s' has no '%s' (pack-quantized weights need their scales)",
                            shard, tn, esc(name, sn, sizeof sn));
    const rf_st_tensor *s = scale->t;
    bool group = strcmp(q->strategy, "group") == 0 || (!q->strategy[0] && q->group_size > 0);
    bool ok = s->n_dims == 2 && s->shape[0] == rows;
    uint64_t want = 1;
    if (ok && group) {
        /* the packing pads each row to whole int32s: up to 32/bits - 1 values beyond the real
         * columns, so the scale columns may count one group less */
        uint64_t g = q->group_size, pad = 32 / q->bits - 1;
        want = (cols + g - 1) / g;
        ok = s->shape[1] * g >= cols - pad && (s->shape[1] - 1) * g < cols;
    } else if (ok && strcmp(q->strategy, "channel") == 0) {
        ok = s->shape[1] == 1;
    } else if (strcmp(q->strategy, "tensor") == 0) {
        ok = s->nelements == 1;
    }
    if (!ok) {
        char ssh[96];
        fmt_dims(s->shape, s->n_dims, ssh, sizeof ssh);
        fmt_dims(t->shape, t->n_dims, shp, sizeof shp);
        if (group)
            return rf_error_set(L->err, RF_ERR_MODEL,
                                "%s: '%s' has shape %s, but '%s' %s holds %llu x %llu int%u "
                                "values, which group %u scales as [%llu, %llu]",
                                rf_st_name(L->shards[scale->file]), esc(name, sn, sizeof sn), ssh,
                                tn, shp, (unsigned long long)rows, (unsigned long long)cols,
                                q->bits, q->group_size, (unsigned long long)rows,
                                (unsigned long long)want);
        return rf_error_set(L->err, RF_ERR_MODEL,
                            "%s: '%s' has shape %s, which does not fit '%s' %s with strategy "
                            "\"%s\"",
                            rf_st_name(L->shards[scale->file]), esc(name, sn, sizeof sn), ssh, tn,
                            shp, q->strategy);
    }
    rf_facts_tensor ft;
    memset(&ft, 0, sizeof ft);
    name[base_len] = 0;
    ft.name = name;
    if (group)
        snprintf(ft.dtype, sizeof ft.dtype, "int%u g%u", q->bits, q->group_size);
    else
        snprintf(ft.dtype, sizeof ft.dtype, "int%u %s", q->bits,
                 q->strategy[0] ? q->strategy : "packed");
    ft.n_dims = 2;
    ft.shape[0] = rows;
    ft.shape[1] = cols;
    ft.nbytes = nbytes;
    ft.row_bytes = rows ? nbytes / rows : 0;
    ft.parts = parts;
    ft.file = pk->file;
    return rf_facts_add_tensor(L->f, &ft, base_len, L->err);
}

static bool ends_with(const char *s, size_t n, const char *suffix) {
    size_t k = strlen(suffix);
    return n >= k && memcmp(s + n - k, suffix, k) == 0;
}

/* Every shard read: merge, add, account, apply the config. */
static rf_status finish(loader *L) {
    rf_status st = index_raws(L);
    if (st) return st;
    rf_model_facts *f = L->f;
    bool pack = L->have_cfg && L->cfg.quant.pack_quantized;
    static const char *const parts[] = {"_scale", "_zero_point", "_shape", "_g_idx"};
    /* first mark the parts of every packed weight, wherever they are listed, then emit in the
     * files' order: a packed weight as its logical tensor, its parts not at all */
    for (size_t i = 0; i < L->n_raws && pack; i++) {
        const rf_st_tensor *t = L->raws[i].t;
        if (!ends_with(t->name, t->name_len, ".weight_packed")) continue;
        size_t base = t->name_len - strlen("_packed");
        char name[1024];
        if (base + 16 > sizeof name) continue; /* add_packed names it */
        memcpy(name, t->name, base);
        for (size_t k = 0; k < sizeof parts / sizeof parts[0]; k++) {
            snprintf(name + base, sizeof name - base, "%s", parts[k]);
            raw *p = find_raw(L, name);
            if (p) p->absorbed = true;
        }
    }
    for (size_t i = 0; i < L->n_raws; i++) {
        raw *r = &L->raws[i];
        if (pack && ends_with(r->t->name, r->t->name_len, ".weight_packed"))
            st = add_packed(L, r);
        else if (!r->absorbed)
            st = add_plain(L, r);
        if (st) return st;
    }
    rf_facts_account(f);
    if (!pack) {
        size_t n = 0;
        for (size_t i = 0; i < L->n_raws; i++)
            n += ends_with(L->raws[i].t->name, L->raws[i].t->name_len, ".weight_packed");
        if (n)
            snprintf(f->note, sizeof f->note,
                     "%zu tensors named *.weight_packed but no compressed-tensors pack-quantized "
                     "quantization_config: reported as stored",
                     n);
    }
    if (L->have_cfg) {
        const rf_hf_config *c = &L->cfg;
        snprintf(f->arch, sizeof f->arch, "%.63s",
                 c->model_type[0] ? c->model_type : c->architecture);
        f->ctx_train = c->ctx_train;
        if (c->kv_known) f->kv = c->kv;
        snprintf(f->kv_note, sizeof f->kv_note, "%s", c->kv_note);
        const rf_hf_quant *q = &c->quant;
        if (q->present) {
            char how[40];
            if (q->group_size)
                snprintf(how, sizeof how, "group %u", q->group_size);
            else
                snprintf(how, sizeof how, "per %s", q->strategy[0] ? q->strategy : "channel");
            if (q->pack_quantized)
                snprintf(f->quant, sizeof f->quant, "%s %s: int%u, %s, %s", q->method, q->format,
                         q->bits, how, q->symmetric ? "symmetric" : "asymmetric (zero points)");
            else
                snprintf(f->quant, sizeof f->quant, "%s%s%s (tensors reported as stored)",
                         q->method[0] ? q->method : "quantization_config", q->format[0] ? " " : "",
                         q->format);
        }
        if (c->tie_word_embeddings == 0 && f->fp.role_tensors[RF_ROLE_HEAD] == 0 &&
            f->fp.role_tensors[RF_ROLE_TOKEN_EMBD] > 0) {
            size_t used = strlen(f->note);
            snprintf(f->note + used, sizeof f->note - used,
                     "%sconfig.json says tie_word_embeddings false, but no lm_head tensor is "
                     "stored: the embedding table is counted as the head",
                     used ? "; " : "");
        }
    } else {
        snprintf(f->kv_note, sizeof f->kv_note, "no config.json beside the checkpoint");
    }
    return RF_OK;
}

/* config.json beside path, when there is one. */
static rf_status read_config(loader *L, const char *path) {
    char dir[4096], cfg[4200];
    rf_path_dir(path, dir, sizeof dir);
    snprintf(cfg, sizeof cfg, "%s/config.json", dir);
    struct stat sb;
    if (stat(cfg, &sb) != 0) return RF_OK;
    rf_status st = rf_hf_config_load(cfg, &L->cfg, L->err);
    if (st) return st;
    L->have_cfg = true;
    L->f->config_path = strdup(cfg);
    if (!L->f->config_path) return rf_error_set(L->err, RF_ERR_NOMEM, "%s: out of memory", cfg);
    return RF_OK;
}

rf_status rf_facts_load_safetensors(const char *path, rf_model_facts **out, rf_error *err) {
    *out = NULL;
    loader L;
    memset(&L, 0, sizeof L);
    L.err = err;
    rf_status st;
    L.f = rf_facts_new(path, RF_FACTS_SAFETENSORS, err);
    if (!L.f) return RF_ERR_NOMEM;
    rf_st *s = NULL;
    if ((st = rf_st_open(path, &s, err))) goto out;
    if ((st = add_shard(&L, s, err))) goto out;
    if ((st = read_config(&L, path))) goto out;
    st = finish(&L);
out:
    loader_free(&L);
    if (st) {
        rf_model_facts_free(L.f);
        return st;
    }
    *out = L.f;
    return RF_OK;
}

/* A shard name from the index: a plain file name beside it. */
static bool plain_name(const char *s) {
    size_t n = strlen(s);
    return n > 0 && n < 256 && !strchr(s, '/') && strcmp(s, ".") != 0 && strcmp(s, "..") != 0;
}

/* Reads and parses the index at path (a regular file of at most MAX_INDEX_BYTES). On success
 * *root holds the document (the caller frees it with json_decref). */
static rf_status read_index(const char *path, json_t **root, rf_error *err) {
    *root = NULL;
    struct stat sb;
    if (stat(path, &sb) != 0)
        return rf_error_set(err, RF_ERR_IO, "%s: cannot open: %s", path, strerror(errno));
    if (!S_ISREG(sb.st_mode)) return rf_error_set(err, RF_ERR_IO, "%s: not a regular file", path);
    char *text = NULL;
    size_t len = 0;
    rf_status st = rf_read_file(path, MAX_INDEX_BYTES, &text, &len, err);
    if (st) return st;
    json_error_t je;
    *root = json_loadb(text, len, JSON_REJECT_DUPLICATES, &je);
    free(text);
    if (!*root) {
        char a[200];
        return rf_error_set(err, RF_ERR_FORMAT, "%s: not valid JSON: %s (line %d, column %d)", path,
                            esc(je.text, a, sizeof a), je.line, je.column);
    }
    return RF_OK;
}

/* The index's non-empty "weight_map" object (borrowed from root). */
static rf_status weight_map(const json_t *root, const char *path, const json_t **out,
                            rf_error *err) {
    const json_t *wm = json_is_object(root) ? json_object_get(root, "weight_map") : NULL;
    if (!wm || !json_is_object(wm))
        return rf_error_set(err, RF_ERR_FORMAT,
                            "%s: no \"weight_map\" object (a safetensors index maps each tensor "
                            "to its shard file)",
                            path);
    if (json_object_size(wm) == 0)
        return rf_error_set(err, RF_ERR_FORMAT, "%s: the weight_map is empty", path);
    *out = wm;
    return RF_OK;
}

/* Opens every shard the weight map names (a plain file name beside the index, each once) into
 * L; shard_ix gets shard name -> its index in L->shards. */
static rf_status open_shards(loader *L, const char *path, const json_t *wm, json_t *shard_ix,
                             rf_error *err) {
    char a[200], b[200];
    char dir[4096];
    rf_path_dir(path, dir, sizeof dir);
    const char *tname;
    const json_t *sv;
    json_object_foreach((json_t *)wm, tname, sv) {
        if (!json_is_string(sv))
            return rf_error_set(err, RF_ERR_FORMAT,
                                "%s: weight_map[\"%s\"] is not a string naming a shard file", path,
                                esc(tname, a, sizeof a));
        const char *sname = json_string_value(sv);
        if (json_object_get(shard_ix, sname)) continue;
        if (!plain_name(sname))
            return rf_error_set(err, RF_ERR_FORMAT,
                                "%s: weight_map[\"%s\"] names shard \"%s\": a shard must be a "
                                "file name beside the index (no '/', '.' or '..')",
                                path, esc(tname, a, sizeof a), esc(sname, b, sizeof b));
        if (L->n_shards >= MAX_SHARDS)
            return rf_error_set(err, RF_ERR_FORMAT, "%s: names more than %d shards", path,
                                MAX_SHARDS);
        char spath[4400];
        snprintf(spath, sizeof spath, "%s/%s", dir, sname);
        struct stat ss;
        if (stat(spath, &ss) != 0) {
            int e = errno;
            return rf_error_set(
                err, RF_ERR_IO,
                "%s: names shard '%s' (for tensor '%s'), which cannot be opened: %s", path,
                esc(sname, b, sizeof b), esc(tname, a, sizeof a), strerror(e));
        }
        rf_st *s = NULL;
        rf_status st = rf_st_open(spath, &s, err);
        if (st) return st;
        if (json_object_set_new(shard_ix, sname, json_integer((json_int_t)L->n_shards))) {
            rf_st_close(s);
            return rf_error_set(err, RF_ERR_NOMEM, "%s: out of memory", path);
        }
        if ((st = add_shard(L, s, err))) return st;
    }
    return RF_OK;
}

/* Every shard tensor is in the index, mapped to that shard; every index tensor is in its
 * shard. */
static rf_status check_index_agrees(const loader *L, const char *path, const json_t *wm,
                                    const json_t *shard_ix, rf_error *err) {
    char a[200], b[200];
    const char *sname;
    const json_t *sv;
    json_object_foreach((json_t *)shard_ix, sname, sv) {
        const rf_st *s = L->shards[json_integer_value(sv)];
        for (size_t i = 0; i < rf_st_n_tensors(s); i++) {
            const rf_st_tensor *t = rf_st_tensor_at(s, i);
            const json_t *m = json_object_getn(wm, t->name, t->name_len);
            if (!m)
                return rf_error_set(
                    err, RF_ERR_FORMAT, "%s: holds tensor '%s', which the index %s does not list",
                    rf_st_name(s), rf_escaped(t->name, t->name_len, a, sizeof a), path);
            if (strcmp(json_string_value(m), sname) != 0)
                return rf_error_set(err, RF_ERR_FORMAT,
                                    "%s: holds tensor '%s', which the index %s maps to shard '%s'",
                                    rf_st_name(s), rf_escaped(t->name, t->name_len, a, sizeof a),
                                    path, esc(json_string_value(m), b, sizeof b));
        }
    }
    const char *tname;
    json_object_foreach((json_t *)wm, tname, sv) {
        const json_t *ix = json_object_get(shard_ix, json_string_value(sv));
        const rf_st *s = L->shards[json_integer_value(ix)];
        if (!rf_st_find(s, tname))
            return rf_error_set(err, RF_ERR_FORMAT,
                                "%s: maps tensor '%s' to shard '%s', which does not hold it", path,
                                esc(tname, a, sizeof a), esc(json_string_value(sv), b, sizeof b));
    }
    return RF_OK;
}

/* metadata.total_size: what the writer said the tensors hold; a note when it disagrees. */
static void note_total_size(rf_model_facts *f, const json_t *root) {
    const json_t *md = json_object_get(root, "metadata");
    const json_t *ts = md && json_is_object(md) ? json_object_get(md, "total_size") : NULL;
    if (ts && json_is_integer(ts) && (uint64_t)json_integer_value(ts) != f->fp.total_bytes) {
        size_t used = strlen(f->note);
        snprintf(f->note + used, sizeof f->note - used,
                 "%sthe index's metadata.total_size is %lld B; the shards' tensors hold %llu B",
                 used ? "; " : "", (long long)json_integer_value(ts),
                 (unsigned long long)f->fp.total_bytes);
    }
}

rf_status rf_facts_load_index(const char *path, rf_model_facts **out, rf_error *err) {
    *out = NULL;
    loader L;
    memset(&L, 0, sizeof L);
    L.err = err;
    rf_status st = RF_OK;
    json_t *root = NULL, *shard_ix = NULL;
    const json_t *wm = NULL;
    L.f = rf_facts_new(path, RF_FACTS_SAFETENSORS, err);
    if (!L.f) return RF_ERR_NOMEM;
    L.f->index_path = strdup(path);
    if (!L.f->index_path) {
        st = rf_error_set(err, RF_ERR_NOMEM, "%s: out of memory", path);
        goto out;
    }
    if ((st = read_index(path, &root, err)) || (st = weight_map(root, path, &wm, err))) goto out;
    shard_ix = json_object(); /* shard name -> its index in L.shards */
    if (!shard_ix) {
        st = rf_error_set(err, RF_ERR_NOMEM, "%s: out of memory", path);
        goto out;
    }
    if ((st = open_shards(&L, path, wm, shard_ix, err)) ||
        (st = check_index_agrees(&L, path, wm, shard_ix, err)) || (st = read_config(&L, path)) ||
        (st = finish(&L)))
        goto out;
    note_total_size(L.f, root);
out:
    json_decref(root);
    json_decref(shard_ix);
    loader_free(&L);
    if (st) {
        rf_model_facts_free(L.f);
        return st;
    }
    *out = L.f;
    return RF_OK;
}
