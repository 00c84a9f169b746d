/* cred.c: AWS credentials from the environment or the shared credentials file, and the
 * region (cred.h). */
#include "aws/cred.h"

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util/file.h"

#define CRED_FILE_MAX ((size_t)1 << 20)

static bool has_ctl(const char *s) {
    for (; *s; s++)
        if ((unsigned char)*s < 0x20 || *s == 0x7f) return true;
    return false;
}

static const char *env_nonempty(const char *name) {
    const char *v = getenv(name);
    return v && *v ? v : NULL;
}

void rf_aws_creds_free(rf_aws_creds *c) {
    char **fields[] = {&c->access_key, &c->secret_key, &c->token};
    for (size_t i = 0; i < sizeof fields / sizeof fields[0]; i++)
        if (*fields[i]) {
            explicit_bzero(*fields[i], strlen(*fields[i]));
            free(*fields[i]);
        }
    memset(c, 0, sizeof *c);
}

/* Copies the three values into out; NULL token: none. */
static rf_status set_creds(rf_aws_creds *out, const char *ak, const char *sk, const char *tok,
                           rf_error *err) {
    out->access_key = strdup(ak);
    out->secret_key = strdup(sk);
    out->token = tok ? strdup(tok) : NULL;
    if (!out->access_key || !out->secret_key || (tok && !out->token)) {
        rf_aws_creds_free(out);
        return rf_error_set(err, RF_ERR_NOMEM, "aws credentials: out of memory");
    }
    return RF_OK;
}

/* Trims spaces and tabs at both ends of s[0..*n) in place; returns the new start. */
static char *trim(char *s, size_t *n) {
    while (*n && (*s == ' ' || *s == '\t')) s++, (*n)--;
    while (*n && (s[*n - 1] == ' ' || s[*n - 1] == '\t' || s[*n - 1] == '\r')) (*n)--;
    return s;
}

/* Looks up profile in the INI text (modified in place: values are NUL-terminated there). The
 * three pointers are set into text, or left NULL. Returns whether the section was found. */
static bool find_profile(char *text, const char *profile, const char **ak, const char **sk,
                         const char **tok) {
    bool in = false, found = false;
    *ak = *sk = *tok = NULL;
    for (char *line = text; line && *line;) {
        char *nl = strchr(line, '\n');
        size_t n = nl ? (size_t)(nl - line) : strlen(line);
        char *next = nl ? nl + 1 : NULL;
        char *s = trim(line, &n);
        if (n && (s[0] == '#' || s[0] == ';')) n = 0;
        if (n >= 2 && s[0] == '[' && s[n - 1] == ']') {
            size_t m = n - 2;
            char *name = trim(s + 1, &m);
            in = m == strlen(profile) && !strncmp(name, profile, m);
            found = found || in;
        } else if (in && n) {
            char *eq = memchr(s, '=', n);
            if (eq) {
                size_t kn = (size_t)(eq - s), vn = n - kn - 1;
                char *key = trim(s, &kn);
                char *val = trim(eq + 1, &vn);
                val[vn] = 0;
                if (kn == 17 && !strncmp(key, "aws_access_key_id", kn)) *ak = val;
                if (kn == 21 && !strncmp(key, "aws_secret_access_key", kn)) *sk = val;
                if (kn == 17 && !strncmp(key, "aws_session_token", kn)) *tok = val;
            }
        }
        line = next;
    }
    return found;
}

