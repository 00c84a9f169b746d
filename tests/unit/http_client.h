/* http_client.h: one blocking HTTP request with libcurl for the server tests: method, path on
 * 127.0.0.1:port, an optional JSON body and bearer key; the status (0 on a transport error)
 * and the whole body in *out (reset first, NUL-terminated). Header-only test helper; the
 * caller owns out. */
#ifndef RF_TEST_HTTP_CLIENT_H
#define RF_TEST_HTTP_CLIENT_H

#include <curl/curl.h>
#include <stdio.h>

#include "util/buf.h"

static size_t http_client_on_body(char *p, size_t size, size_t n, void *user) {
    return rf_buf_append(user, p, size * n) == RF_OK ? size * n : 0;
}

static inline long http_client_request(int port, const char *method, const char *path,
                                       const char *body, const char *key, rf_buf *out) {
    char url[256], auth[128];
    snprintf(url, sizeof url, "http://127.0.0.1:%d%s", port, path);
    rf_buf_reset(out);
    CURL *c = curl_easy_init();
    if (!c) return 0;
    struct curl_slist *h = curl_slist_append(NULL, "Content-Type: application/json");
    if (key) {
        snprintf(auth, sizeof auth, "Authorization: Bearer %s", key);
        h = curl_slist_append(h, auth);
    }
    curl_easy_setopt(c, CURLOPT_URL, url);
    curl_easy_setopt(c, CURLOPT_CUSTOMREQUEST, method);
    if (body) curl_easy_setopt(c, CURLOPT_POSTFIELDS, body);
    curl_easy_setopt(c, CURLOPT_HTTPHEADER, h);
    curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, http_client_on_body);
    curl_easy_setopt(c, CURLOPT_WRITEDATA, out);
    curl_easy_setopt(c, CURLOPT_TIMEOUT, 60L);
    long status = 0;
    if (curl_easy_perform(c) == CURLE_OK) curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &status);
    curl_slist_free_all(h);
    curl_easy_cleanup(c);
    rf_buf_terminate(out);
    return status;
}

#endif
