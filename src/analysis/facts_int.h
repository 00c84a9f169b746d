/* facts_int.h: what the facts loaders (facts.c, facts_gguf.c, facts_st.c) share. Internal to
 * src/analysis/. */
#ifndef RF_ANALYSIS_FACTS_INT_H
#define RF_ANALYSIS_FACTS_INT_H

#include "analysis/facts.h"

/* A fresh, empty facts record for path (copied); NULL (with err set) when out of memory. */
rf_model_facts *rf_facts_new(const char *path, rf_facts_format format, rf_error *err);

/* Appends a file (path copied); its index in *idx. */
rf_status rf_facts_add_file(rf_model_facts *f, const char *path, uint64_t size, uint64_t header,
                            uint32_t *idx, rf_error *err);

/* Appends a tensor: t is copied and t->name (name_len bytes, borrowed) duplicated; the role is
 * classified here. */
rf_status rf_facts_add_tensor(rf_model_facts *f, const rf_facts_tensor *t, size_t name_len,
                              rf_error *err);

/* Fills f->fp from the tensor list (called once every tensor is in). */
void rf_facts_account(rf_model_facts *f);

/* The safetensors loaders (facts_st.c): path is a .safetensors file, an index .json, or a
 * directory (kind resolved by the caller). */
rf_status rf_facts_load_safetensors(const char *path, rf_model_facts **out, rf_error *err);
rf_status rf_facts_load_index(const char *path, rf_model_facts **out, rf_error *err);

#endif
