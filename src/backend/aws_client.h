/* aws_client.h: what the AWS backends (sagemaker:, bedrock:) share: the URI
 * "SCHEME:REGION/NAME" (REGION may be empty: AWS_REGION / AWS_DEFAULT_REGION then), the
 * credentials, the endpoint (endpoint.h) and URLs built on the escaped NAME, and the
 * addressing and signing of one attempt on a libcurl handle (sign.h).
 *
 * Ownership: rf_bk_aws_client owns its strings and credentials (rf_bk_aws_client_close wipes and
 * frees them); URLs are borrowed until close.
 */
#ifndef RF_BACKEND_AWS_CLIENT_H
#define RF_BACKEND_AWS_CLIENT_H

#include <curl/curl.h>
#include <stdbool.h>

#include "aws/cred.h"
#include "aws/endpoint.h"
#include "backend/backend.h"
#include "aws/eventstream.h"
#include "roofline/status.h"
#include "util/buf.h"

typedef struct rf_bk_aws_client {
    rf_aws_service service;
    rf_aws_creds creds;
    char region[RF_AWS_REGION_MAX];
    char base[RF_AWS_URL_MAX]; /* the endpoint, no trailing '/' */
    char *name;                /* the model id or endpoint name, as given */
    char *url_plain;           /* base + prefix + escaped name + the plain suffix */
    char *url_stream;          /* ... + the streaming suffix */
} rf_bk_aws_client;

/* Checks uri = "scheme:REGION/NAME" (NAME non-empty, REGION a region name or empty with one in
 * the environment) without opening anything; the region and name are returned when the pointers
 * are not NULL (*name malloc'd, caller frees). RF_ERR_ARG names what is wrong and the shape. */
rf_status rf_bk_aws_uri_parse(const char *uri, const char *scheme, char region[RF_AWS_REGION_MAX],
                              char **name, rf_error *err);

/* An AWS backend's configuration check: the URI (rf_bk_aws_uri_parse) and, when given,
 * extra_body a JSON object. */
rf_status rf_bk_aws_validate(const rf_backend_cfg *cfg, const char *scheme, rf_error *err);

/* Parses uri, loads the credentials, resolves the endpoint and builds base + prefix + NAME
 * (escaped) + suffix URLs, e.g. ("/model/", "/converse", "/converse-stream"). */
rf_status rf_bk_aws_client_open(rf_bk_aws_client *c, rf_aws_service service, const char *uri,
                                const char *scheme, const char *prefix, const char *plain_suffix,
                                const char *stream_suffix, rf_error *err);
void rf_bk_aws_client_close(rf_bk_aws_client *c);

/* Addresses and signs one attempt: CURLOPT_URL (the stream or plain URL), a Content-Type of
 * application/json and the accept header line (e.g. "Accept: application/json") in *headers,
 * then rf_aws_sign_curl (which sets CURLOPT_HTTPHEADER). */
rf_status rf_bk_aws_client_prepare(const rf_bk_aws_client *c, CURL *easy, bool stream,
                                   const char *accept_line, const rf_buf *body,
                                   struct curl_slist **headers, rf_error *err);

/* An event stream's bytes into d, recording a framing error in res (invalid_json, with the
 * decoder's message; a stop by the callback is the callback's to record). false: stop. */
bool rf_bk_aws_es_feed(rf_es *d, rf_bk_result *res, const void *p, size_t n);
/* The stream ended: a message left half-way is truncated. */
void rf_bk_aws_es_end(rf_es *d, rf_bk_result *res);

#endif
