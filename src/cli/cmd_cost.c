/* cmd_cost.c: `roofline cost`: the cost model (src/report/cost.h) from flags alone. */
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "report/cost.h"
#include "util/json_dump.h"

/* --per-token IN,OUT: dest is double[2] */
static rf_status per_token(void *dest, const char *opt, const char *v, rf_error *err) {
    double *io = dest;
    char *end = NULL;
    io[0] = strtod(v, &end);
    bool ok = end != v && *end == ',' && io[0] >= 0 && isfinite(io[0]);
    const char *o2 = end && *end == ',' ? end + 1 : "";
    char *end2 = NULL;
    io[1] = strtod(o2, &end2);
    if (!*o2 || *end2 || !(io[1] > 0) || !isfinite(io[1])) ok = false;
    if (!ok)
        return rf_error_set(err, RF_ERR_ARG,
                            "%s expects IN,OUT in $ per million tokens (e.g. 0.035,0.14), got '%s'",
                            opt, v);
    return RF_OK;
}

int cli_cost(int argc, char **argv) {
    double hour = NAN, month = NAN, tok_s = NAN, io[2] = {NAN, NAN}, ratio = 5;
    bool json = false;
    const rf_opt opts[] = {
        {"--usd-per-hour", NULL, RF_OPT_DOUBLE, RF_OPT_DEST(hour), .lo = 1e-9, .hi = 1e6,
         .metavar = "H", .help = "the instance's price in $ per hour"},
        {"--usd-per-month", NULL, RF_OPT_DOUBLE, RF_OPT_DEST(month), .lo = 1e-9, .hi = 1e9,
         .metavar = "M", .help = "or its price in $ per month (24x7)"},
        {"--tok-s", NULL, RF_OPT_DOUBLE, RF_OPT_DEST(tok_s), .lo = 1e-9, .hi = 1e12, .metavar = "T",
         .help = "output tokens per second the instance sustains"},
        {"--per-token", NULL, RF_OPT_STRING, .dest = io, .fn = per_token, .metavar = "IN,OUT",
         .help = "a per-token price to compare with: $ per million input and output tokens"},
        {"--ratio", NULL, RF_OPT_DOUBLE, RF_OPT_DEST(ratio), .lo = 0, .hi = 1e6, .metavar = "R",
         .help = "input tokens per output token for the blended per-token price (default 5)"},
        {"--json", NULL, RF_OPT_TRUE, RF_OPT_DEST(json), .help = "print the figures as JSON"},
    };
    const rf_opt_spec spec = {
        .prog = "roofline cost",
        .about =
            "The seeds' cost model: $/M output tokens = $/hour / (tok/s x 3600) x 1e6; 24x7\n"
            "$/month = $/hour x 730; a per-token price blended at R input tokens per output token\n"
            "(default 5) is OUT + R x IN $/M output; break-even = $/month / (blended x 1e-6) /\n"
            "(730 x 3600) output tok/s sustained. Example (seed 000, EC2 g6.xlarge against\n"
            "Bedrock Nova Micro):\n"
            "  roofline cost --usd-per-hour 0.8048 --tok-s 131.9 --per-token 0.035,0.14 --ratio "
            "5\n",
        .opts = opts,
        .n_opts = sizeof opts / sizeof opts[0],
    };
    int rc = cli_opts("cost", &spec, argc, argv);
    if (rc >= 0) return rc;
    double in = io[0], out = io[1];
    if (isnan(hour) && isnan(month) && isnan(out)) {
        cli_errorf("cost", "give --usd-per-hour, --usd-per-month or --per-token (roofline cost "
                           "--help)");
        return RF_EXIT_BAD_INPUT;
    }
    if (!isnan(hour) && !isnan(month)) {
        cli_errorf("cost", "give --usd-per-hour or --usd-per-month, not both");
        return RF_EXIT_BAD_INPUT;
    }
    if (isnan(month)) month = rf_cost_usd_per_month(hour);
    double per_m = rf_cost_usd_per_m_output(hour, tok_s);
    double blended = rf_cost_blended(in, out, ratio);
    double be = rf_cost_break_even_tok_s(month, blended);
    if (json) {
        json_t *o = json_object();
        const struct {
            const char *k;
            double v;
        } f[] = {{"usd_per_hour", hour},
                 {"usd_per_month", month},
                 {"tok_s", tok_s},
                 {"usd_per_m_output", per_m},
                 {"usd_per_m_input_per_token", in},
                 {"usd_per_m_output_per_token", out},
                 {"ratio", ratio},
                 {"blended_usd_per_m_output", blended},
                 {"break_even_tok_s", be}};
        for (size_t i = 0; i < sizeof f / sizeof f[0]; i++)
            json_object_set_new(o, f[i].k, isfinite(f[i].v) ? json_real(f[i].v) : json_null());
        char *text = rf_json_dumps(o, JSON_PRESERVE_ORDER | JSON_REAL_PRECISION(12));
        if (text) puts(text);
        free(text);
        json_decref(o);
        return RF_EXIT_OK;
    }
    if (!isnan(hour)) printf("instance: $%.4f/hour\n", hour);
    if (!isnan(month)) printf("24x7 $/month: %.0f (%.2f; 730 hours)\n", month, month);
    if (!isnan(per_m))
        printf("$/M output tokens: %.2f (%.6f; at %.4g output tok/s)\n", per_m, per_m, tok_s);
    else if (!isnan(hour))
        printf("$/M output tokens: unknown (give --tok-s)\n");
    if (!isnan(blended))
        printf("per-token price blended at %g input tokens per output token: %.4g $/M output "
               "(%.4g + %g x %.4g)\n",
               ratio, blended, out, ratio, in);
    if (!isnan(be))
        printf("break-even: %.1f output tok/s sustained 24x7 (an instance cheaper than the "
               "per-token price above that rate)\n",
               be);
    return RF_EXIT_OK;
}
