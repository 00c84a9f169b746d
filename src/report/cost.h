/* cost.h: the cost model of the seeds, as pure functions (no state, no allocation).
 *
 *   $/M output tokens  = ($/hour) / (output tok/s x 3600) x 1e6
 *   24x7 $/month       = $/hour x 730
 *   blended per-token  = $/M output + ratio x $/M input   ($ per million output tokens when each
 *                        output token comes with `ratio` input tokens)
 *   break-even tok/s   = ($/month) / (blended x 1e-6) / (730 x 3600): the sustained output rate
 *                        at which an instance costs what the per-token API would
 *
 * A figure that cannot be computed (a rate or price <= 0, not finite) is NaN: callers show it as
 * unknown, never as 0.
 */
#ifndef RF_REPORT_COST_H
#define RF_REPORT_COST_H

#define RF_HOURS_PER_MONTH 730.0

double rf_cost_usd_per_m_output(double usd_per_hour, double output_tok_s);
double rf_cost_usd_per_month(double usd_per_hour);
double rf_cost_blended(double usd_per_m_input, double usd_per_m_output, double ratio);
double rf_cost_break_even_tok_s(double usd_per_month, double blended_usd_per_m_output);

#endif
