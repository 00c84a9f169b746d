/* utf8.h: validating UTF-8 sequences one at a time (RFC 3629: no overlong forms, no surrogates,
 * nothing above U+10FFFF). No state. */
#ifndef RF_UTIL_UTF8_H
#define RF_UTIL_UTF8_H

#include <stddef.h>

/* Length (1 to 4) of the valid UTF-8 sequence that starts at s[0] within n bytes (n >= 1); 0
 * when the bytes there are not one. */
size_t rf_utf8_seq(const char *s, size_t n);

#endif
