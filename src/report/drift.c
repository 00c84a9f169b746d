/* drift.c: the A/B/A judgement (see drift.h). */
#include "report/drift.h"

#include <math.h>

rf_drift rf_drift_judge(double a1, double b, double a2) {
    rf_drift j = {a1, b, a2, NAN, NAN, NAN, NAN, NAN, RF_DRIFT_UNKNOWN};
    if (isnan(a1) || isnan(b) || isnan(a2)) return j;
    j.drift = fabs(a2 - a1);
    j.base = 0.5 * (a1 + a2);
    j.diff = b - j.base;
    if (j.base > 0) {
        j.drift_pct = 100 * j.drift / j.base;
        j.diff_pct = 100 * j.diff / j.base;
    }
    j.verdict = fabs(j.diff) <= j.drift ? RF_DRIFT_WITHIN
                : j.diff > 0            ? RF_DRIFT_HIGHER
                                        : RF_DRIFT_LOWER;
    return j;
}

const char *rf_drift_verdict_name(rf_drift_verdict v) {
    switch (v) {
    case RF_DRIFT_HIGHER:
        return "higher";
    case RF_DRIFT_LOWER:
        return "lower";
    case RF_DRIFT_WITHIN:
        return "within drift";
    default:
        return "unknown";
    }
}

static json_t *num(double v) {
    return isfinite(v) ? json_real(v) : json_null();
}

json_t *rf_drift_json(const rf_drift *j) {
    json_t *o = json_object();
    json_object_set_new(o, "a1", num(j->a1));
    json_object_set_new(o, "b", num(j->b));
    json_object_set_new(o, "a2", num(j->a2));
    json_object_set_new(o, "a_drift", num(j->drift));
    json_object_set_new(o, "a_drift_pct", num(j->drift_pct));
    json_object_set_new(o, "b_minus_a", num(j->diff));
    json_object_set_new(o, "b_minus_a_pct", num(j->diff_pct));
    json_object_set_new(
        o, "difference_exceeds_drift",
        j->verdict == RF_DRIFT_UNKNOWN ? json_null() : json_boolean(j->verdict != RF_DRIFT_WITHIN));
    json_object_set_new(o, "verdict", json_string(rf_drift_verdict_name(j->verdict)));
    return o;
}
