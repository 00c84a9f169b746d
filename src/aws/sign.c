/* sign.c: SigV4 (the canonical request, the string to sign and the HMAC-SHA256 key chain of
 * AWS's "Create a signed AWS API request", as botocore computes them for services other than
 * S3), and signing a libcurl easy handle with libcurl's signer or ours (sign.h). */
#include "aws/sign.h"

#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#define SIG_MAX_HEADERS 64

/* ---------------------------------------------------------------- hashing */

static void hex_of(const unsigned char *p, size_t n, char *out) {
    static const char hex[] = "0123456789abcdef";
    for (size_t i = 0; i < n; i++) {
        out[2 * i] = hex[p[i] >> 4];
        out[2 * i + 1] = hex[p[i] & 15];
    }
    out[2 * n] = 0;
}

static bool sha256_hex(const void *p, size_t n, char out[65]) {
    unsigned char md[EVP_MAX_MD_SIZE];
    unsigned int len = 0;
    if (!EVP_Digest(p ? p : "", n, md, &len, EVP_sha256(), NULL) || len != 32) return false;
    hex_of(md, 32, out);
    return true;
}

static bool hmac(const void *key, size_t kn, const char *msg, unsigned char out[32]) {
    unsigned int len = 0;
    return HMAC(EVP_sha256(), key, (int)kn, (const unsigned char *)msg, strlen(msg), out, &len) &&
           len == 32;
}

/* ---------------------------------------------------------------- canonical request */

static bool unreserved(unsigned char c) {
    return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-' ||
           c == '.' || c == '_' || c == '~';
}

/* The canonical URI: the path's dot segments and empty segments removed (botocore's
 * remove_dot_segments), then every byte but unreserved ones and '/' percent-encoded: a '%' of
 * the path as sent becomes %25 (AWS's second encoding). */
static rf_status canonical_uri(const char *path, rf_buf *out) {
    if (!path || !*path) return rf_buf_append_str(out, "/");
    const char *seg[256];
    size_t segn[256];
    int n = 0;
    for (const char *p = path; *p;) {
        const char *e = strchr(p, '/');
        size_t len = e ? (size_t)(e - p) : strlen(p);
        if (len == 2 && !strncmp(p, "..", 2)) {
            if (n) n--;
        } else if (len && !(len == 1 && *p == '.')) {
            if (n == 256) return RF_ERR_ARG;
            seg[n] = p, segn[n] = len, n++;
        }
        p += len;
        if (*p == '/') p++;
    }
    rf_status st = path[0] == '/' ? rf_buf_append_str(out, "/") : RF_OK;
    for (int i = 0; !st && i < n; i++) {
        if (i) st = rf_buf_append_str(out, "/");
        for (size_t k = 0; !st && k < segn[i]; k++) {
            unsigned char c = (unsigned char)seg[i][k];
            st = unreserved(c) ? rf_buf_append(out, &c, 1) : rf_buf_printf(out, "%%%02X", c);
        }
    }
    size_t pl = strlen(path);
    if (!st && n && path[pl - 1] == '/') st = rf_buf_append_str(out, "/");
    if (!st && !out->len) st = rf_buf_append_str(out, "/");
    return st;
}

typedef struct pair {
    const char *p;
    size_t n;
} pair;

static int cmp_pair(const void *a, const void *b) {
    const pair *x = a, *y = b;
    size_t n = x->n < y->n ? x->n : y->n;
    int c = memcmp(x->p, y->p, n);
    return c ? c : (x->n > y->n) - (x->n < y->n);
}

/* The query's key=value pairs as sent, sorted bytewise (botocore's _canonical_query_string_url;
 * a pair without '=' gets one). */
static rf_status canonical_query(const char *q, rf_buf *out) {
    if (!q || !*q) return RF_OK;
    pair pairs[128];
    size_t n = 0;
    for (const char *p = q;;) {
        const char *e = strchr(p, '&');
        size_t len = e ? (size_t)(e - p) : strlen(p);
        if (n == 128) return RF_ERR_ARG;
        pairs[n].p = p, pairs[n].n = len, n++;
        if (!e) break;
        p = e + 1;
    }
    qsort(pairs, n, sizeof pairs[0], cmp_pair);
    rf_status st = RF_OK;
    for (size_t i = 0; !st && i < n; i++) {
        if (i) st = rf_buf_append_str(out, "&");
        if (!st) st = rf_buf_append(out, pairs[i].p, pairs[i].n);
        if (!st && !memchr(pairs[i].p, '=', pairs[i].n)) st = rf_buf_append_str(out, "=");
    }
    return st;
}

typedef struct hdr {
    char name[64];
    const char *val; /* trimmed start, not terminated */
    size_t vn;
} hdr;

