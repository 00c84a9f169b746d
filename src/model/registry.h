/* registry.h: the embedded models by name, and the one place a model the user named is turned
 * into a file path: `-m NAME` of every verb, the bench's `local:NAME` backend, `roofline models`.
 *
 * The table is data/models.json (also read by scripts/fetch_models.py, which places the files);
 * files live in the models directory (models/ in the source tree, ROOFLINE_MODELS to move it).
 * Resolution of what the user gave: NULL or "" -> $ROOFLINE_MODEL if set, else the default model
 * (gemma3-270m); a registry name -> its file in the models directory (RF_ERR_IO naming the setup
 * command when it is not installed); anything else is a path, used as given.
 *
 * Ownership: rf_model_registry_load returns a registry freed with rf_model_registry_free; the
 * entries' strings belong to it.
 */
#ifndef RF_MODEL_REGISTRY_H
#define RF_MODEL_REGISTRY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "roofline/status.h"

#define RF_MODEL_DEFAULT_NAME "gemma3-270m"

typedef struct rf_model_entry {
    const char *name, *file, *arch, *quant, *params, *kind, *licence, *source;
    const char *install; /* "default" (scripts/setup.sh) or "all" (setup.sh --models all) */
    int64_t size;
    const char *sha256;
} rf_model_entry;

typedef struct rf_model_registry rf_model_registry;

/* Reads data/models.json (ROOFLINE_DATA overrides the data directory). */
rf_status rf_model_registry_load(rf_model_registry **out, rf_error *err);
void rf_model_registry_free(rf_model_registry *r);
size_t rf_model_registry_count(const rf_model_registry *r);
const rf_model_entry *rf_model_registry_at(const rf_model_registry *r, size_t i);
const rf_model_entry *rf_model_registry_find(const rf_model_registry *r, const char *name);
/* The models directory and an entry's path there (out, cap bytes). */
const char *rf_models_dir(void);
rf_status rf_model_entry_path(const rf_model_entry *e, char *out, size_t cap, rf_error *err);
/* Whether the entry's file is in place with its size. */
bool rf_model_entry_installed(const rf_model_entry *e);

/* What the user named -> a file path in out (see the top comment). Loads the registry itself. */
rf_status rf_model_resolve(const char *what, char *out, size_t cap, rf_error *err);

#endif
