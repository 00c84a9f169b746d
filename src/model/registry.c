/* registry.c: the embedded models by name (see registry.h). */
#include "model/registry.h"

#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

struct rf_model_registry {
    json_t *root;
    rf_model_entry *e;
    size_t n;
};

static const char *data_dir(void) {
    const char *d = getenv("ROOFLINE_DATA");
    return d && *d ? d : ROOFLINE_DATA_DIR;
}

const char *rf_models_dir(void) {
    const char *d = getenv("ROOFLINE_MODELS");
    return d && *d ? d : ROOFLINE_MODELS_DIR;
}

static const char *field(json_t *o, const char *k) {
    const char *s = json_string_value(json_object_get(o, k));
    return s ? s : "";
}

rf_status rf_model_registry_load(rf_model_registry **out, rf_error *err) {
    *out = NULL;
    char path[4096];
    if (snprintf(path, sizeof path, "%s/models.json", data_dir()) >= (int)sizeof path)
        return rf_error_set(err, RF_ERR_ARG, "ROOFLINE_DATA is too long");
    json_error_t je;
    json_t *root = json_load_file(path, JSON_REJECT_DUPLICATES, &je);
    json_t *arr = json_object_get(root, "models");
    if (!json_is_array(arr)) {
        json_decref(root);
        return rf_error_set(err, RF_ERR_FORMAT, "%s: %s", path,
                            root ? "no \"models\" array" : je.text);
    }
    rf_model_registry *r = calloc(1, sizeof *r);
    if (r) r->e = calloc(json_array_size(arr) + 1, sizeof *r->e);
    if (!r || !r->e) {
        free(r);
        json_decref(root);
        return rf_error_set(err, RF_ERR_NOMEM, "out of memory");
    }
    r->root = root;
    size_t i;
    json_t *m;
    json_array_foreach(arr, i, m) {
        if (!json_is_string(json_object_get(m, "name")) ||
            !json_is_string(json_object_get(m, "file"))) {
            rf_model_registry_free(r);
            return rf_error_set(err, RF_ERR_FORMAT, "%s: models[%zu] has no name or file", path, i);
        }
        rf_model_entry *e = &r->e[r->n++];
        e->name = field(m, "name");
        e->file = field(m, "file");
        e->arch = field(m, "arch");
        e->quant = field(m, "quant");
        e->params = field(m, "params");
        e->kind = field(m, "kind");
        e->licence = field(m, "licence");
        e->source = field(m, "source");
        e->install = field(m, "install");
        e->sha256 = field(m, "sha256");
        e->size = json_integer_value(json_object_get(m, "size"));
    }
    *out = r;
    return RF_OK;
}

void rf_model_registry_free(rf_model_registry *r) {
    if (!r) return;
    json_decref(r->root);
    free(r->e);
    free(r);
}

size_t rf_model_registry_count(const rf_model_registry *r) {
    return r->n;
}

const rf_model_entry *rf_model_registry_at(const rf_model_registry *r, size_t i) {
    return i < r->n ? &r->e[i] : NULL;
}

const rf_model_entry *rf_model_registry_find(const rf_model_registry *r, const char *name) {
    for (size_t i = 0; name && i < r->n; i++)
        if (!strcmp(r->e[i].name, name)) return &r->e[i];
    return NULL;
}

rf_status rf_model_entry_path(const rf_model_entry *e, char *out, size_t cap, rf_error *err) {
    if (snprintf(out, cap, "%s/%s", rf_models_dir(), e->file) >= (int)cap)
        return rf_error_set(err, RF_ERR_ARG, "the models directory's path is too long");
    return RF_OK;
}

bool rf_model_entry_installed(const rf_model_entry *e) {
    char path[4096];
    struct stat sb;
    return rf_model_entry_path(e, path, sizeof path, NULL) == RF_OK && stat(path, &sb) == 0 &&
           (e->size <= 0 || sb.st_size == e->size);
}

rf_status rf_model_resolve(const char *what, char *out, size_t cap, rf_error *err) {
    if (!what || !*what) {
        const char *env = getenv("ROOFLINE_MODEL");
        what = env && *env ? env : RF_MODEL_DEFAULT_NAME;
    }
    rf_model_registry *r = NULL;
    rf_error rerr = {0};
    rf_status st = rf_model_registry_load(&r, &rerr);
    const rf_model_entry *e = st ? NULL : rf_model_registry_find(r, what);
    if (!e) { /* a path, unless it looks like a name that is not one */
        struct stat sb;
        bool pathlike = strchr(what, '/') || strchr(what, '.') || stat(what, &sb) == 0;
        if (!pathlike) {
            char names[512] = "";
            size_t w = 0;
            for (size_t i = 0; r && i < r->n && w < sizeof names; i++)
                w += (size_t)snprintf(names + w, sizeof names - w, "%s%s", i ? ", " : "",
                                      r->e[i].name);
            rf_model_registry_free(r);
            if (st) return rf_error_set(err, st, "cannot look up model '%s': %s", what, rerr.msg);
            return rf_error_set(err, RF_ERR_ARG,
                                "'%s' is neither an embedded model (%s; roofline models) nor a "
                                "file",
                                what, names);
        }
        rf_model_registry_free(r);
        if (snprintf(out, cap, "%s", what) >= (int)cap)
            return rf_error_set(err, RF_ERR_ARG, "model path longer than %zu bytes", cap - 1);
        return RF_OK;
    }
    st = rf_model_entry_path(e, out, cap, err);
    if (!st && !rf_model_entry_installed(e))
        st = rf_error_set(err, RF_ERR_IO,
                          "model %s is not installed (%s missing or of the wrong size): run "
                          "scripts/setup.sh%s",
                          e->name, out, strcmp(e->install, "all") ? "" : " --models all");
    rf_model_registry_free(r);
    return st;
}