static int cmp_hdr(const void *a, const void *b) {
    return strcmp(((const hdr *)a)->name, ((const hdr *)b)->name);
}

/* Adds "name: value" (name case-insensitive) to hs; a value is signed trimmed, with inner runs
 * of spaces as one (AWS's Trimall). */
static rf_status add_hdr(hdr *hs, int *n, const char *name, size_t nn, const char *val, size_t vn) {
    while (vn && (*val == ' ' || *val == '\t')) val++, vn--;
    while (vn && (val[vn - 1] == ' ' || val[vn - 1] == '\t')) vn--;
    if (!nn || nn >= sizeof hs[0].name || *n == SIG_MAX_HEADERS) return RF_ERR_ARG;
    hdr *h = &hs[(*n)++];
    for (size_t i = 0; i < nn; i++) {
        unsigned char ch = (unsigned char)name[i];
        if (ch <= ' ' || ch >= 0x7f) return RF_ERR_ARG;
        h->name[i] = (char)(ch >= 'A' && ch <= 'Z' ? ch + 32 : ch);
    }
    h->name[nn] = 0;
    h->val = val;
    h->vn = vn;
    return RF_OK;
}

static rf_status append_trimall(rf_buf *out, const char *v, size_t n) {
    rf_status st = RF_OK;
    bool space = false;
    for (size_t i = 0; !st && i < n; i++) {
        if (v[i] == ' ' || v[i] == '\t') {
            space = true;
            continue;
        }
        if (space) st = rf_buf_append_str(out, " ");
        space = false;
        if (!st) st = rf_buf_append(out, &v[i], 1);
    }
    return st;
}

