/* series.c: a line chart's series (see series.h). */
#include "report/series.h"

#include <stdio.h>

rf_svg_series *rf_series_add(rf_series_set *ss, const char *name, const char *suffix, bool dashed) {
    if (ss->n >= RF_SERIES_MAX) return NULL;
    int i = ss->n++;
    snprintf(ss->names[i], sizeof ss->names[i], "%s%s", name, suffix ? suffix : "");
    ss->s[i] = (rf_svg_series){ss->names[i], 0, ss->x[i], ss->y[i], dashed};
    return &ss->s[i];
}

void rf_series_point(rf_svg_series *s, double x, double y) {
    if (!s || s->n >= RF_SERIES_POINTS) return;
    ((double *)s->x)[s->n] = x;
    ((double *)s->y)[s->n] = y;
    s->n++;
}
