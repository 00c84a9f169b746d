/* drift.h: the A/B/A judgement. A baseline measured before and after a candidate (A1, B, A2)
 * drifts by |A2 - A1|; the candidate differs from the baseline by B - (A1 + A2) / 2. A difference
 * is attributed to the candidate only when it is larger than the baseline's own drift (seed 003:
 * 51.3 and 51.5 decode tok/s before and after, so B = 105.1 is "higher"; a B of 51.6 would be
 * "within drift"). Pure functions; nothing allocated but the JSON the caller owns.
 */
#ifndef RF_REPORT_DRIFT_H
#define RF_REPORT_DRIFT_H

#include <jansson.h>
#include <stdbool.h>

typedef enum rf_drift_verdict {
    RF_DRIFT_UNKNOWN = -2, /* an input is missing (NaN) */
    RF_DRIFT_LOWER = -1,   /* B below A by more than the drift */
    RF_DRIFT_WITHIN = 0,   /* |B - A| <= the drift: not attributable to B */
    RF_DRIFT_HIGHER = 1,   /* B above A by more than the drift */
} rf_drift_verdict;

typedef struct rf_drift {
    double a1, b, a2;
    double drift;               /* |a2 - a1| */
    double base;                /* (a1 + a2) / 2 */
    double diff;                /* b - base */
    double drift_pct, diff_pct; /* of base; NaN when base <= 0 */
    rf_drift_verdict verdict;
} rf_drift;

rf_drift rf_drift_judge(double a1, double b, double a2);

/* "higher", "lower", "within drift", "unknown" */
const char *rf_drift_verdict_name(rf_drift_verdict v);

/* {a1, b, a2, a_drift, a_drift_pct, b_minus_a, b_minus_a_pct, difference_exceeds_drift,
 * verdict}; null for what is unknown. */
json_t *rf_drift_json(const rf_drift *j);

#endif
