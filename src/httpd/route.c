/* route.c: the route table's lookup (see httpd.h). */
#include <string.h>

#include "httpd/httpd.h"

rf_httpd_match rf_httpd_route_find(const rf_httpd_route *table, size_t n, const char *url,
                                   const char *method, const rf_httpd_route **out) {
    const char *p = strncmp(url, "/v1/", 4) == 0 ? url + 3 : url;
    for (size_t i = 0; i < n; i++)
        if (!strcmp(p, table[i].path)) {
            *out = &table[i];
            return strcmp(method, table[i].method) ? RF_HTTPD_BAD_METHOD : RF_HTTPD_ROUTED;
        }
    *out = NULL;
    return RF_HTTPD_NO_ROUTE;
}
