/* endpoint.h: where an AWS service's requests go, and the escaping of a path segment.
 *
 * The base URL of a service follows the SDKs' and CLI's configuration order:
 * AWS_ENDPOINT_URL_<SERVICE> (the service id upper-cased, spaces and '-' as '_', e.g.
 * AWS_ENDPOINT_URL_BEDROCK_RUNTIME), else AWS_ENDPOINT_URL, else https://HOST for the region.
 * An endpoint from the environment may be http:// (a loopback fake, a private endpoint); the
 * signature still uses the real signing name and region (rf_aws_service.signing_name).
 *
 * Ownership: rf_aws_endpoint writes into a caller's buffer; nothing allocates; no state.
 */
#ifndef RF_AWS_ENDPOINT_H
#define RF_AWS_ENDPOINT_H

#include <stddef.h>

#include "roofline/status.h"

typedef enum rf_aws_service {
    RF_AWS_BEDROCK_RUNTIME,   /* bedrock-runtime.R.amazonaws.com, signs as "bedrock" */
    RF_AWS_SAGEMAKER_RUNTIME, /* runtime.sagemaker.R.amazonaws.com, signs as "sagemaker" */
    RF_AWS_PRICING,           /* api.pricing.R.amazonaws.com (the API lives in us-east-1 and a
                               * few others), signs as "pricing" */
    RF_AWS_SERVICE_COUNT
} rf_aws_service;

/* The name SigV4 signs with ("bedrock", "sagemaker", "pricing"). */
const char *rf_aws_signing_name(rf_aws_service s);
/* The service's environment suffix ("BEDROCK_RUNTIME", "SAGEMAKER_RUNTIME", "PRICING"). */
const char *rf_aws_env_suffix(rf_aws_service s);

#define RF_AWS_URL_MAX 512

/* The base URL for service s in region (no trailing '/'), into out (RF_AWS_URL_MAX bytes).
 * RF_ERR_ARG when an AWS_ENDPOINT_URL* variable is not an http(s) URL with a host (the message
 * names the variable) or is too long; region must already be valid (rf_aws_region). */
rf_status rf_aws_endpoint(rf_aws_service s, const char *region, char out[RF_AWS_URL_MAX],
                          rf_error *err);

/* Percent-encodes one path segment (RFC 3986: A-Z a-z 0-9 - . _ ~ kept, every other byte,
 * '/' included, as %XX upper-case) into out (cap bytes, NUL-terminated). Returns the length
 * written, or -1 when it does not fit (out then holds ""). A Bedrock model id
 * "anthropic.claude-v2:1" becomes "anthropic.claude-v2%3A1". */
long rf_aws_escape_segment(const char *seg, char *out, size_t cap);

#endif
