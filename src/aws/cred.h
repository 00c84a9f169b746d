/* cred.h: AWS credentials and region as the AWS SDKs and CLI find them.
 *
 * Credentials: AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY (and AWS_SESSION_TOKEN when set) from
 * the environment; when neither key variable is set, the profile AWS_PROFILE (else "default")
 * of the shared credentials file AWS_SHARED_CREDENTIALS_FILE (else ~/.aws/credentials), keys
 * aws_access_key_id, aws_secret_access_key and aws_session_token (an INI file: "[name]"
 * sections, "key = value" lines, '#' and ';' comments). Region: the argument, else AWS_REGION,
 * else AWS_DEFAULT_REGION.
 *
 * Secrets never appear in an error message: a message names the variable, file or profile
 * that is missing or malformed, never a value.
 *
 * Ownership: rf_aws_creds holds copies (malloc'd) owned by the struct; rf_aws_creds_free wipes
 * them (explicit_bzero) and frees them. The region is copied into a caller's buffer.
 */
#ifndef RF_AWS_CRED_H
#define RF_AWS_CRED_H

#include <stddef.h>

#include "roofline/status.h"

typedef struct rf_aws_creds {
    char *access_key; /* AKIA... / ASIA... */
    char *secret_key; /* never printed, logged or recorded */
    char *token;      /* session token, or NULL */
    char source[160]; /* where they came from, for messages: "environment" or "profile 'x' in
                       * FILE" (no secret) */
} rf_aws_creds;

#define RF_AWS_REGION_MAX 64

/* Fills *out (zeroed first) from the environment, else from the profile. RF_ERR_ARG when
 * only one of the two key variables is set, when the profile or one of its two keys is missing,
 * or when a value holds control characters; RF_ERR_IO when the credentials file cannot be read
 * (the message names the file and says which variables would have been used instead);
 * RF_ERR_NOMEM. On failure *out holds nothing. */
rf_status rf_aws_creds_load(rf_aws_creds *out, rf_error *err);

/* Wipes and frees the copies; *c is left zeroed (safe to call twice). */
void rf_aws_creds_free(rf_aws_creds *c);

/* The region: arg when non-empty, else AWS_REGION, else AWS_DEFAULT_REGION, copied into out
 * (RF_AWS_REGION_MAX bytes). RF_ERR_ARG when none is set, or when the region is not made of
 * lowercase letters, digits and '-' (so it can go into a host name and a signing scope). */
rf_status rf_aws_region(const char *arg, char out[RF_AWS_REGION_MAX], rf_error *err);

#endif
