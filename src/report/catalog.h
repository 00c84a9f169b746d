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
    char prices_path[4096]; /* the prices file read (or tried), for messages */
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
/* An instance a run file names (a backend's "instance" or price.instance): as
 * rf_catalog_instance, but a name the file lacks (or a file that could not be read) is
 * RF_ERR_ARG naming the instance type, the prices file and how to add it. */
rf_status rf_catalog_need_instance(const rf_catalog *c, const char *name, rf_price *out,
                                   rf_error *err);
/* The assumed instance of the local backend. */
bool rf_catalog_local(const rf_catalog *c, rf_price *out);
/* A per-token price whose key occurs in text (a model id or a backend URI). */
bool rf_catalog_per_token(const rf_catalog *c, const char *text, rf_price *out);

/* ---- editing the prices file (roofline prices) ---- */

/* The prices file at path as a JSON object to edit; when the file does not exist and missing_ok,
 * a new one holding only "about". RF_ERR_IO / RF_ERR_FORMAT naming the path otherwise. Caller
 * frees (json_decref). */
rf_status rf_prices_load(const char *path, bool missing_ok, json_t **out, rf_error *err);
/* Sets instances[name] to usd_per_hour with its source, date and region, keeping the entry's
 * other fields (hardware) and dropping an "assumption" mark. RF_ERR_FORMAT when "instances" is
 * not an object; RF_ERR_NOMEM. */
rf_status rf_prices_set_instance(json_t *prices, const char *name, double usd_per_hour,
                                 const char *source, const char *date, const char *region,
                                 rf_error *err);
/* Sets per_token[model_id] likewise ($ per million input and output tokens). */
rf_status rf_prices_set_per_token(json_t *prices, const char *model_id, double usd_per_m_input,
                                  double usd_per_m_output, const char *name, const char *source,
                                  const char *date, const char *region, rf_error *err);
/* Writes prices to path (indented, through a temporary file and a rename). */
rf_status rf_prices_save(const json_t *prices, const char *path, rf_error *err);

typedef struct rf_accel {
    const char *name, *source;
    double mem_bw_gbs, mem_gb;
} rf_accel;

/* The accelerator whose name occurs in hardware (case-insensitive, whole words; the longest
 * such name wins: "NVIDIA H100 PCIe" over "NVIDIA H100"). */
bool rf_catalog_accelerator(const rf_catalog *c, const char *hardware, rf_accel *out);

#endif
