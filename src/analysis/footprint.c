/* footprint.c: bytes by role and dtype, and the decode read rules (see footprint.h). */
#include "analysis/footprint.h"

#include <stdio.h>
#include <string.h>

static uint64_t sat_add(uint64_t a, uint64_t b) {
    return a > UINT64_MAX - b ? UINT64_MAX : a + b;
}

void rf_footprint_init(rf_footprint *fp) {
    memset(fp, 0, sizeof *fp);
}

void rf_footprint_add(rf_footprint *fp, rf_role role, const char *dtype_label, uint64_t nbytes,
                      uint64_t row_bytes) {
    if ((unsigned)role >= RF_ROLE_COUNT) role = RF_ROLE_BODY;
    fp->role_bytes[role] = sat_add(fp->role_bytes[role], nbytes);
    fp->role_tensors[role]++;
    fp->role_rows[role] = sat_add(fp->role_rows[role], row_bytes);
    fp->total_bytes = sat_add(fp->total_bytes, nbytes);
    fp->total_tensors++;
    const char *label = dtype_label && *dtype_label ? dtype_label : "?";
    int i = 0;
    for (; i < fp->n_dtype; i++)
        if (strncmp(fp->dtype[i].label, label, RF_DTYPE_LABEL_MAX - 1) == 0) break;
    if (i == fp->n_dtype) {
        if (fp->n_dtype == RF_FOOTPRINT_MAX_DTYPES) {
            i = RF_FOOTPRINT_MAX_DTYPES - 1; /* the last entry becomes "other" */
            snprintf(fp->dtype[i].label, sizeof fp->dtype[i].label, "other");
        } else {
            snprintf(fp->dtype[i].label, sizeof fp->dtype[i].label, "%s", label);
            fp->n_dtype++;
        }
    }
    fp->dtype[i].tensors++;
    fp->dtype[i].bytes = sat_add(fp->dtype[i].bytes, nbytes);
}

bool rf_footprint_tied(const rf_footprint *fp) {
    return fp->role_tensors[RF_ROLE_HEAD] == 0 && fp->role_tensors[RF_ROLE_TOKEN_EMBD] > 0;
}

rf_token_read rf_footprint_read(const rf_footprint *fp, const rf_kv_geom *geom, int64_t ctx,
                                rf_kv_dtype kvt) {
    rf_token_read r;
    memset(&r, 0, sizeof r);
    r.ctx = ctx < 0 ? 0 : ctx;
    r.kv_dtype = kvt;
    r.tied = rf_footprint_tied(fp);
    r.role[RF_ROLE_BODY] = fp->role_bytes[RF_ROLE_BODY];
    r.role[RF_ROLE_NORMS] = fp->role_bytes[RF_ROLE_NORMS];
    r.role[RF_ROLE_HEAD] = fp->role_bytes[RF_ROLE_HEAD];
    if (r.tied)
        r.role[RF_ROLE_HEAD] = sat_add(r.role[RF_ROLE_HEAD], fp->role_bytes[RF_ROLE_TOKEN_EMBD]);
    else
        r.role[RF_ROLE_TOKEN_EMBD] = fp->role_rows[RF_ROLE_TOKEN_EMBD];
    r.role[RF_ROLE_PER_LAYER_EMBD] = fp->role_rows[RF_ROLE_PER_LAYER_EMBD];
    /* RF_ROLE_VISION and RF_ROLE_AUDIO: 0 */
    for (int i = 0; i < RF_ROLE_COUNT; i++) r.weights = sat_add(r.weights, r.role[i]);
    r.kv_known = geom && geom->n_layer > 0;
    if (r.kv_known) {
        int64_t c = r.ctx > RF_KV_MAX_CTX ? RF_KV_MAX_CTX : r.ctx;
        r.kv = rf_kv_read_bytes(geom, c, kvt);
    }
    r.total = sat_add(r.weights, r.kv);
    return r;
}