rf_status rf_aws_sigv4(const rf_aws_creds *c, const char *region, const char *service,
                       const rf_aws_sig_input *in, char *auth, size_t cap, rf_buf *canonical,
                       rf_error *err) {
    const char *date = in->amz_date ? in->amz_date : "";
    bool date_ok = strlen(date) == 16 && date[8] == 'T' && date[15] == 'Z';
    for (int i = 0; date_ok && i < 15; i++) date_ok = i == 8 || (date[i] >= '0' && date[i] <= '9');
    if (!date_ok)
        return rf_error_set(err, RF_ERR_ARG, "sigv4: amz_date '%.20s' is not YYYYMMDDTHHMMSSZ",
                            date);
    if (!in->method || !*in->method || strpbrk(in->method, " \r\n"))
        return rf_error_set(err, RF_ERR_ARG, "sigv4: no valid method");
    if (!in->host || !*in->host || strpbrk(in->host, "\r\n"))
        return rf_error_set(err, RF_ERR_ARG, "sigv4: no valid host");
    if (!c || !c->access_key || !c->secret_key)
        return rf_error_set(err, RF_ERR_ARG, "sigv4: no credentials");

    hdr hs[SIG_MAX_HEADERS];
    int n = 0;
    rf_status st = add_hdr(hs, &n, "host", 4, in->host, strlen(in->host));
    if (!st) st = add_hdr(hs, &n, "x-amz-date", 10, date, 16);
    if (!st && c->token)
        st = add_hdr(hs, &n, "x-amz-security-token", 20, c->token, strlen(c->token));
    for (const struct curl_slist *l = in->headers; !st && l; l = l->next) {
        const char *colon = strchr(l->data, ':');
        if (!colon) /* "Name;" (an empty header for libcurl): nothing worth signing */
            continue;
        const char *v = colon + 1;
        while (*v == ' ' || *v == '\t') v++;
        if (!*v) continue; /* "Name:" removes a header libcurl would add */
        if (strpbrk(v, "\r\n")) st = RF_ERR_ARG;
        if (!st) st = add_hdr(hs, &n, l->data, (size_t)(colon - l->data), v, strlen(v));
        if (st)
            return rf_error_set(err, RF_ERR_ARG, "sigv4: header line %.*s... cannot be signed",
                                (int)(colon - l->data) < 60 ? (int)(colon - l->data) : 60, l->data);
    }
    if (st) return rf_error_set(err, RF_ERR_ARG, "sigv4: too many headers or a bad header name");
    qsort(hs, (size_t)n, sizeof hs[0], cmp_hdr);

    rf_buf creq, tmp;
    rf_buf_init(&creq, 0);
    rf_buf_init(&tmp, 0);
    char body_hash[65], creq_hash[65];
    char scope[160];
    unsigned char k1[32], k2[32], k3[32], k4[32], sig[32];
    char sig_hex[65];
    if (!sha256_hex(in->body, in->body_len, body_hash)) {
        st = rf_error_set(err, RF_ERR_INTERNAL, "sigv4: SHA-256 failed (libcrypto)");
        goto out;
    }
    st = rf_buf_printf(&creq, "%s\n", in->method);
    if (!st) st = canonical_uri(in->path, &creq);
    if (st == RF_ERR_ARG) {
        st = rf_error_set(err, RF_ERR_ARG, "sigv4: the path has too many segments");
        goto out;
    }
    if (!st) st = rf_buf_append_str(&creq, "\n");
    if (!st) st = canonical_query(in->query, &creq);
    if (st == RF_ERR_ARG) {
        st = rf_error_set(err, RF_ERR_ARG, "sigv4: the query has too many parameters");
        goto out;
    }
    if (!st) st = rf_buf_append_str(&creq, "\n");
    /* canonical headers: a name given twice is signed once, its values joined with ',' */
    for (int i = 0; !st && i < n; i++) {
        bool cont = i && !strcmp(hs[i].name, hs[i - 1].name);
        st = cont ? rf_buf_append_str(&creq, ",") : rf_buf_printf(&creq, "%s:", hs[i].name);
        if (!st) st = append_trimall(&creq, hs[i].val, hs[i].vn);
        bool last = i + 1 == n || strcmp(hs[i + 1].name, hs[i].name);
        if (!st && last) st = rf_buf_append_str(&creq, "\n");
        if (!st && last) st = rf_buf_printf(&tmp, "%s%s", tmp.len ? ";" : "", hs[i].name);
    }
    if (!st) st = rf_buf_append_str(&creq, "\n");
    if (!st) st = rf_buf_append(&creq, tmp.data, tmp.len);
    if (!st) st = rf_buf_printf(&creq, "\n%s", body_hash);
    if (!st) st = rf_buf_terminate(&creq);
    if (!st) st = rf_buf_terminate(&tmp);
    if (st) {
        st = rf_error_set(err, RF_ERR_NOMEM, "sigv4: out of memory");
        goto out;
    }
    if (!sha256_hex(creq.data, creq.len, creq_hash)) {
        st = rf_error_set(err, RF_ERR_INTERNAL, "sigv4: SHA-256 failed (libcrypto)");
        goto out;
    }
    int sn = snprintf(scope, sizeof scope, "%.8s/%s/%s/aws4_request", date, region, service);
    if (sn < 0 || (size_t)sn >= sizeof scope) {
        st = rf_error_set(err, RF_ERR_ARG, "sigv4: region or service name too long");
        goto out;
    }
    char sts[512];
    snprintf(sts, sizeof sts, "AWS4-HMAC-SHA256\n%s\n%s\n%s", date, scope, creq_hash);
    char key0[256], day[9];
    int kn = snprintf(key0, sizeof key0, "AWS4%s", c->secret_key);
    memcpy(day, date, 8);
    day[8] = 0;
    bool ok = kn > 0 && (size_t)kn < sizeof key0 && hmac(key0, (size_t)kn, day, k1) &&
              hmac(k1, 32, region, k2) && hmac(k2, 32, service, k3) &&
              hmac(k3, 32, "aws4_request", k4) && hmac(k4, 32, sts, sig);
    explicit_bzero(key0, sizeof key0);
    if (!ok) {
        st = rf_error_set(err, RF_ERR_INTERNAL,
                          "sigv4: HMAC-SHA256 failed (or a secret key "
                          "over 250 bytes)");
        goto out;
    }
    hex_of(sig, 32, sig_hex);
    int an =
        snprintf(auth, cap, "AWS4-HMAC-SHA256 Credential=%s/%s, SignedHeaders=%s, Signature=%s",
                 c->access_key, scope, (const char *)tmp.data, sig_hex);
    if (an < 0 || (size_t)an >= cap) {
        if (cap) auth[0] = 0;
        st = rf_error_set(err, RF_ERR_ARG, "sigv4: the Authorization header does not fit");
        goto out;
    }
    if (canonical) {
        rf_buf_reset(canonical);
        st = rf_buf_append(canonical, creq.data, creq.len);
        if (!st) st = rf_buf_terminate(canonical);
        if (st) st = rf_error_set(err, RF_ERR_NOMEM, "sigv4: out of memory");
    }
out:
    explicit_bzero(k1, sizeof k1);
    explicit_bzero(k2, sizeof k2);
    explicit_bzero(k3, sizeof k3);
    explicit_bzero(k4, sizeof k4);
    rf_buf_free(&creq);
    rf_buf_free(&tmp);
    return st;
}

/* ---------------------------------------------------------------- libcurl */

bool rf_aws_curl_signs_path(const char *path) {
    if (!path || !strchr(path, '%')) return true;
    const curl_version_info_data *v = curl_version_info(CURLVERSION_NOW);
    return v && v->version_num >= RF_AWS_CURL_PATH_FIX_VERSION;
}