static rf_status from_profile(rf_aws_creds *out, rf_error *err) {
    const char *profile = env_nonempty("AWS_PROFILE");
    if (!profile) profile = "default";
    char path[1024];
    const char *file = env_nonempty("AWS_SHARED_CREDENTIALS_FILE");
    if (!file) {
        const char *home = env_nonempty("HOME");
        if (!home)
            return rf_error_set(err, RF_ERR_ARG,
                                "aws credentials: AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY "
                                "are not set, and neither AWS_SHARED_CREDENTIALS_FILE nor HOME "
                                "names a credentials file");
        snprintf(path, sizeof path, "%s/.aws/credentials", home);
        file = path;
    }
    char *text = NULL;
    size_t len = 0;
    rf_error ferr = {0};
    rf_status st = rf_read_file(file, CRED_FILE_MAX, &text, &len, &ferr);
    if (st)
        return rf_error_set(err, st,
                            "aws credentials: AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY are not "
                            "set, and the credentials file cannot be used: %s",
                            ferr.msg);
    const char *ak, *sk, *tok;
    if (!find_profile(text, profile, &ak, &sk, &tok)) {
        st = rf_error_set(err, RF_ERR_ARG,
                          "aws credentials: AWS_ACCESS_KEY_ID is not set and %s has no profile "
                          "[%s] (AWS_PROFILE)",
                          file, profile);
    } else if (!ak || !*ak || !sk || !*sk) {
        st = rf_error_set(err, RF_ERR_ARG, "aws credentials: profile [%s] in %s has no %s", profile,
                          file, !ak || !*ak ? "aws_access_key_id" : "aws_secret_access_key");
    } else if (has_ctl(ak) || has_ctl(sk) || (tok && has_ctl(tok))) {
        st = rf_error_set(err, RF_ERR_ARG,
                          "aws credentials: profile [%s] in %s: a key contains control characters",
                          profile, file);
    } else {
        st = set_creds(out, ak, sk, tok && *tok ? tok : NULL, err);
        if (!st)
            snprintf(out->source, sizeof out->source, "profile '%.40s' in %.100s", profile, file);
    }
    explicit_bzero(text, len);
    free(text);
    return st;
}

rf_status rf_aws_creds_load(rf_aws_creds *out, rf_error *err) {
    memset(out, 0, sizeof *out);
    const char *ak = env_nonempty("AWS_ACCESS_KEY_ID");
    const char *sk = env_nonempty("AWS_SECRET_ACCESS_KEY");
    const char *tok = env_nonempty("AWS_SESSION_TOKEN");
    if (!ak && !sk) return from_profile(out, err);
    if (!ak || !sk)
        return rf_error_set(err, RF_ERR_ARG, "aws credentials: %s is set but %s is not",
                            ak ? "AWS_ACCESS_KEY_ID" : "AWS_SECRET_ACCESS_KEY",
                            ak ? "AWS_SECRET_ACCESS_KEY" : "AWS_ACCESS_KEY_ID");
    const char *bad = has_ctl(ak)           ? "AWS_ACCESS_KEY_ID"
                      : has_ctl(sk)         ? "AWS_SECRET_ACCESS_KEY"
                      : tok && has_ctl(tok) ? "AWS_SESSION_TOKEN"
                                            : NULL;
    if (bad)
        return rf_error_set(err, RF_ERR_ARG, "aws credentials: %s contains control characters",
                            bad);
    rf_status st = set_creds(out, ak, sk, tok, err);
    if (!st) snprintf(out->source, sizeof out->source, "environment");
    return st;
}

rf_status rf_aws_region(const char *arg, char out[RF_AWS_REGION_MAX], rf_error *err) {
    const char *from = "the region";
    const char *r = arg && *arg ? arg : NULL;
    if (!r && (r = env_nonempty("AWS_REGION"))) from = "AWS_REGION";
    if (!r && (r = env_nonempty("AWS_DEFAULT_REGION"))) from = "AWS_DEFAULT_REGION";
    if (!r)
        return rf_error_set(err, RF_ERR_ARG,
                            "aws: no region (give one, or set AWS_REGION or AWS_DEFAULT_REGION)");
    size_t n = strlen(r);
    bool ok = n > 0 && n < RF_AWS_REGION_MAX;
    for (size_t i = 0; ok && i < n; i++)
        ok = (r[i] >= 'a' && r[i] <= 'z') || (r[i] >= '0' && r[i] <= '9') || r[i] == '-';
    if (!ok) {
        char shown[80];
        return rf_error_set(err, RF_ERR_ARG,
                            "aws: %s '%s' is not a region name (lowercase letters, digits, '-')",
                            from, rf_printable(r, n, shown, sizeof shown));
    }
    memcpy(out, r, n + 1);
    return RF_OK;
}
