/* sign.h: AWS Signature Version 4 on a libcurl easy handle.
 *
 * rf_aws_sign_curl signs one request: with libcurl's own signer (CURLOPT_AWS_SIGV4
 * "aws:amz:REGION:SERVICE", region and service always given, credentials in CURLOPT_USERPWD,
 * the session token as an x-amz-security-token header) wherever that signer computes what AWS
 * computes, and with our SigV4 (rf_aws_sigv4: the canonical request, string to sign and HMAC
 * chain of AWS's documentation, with OpenSSL's HMAC-SHA256) where it does not: a path holding a
 * percent-escape (a Bedrock model id "a.b-v2:1" travels as /model/a.b-v2%3A1/converse) on a
 * libcurl older than 8.14.0. AWS, for every service but S3, URI-encodes the path once more in
 * the canonical request (/model/a.b-v2%253A1/converse); libcurl before 8.14.0 put the path in
 * as sent, so AWS rejected its signatures for such paths. The fix is curl commit c19465ca55
 * ("http_aws_sigv4: improve sigv4 url encoding and canonicalization", curl PR #17129, fixing
 * issue #16927), first released in curl 8.14.0 (tags curl-8_14_0 and later contain it).
 * docs/aws.md has the details.
 *
 * Secrets: the secret key goes only into libcurl's option (CURLOPT_USERPWD) or the HMAC; the
 * header list gets the Authorization header (a signature, not a secret) and the session token,
 * which must never be printed: callers do not log their header lists.
 *
 * Ownership: no state. rf_aws_sign_curl appends to the caller's list, which the caller frees
 * (curl_slist_free_all) after the transfer, and which must stay alive until then.
 */
#ifndef RF_AWS_SIGN_H
#define RF_AWS_SIGN_H

#include <curl/curl.h>
#include <stdbool.h>
#include <stddef.h>

#include "aws/cred.h"
#include "roofline/status.h"
#include "util/buf.h"

/* The libcurl release whose SigV4 double-encodes the path as AWS does (8.14.0). */
#define RF_AWS_CURL_PATH_FIX_VERSION 0x080e00

/* One request, described as it goes on the wire. */
typedef struct rf_aws_sig_input {
    const char *method; /* "POST", "GET" */
    const char *host;   /* the Host header's value: host, or host:port for a non-default port */
    const char *path;   /* as sent, escapes included ("/model/a%3A1/converse"); ""/NULL: "/" */
    const char *query;  /* as sent, without '?'; NULL or "": none */
    const struct curl_slist *headers; /* more headers to sign, "Name: value" lines (Content-Type,
                                       * X-Amz-Target, ...); lines with an empty value are not
                                       * signed (libcurl's "Name:" removes a header); may be NULL */
    const void *body;
    size_t body_len;
    const char *amz_date; /* the request time, "YYYYMMDDTHHMMSSZ" (UTC) */
} rf_aws_sig_input;

/* The Authorization header value ("AWS4-HMAC-SHA256 Credential=AK/DATE/REGION/SERVICE/
 * aws4_request, SignedHeaders=..., Signature=HEX") for in, written into auth (cap bytes).
 * Signed: host, x-amz-date, x-amz-security-token when c->token is set, and in->headers. When
 * canonical is not NULL, the canonical request is written there too (for tests and debugging;
 * it holds no secret, but does hold the session token). Pure: no clock, no I/O. RF_ERR_ARG for
 * a malformed date, method or header line (named), or an auth buffer too small; RF_ERR_NOMEM;
 * RF_ERR_INTERNAL when libcrypto fails. */
rf_status rf_aws_sigv4(const rf_aws_creds *c, const char *region, const char *service,
                       const rf_aws_sig_input *in, char *auth, size_t cap, rf_buf *canonical,
                       rf_error *err);

/* Whether libcurl's signer, in the libcurl this process runs with, is right for path (true
 * unless the path holds a '%' and libcurl is older than RF_AWS_CURL_PATH_FIX_VERSION). */
bool rf_aws_curl_signs_path(const char *path);

typedef enum rf_aws_signer {
    RF_AWS_SIGNER_AUTO, /* libcurl's where rf_aws_curl_signs_path, else ours */
    RF_AWS_SIGNER_CURL, /* always libcurl's (tests) */
    RF_AWS_SIGNER_OWN,  /* always ours (tests) */
} rf_aws_signer;

/* Signs a request on easy for (region, service), e.g. ("us-east-1", "bedrock"). url is the
 * whole URL the handle is (or will be) set to; method and the body (the exact bytes that will be
 * sent; set CURLOPT_POSTFIELDS to them) are needed by our signer. *headers holds the caller's
 * headers (Content-Type, ...); this appends what signing needs and sets CURLOPT_HTTPHEADER to
 * *headers. Libcurl's signer: CURLOPT_AWS_SIGV4 and CURLOPT_USERPWD set, x-amz-security-token
 * appended; the handle signs itself when performed (each time: a resend is re-signed). Ours:
 * CURLOPT_AWS_SIGV4 and CURLOPT_USERPWD cleared, Host, X-Amz-Date, x-amz-security-token and
 * Authorization appended, dated now: sign again (on a fresh list) before each attempt. On
 * failure *headers may have grown (the caller frees it either way); RF_ERR_ARG for a URL
 * libcurl cannot parse, and rf_aws_sigv4's errors. */
rf_status rf_aws_sign_curl(CURL *easy, const rf_aws_creds *c, const char *region,
                           const char *service, const char *method, const char *url,
                           const void *body, size_t body_len, rf_aws_signer signer,
                           struct curl_slist **headers, rf_error *err);

#endif
