/* cost.c: the cost model (see cost.h). */
#include "report/cost.h"

#include <math.h>

static int positive(double x) {
    return isfinite(x) && x > 0;
}

double rf_cost_usd_per_m_output(double usd_per_hour, double output_tok_s) {
    if (!positive(usd_per_hour) || !positive(output_tok_s)) return NAN;
    return usd_per_hour / (output_tok_s * 3600.0) * 1e6;
}

double rf_cost_usd_per_month(double usd_per_hour) {
    return positive(usd_per_hour) ? usd_per_hour * RF_HOURS_PER_MONTH : NAN;
}

double rf_cost_blended(double usd_per_m_input, double usd_per_m_output, double ratio) {
    if (!(isfinite(usd_per_m_input) && usd_per_m_input >= 0) || !positive(usd_per_m_output) ||
        !(isfinite(ratio) && ratio >= 0))
        return NAN;
    return usd_per_m_output + ratio * usd_per_m_input;
}

double rf_cost_break_even_tok_s(double usd_per_month, double blended_usd_per_m_output) {
    if (!positive(usd_per_month) || !positive(blended_usd_per_m_output)) return NAN;
    return usd_per_month / (blended_usd_per_m_output * 1e-6) / (RF_HOURS_PER_MONTH * 3600.0);
}
