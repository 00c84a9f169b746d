/* catalog.h: the reference tables the report prices and bounds runs with: instance and
 * per-token prices (data/prices.json) and accelerators' memory bandwidth and size
 * (data/accelerators.json). Each entry carries its source; the local backend's price is an
 * assumption the prices file says it is.
 *
 * Ownership: rf_catalog_load fills a catalog freed by rf_catalog_free; returned entries and
 * strings are borrowed from it.
 */
#ifndef RF_REPORT_CATALOG_H
#define RF_REPORT_CATALOG_H

#include <jansson.h>
#include <stdbool.h>

#include "roofline/status.h"

typedef struct rf_catalog {
    json_t *prices;       /* prices.json, or NULL when it could not be read */
    json_t *accelerators; /* accelerators.json, or NULL */
    char prices_error[512], accel_error[512];
} rf_catalog;

/* NULL paths: the data directory's files. A file that cannot be read is not an error here: its
 * error text is kept, and lookups in it find nothing (the report marks those figures unknown). */
void rf_catalog_load(rf_catalog *c, const char *prices_path, const char *accel_path);
void rf_catalog_free(rf_catalog *c);

typedef struct rf_price {
    double usd_per_hour;                      /* instance; 0 when per token */
    double usd_per_m_input, usd_per_m_output; /* per token; 0 when an instance */
    const char *name, *source, *date;
    bool assumption;
} rf_price;

/* An instance by name ("g6.xlarge"). */
bool rf_catalog_instance(const rf_catalog *c, const char *name, rf_price *out);
/* The assumed instance of the local backend. */
bool rf_catalog_local(const rf_catalog *c, rf_price *out);
/* A per-token price whose key occurs in text (a model id or a backend URI). */
bool rf_catalog_per_token(const rf_catalog *c, const char *text, rf_price *out);

typedef struct rf_accel {
    const char *name, *source;
    double mem_bw_gbs, mem_gb;
} rf_accel;

/* The accelerator whose name occurs in hardware (case-insensitive, whole words; the longest
 * such name wins: "NVIDIA H100 PCIe" over "NVIDIA H100"). */
bool rf_catalog_accelerator(const rf_catalog *c, const char *hardware, rf_accel *out);

#endif