static rf_status append_hdr(struct curl_slist **headers, rf_error *err, const char *fmt,
                            const char *a, const char *b) {
    char line[4096];
    int n = snprintf(line, sizeof line, fmt, a, b);
    struct curl_slist *l = NULL;
    if (n > 0 && (size_t)n < sizeof line) l = curl_slist_append(*headers, line);
    explicit_bzero(line, sizeof line);
    if (!l) return rf_error_set(err, RF_ERR_NOMEM, "sigv4: a header does not fit (or no memory)");
    *headers = l;
    return RF_OK;
}

rf_status rf_aws_sign_curl(CURL *easy, const rf_aws_creds *c, const char *region,
                           const char *service, const char *method, const char *url,
                           const void *body, size_t body_len, rf_aws_signer signer,
                           struct curl_slist **headers, rf_error *err) {
    if (!c || !c->access_key || !c->secret_key)
        return rf_error_set(err, RF_ERR_ARG, "sigv4: no credentials");
    CURLU *u = curl_url();
    if (!u) return rf_error_set(err, RF_ERR_NOMEM, "sigv4: out of memory");
    char *host = NULL, *port = NULL, *path = NULL, *query = NULL;
    rf_status st = RF_OK;
    if (curl_url_set(u, CURLUPART_URL, url, 0) || curl_url_get(u, CURLUPART_HOST, &host, 0) ||
        curl_url_get(u, CURLUPART_PATH, &path, 0)) {
        st = rf_error_set(err, RF_ERR_ARG, "sigv4: cannot parse the URL");
        goto out;
    }
    curl_url_get(u, CURLUPART_PORT, &port, 0); /* only when the URL names one */
    curl_url_get(u, CURLUPART_QUERY, &query, 0);
    bool own = signer == RF_AWS_SIGNER_OWN ||
               (signer == RF_AWS_SIGNER_AUTO && !rf_aws_curl_signs_path(path));
    if (!own) {
        char param[160];
        snprintf(param, sizeof param, "aws:amz:%s:%s", region, service);
        curl_easy_setopt(easy, CURLOPT_AWS_SIGV4, param);
        char up[1024];
        int n = snprintf(up, sizeof up, "%s:%s", c->access_key, c->secret_key);
        if (n < 0 || (size_t)n >= sizeof up) {
            explicit_bzero(up, sizeof up);
            st = rf_error_set(err, RF_ERR_ARG, "sigv4: the keys are too long");
            goto out;
        }
        curl_easy_setopt(easy, CURLOPT_USERPWD, up); /* libcurl keeps its own copy */
        explicit_bzero(up, sizeof up);
        if (c->token) st = append_hdr(headers, err, "x-amz-security-token: %s%s", c->token, "");
        if (!st) curl_easy_setopt(easy, CURLOPT_HTTPHEADER, *headers);
        goto out;
    }
    curl_easy_setopt(easy, CURLOPT_AWS_SIGV4, NULL);
    curl_easy_setopt(easy, CURLOPT_USERPWD, NULL);
    /* the Host header is set, not left to libcurl, so what is signed is what is sent */
    char hostport[320];
    bool v6 = strchr(host, ':') != NULL;
    snprintf(hostport, sizeof hostport, "%s%s%s%s%s", v6 ? "[" : "", host, v6 ? "]" : "",
             port ? ":" : "", port ? port : "");
    char date[17];
    time_t now = time(NULL);
    struct tm tm;
    gmtime_r(&now, &tm);
    strftime(date, sizeof date, "%Y%m%dT%H%M%SZ", &tm);
    rf_aws_sig_input in = {.method = method,
                           .host = hostport,
                           .path = path,
                           .query = query,
                           .headers = *headers,
                           .body = body,
                           .body_len = body_len,
                           .amz_date = date};
    char auth[1024];
    st = rf_aws_sigv4(c, region, service, &in, auth, sizeof auth, NULL, err);
    if (!st) st = append_hdr(headers, err, "Host: %s%s", hostport, "");
    if (!st) st = append_hdr(headers, err, "X-Amz-Date: %s%s", date, "");
    if (!st && c->token) st = append_hdr(headers, err, "x-amz-security-token: %s%s", c->token, "");
    if (!st) st = append_hdr(headers, err, "Authorization: %s%s", auth, "");
    if (!st) curl_easy_setopt(easy, CURLOPT_HTTPHEADER, *headers);
out:
    curl_free(host);
    curl_free(port);
    curl_free(path);
    curl_free(query);
    curl_url_cleanup(u);
    return st;
}
