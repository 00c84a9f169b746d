/* test_cost.c: the cost model against every figure of the seeds' cost tables
 * (../shared/docs/bench-facts.md), as data: $/M output tokens to the cent (and the unrounded
 * values), 24x7 $/month to the dollar, the per-token blend, the 710 tok/s break-even (709.7 from
 * the unrounded month, 710.3 from the seed's rounded 588); unknown inputs give NaN, never 0.
 * Also the catalog lookups the report prices and bounds backends with. */
#include <math.h>
#include <string.h>

#include "check.h"
#include "report/catalog.h"
#include "report/cost.h"

/* The figure as the seed shows it: to `decimals` places. */
static double shown(double v, int decimals) {
    double p = pow(10, decimals);
    return round(v * p) / p;
}

int main(void) {
    /* seed 000's table: $/hour, single-request tok/s, $/M out shown, $/month shown, unrounded */
    static const struct {
        const char *backend;
        double usd_per_hour, tok_s, usd_per_m_shown, month_shown, usd_per_m_exact;
    } seed000[] = {
        {"EC2 g6.xlarge", 0.8048, 131.9, 1.69, 588, 1.6949},
        {"SageMaker ml.g6.xlarge", 1.1267, 96.5, 3.24, 822, 3.2432},
        {"EC2 g5g.2xlarge", 0.556, 34.9, 4.43, 406, 4.4253},
        {"EC2 inf2.xlarge", 0.7582, 36.5, 5.77, 553, 5.7702},
        {"EC2 trn1.2xlarge", 1.3438, 36.0, 10.37, 981, 10.3688},
    };
    for (size_t i = 0; i < sizeof seed000 / sizeof seed000[0]; i++) {
        double per_m = rf_cost_usd_per_m_output(seed000[i].usd_per_hour, seed000[i].tok_s);
        double month = rf_cost_usd_per_month(seed000[i].usd_per_hour);
        CHECK_MSG(shown(per_m, 2) == seed000[i].usd_per_m_shown, "%s: $/M %.4f", seed000[i].backend,
                  per_m);
        CHECK_NEAR(per_m, seed000[i].usd_per_m_exact, 5e-5);
        CHECK_MSG(shown(month, 0) == seed000[i].month_shown, "%s: $/month %.2f", seed000[i].backend,
                  month);
    }
    /* the unrounded months the seed's figures come from */
    CHECK_NEAR(rf_cost_usd_per_month(0.8048), 587.504, 1e-9);
    CHECK_NEAR(rf_cost_usd_per_month(1.1267), 822.491, 1e-9);
    CHECK_NEAR(rf_cost_usd_per_month(0.556), 405.88, 1e-9);
    CHECK_NEAR(rf_cost_usd_per_month(0.7582), 553.486, 1e-9);
    CHECK_NEAR(rf_cost_usd_per_month(1.3438), 980.974, 1e-9);

    /* 16-concurrent: 0.150 on g6 implies ~1490 tok/s (derived); 0.291 from seed 003's QAT
     * 1077.25 tok/s on ml.g6.xlarge (0.2905) */
    CHECK(shown(rf_cost_usd_per_m_output(0.8048, 1490), 3) == 0.150);
    CHECK_NEAR(rf_cost_usd_per_m_output(1.1267, 1077.25), 0.2905, 5e-5);
    CHECK(shown(rf_cost_usd_per_m_output(1.1267, 1077.25), 3) == 0.291);

    /* seed 003 at 1 / 4 / 16 concurrent, bf16 and QAT int4 */
    static const struct {
        double tok_s, usd_per_m_shown, exact;
    } seed003[] = {{45.6, 6.86, 6.863},  {171.6, 1.82, 1.824}, {619.1, 0.51, 0.506},
                   {85.35, 3.67, 3.667}, {328.7, 0.95, 0.952}, {1077.25, 0.29, 0.2905}};
    for (size_t i = 0; i < sizeof seed003 / sizeof seed003[0]; i++) {
        double v = rf_cost_usd_per_m_output(1.1267, seed003[i].tok_s);
        CHECK_MSG(shown(v, 2) == seed003[i].usd_per_m_shown, "seed 003 at %.2f tok/s: %.4f",
                  seed003[i].tok_s, v);
        CHECK_NEAR(v, seed003[i].exact, 5e-4);
    }

    /* Nova Micro: 0.035 in, 0.14 out, 5 input tokens per output token */
    double blended = rf_cost_blended(0.035, 0.14, 5);
    CHECK_NEAR(blended, 0.315, 1e-12);
    CHECK_NEAR(rf_cost_blended(0.035, 0.14, 0), 0.14, 1e-12); /* the seed's 0.14 column */
    /* break-even: a 588 $/month g6 against it */
    double be_seed = rf_cost_break_even_tok_s(588, blended);
    double be_exact = rf_cost_break_even_tok_s(rf_cost_usd_per_month(0.8048), blended);
    CHECK_MSG(shown(be_seed, 1) == 710.3, "break-even from 588: %.3f", be_seed);
    CHECK_MSG(shown(be_exact, 1) == 709.7, "break-even from 587.504: %.3f", be_exact);
    CHECK(shown(be_exact, 0) == 710); /* the seed's figure */

    /* unknown inputs: NaN, never 0 */
    CHECK(isnan(rf_cost_usd_per_m_output(0.8048, 0)));
    CHECK(isnan(rf_cost_usd_per_m_output(0, 131.9)));
    CHECK(isnan(rf_cost_usd_per_m_output(-1, 131.9)));
    CHECK(isnan(rf_cost_usd_per_m_output(0.8048, NAN)));
    CHECK(isnan(rf_cost_usd_per_month(0)));
    CHECK(isnan(rf_cost_blended(0.035, 0, 5)));
    CHECK(isnan(rf_cost_break_even_tok_s(588, NAN)));
    CHECK(isnan(rf_cost_break_even_tok_s(0, 0.315)));

    /* the catalog: the shipped prices and accelerators carry the seeds' figures */
    rf_catalog cat;
    rf_catalog_load(&cat, NULL, NULL);
    CHECK_MSG(cat.prices && cat.accelerators, "%s %s", cat.prices_error, cat.accel_error);
    rf_price p;
    CHECK(rf_catalog_instance(&cat, "g6.xlarge", &p) && p.usd_per_hour == 0.8048 && p.source);
    CHECK(rf_catalog_instance(&cat, "ml.g6.xlarge", &p) && p.usd_per_hour == 1.1267);
    CHECK(!rf_catalog_instance(&cat, "no-such.instance", &p));
    CHECK(rf_catalog_local(&cat, &p) && p.assumption && p.usd_per_hour > 0);
    CHECK(rf_catalog_per_token(&cat, "bedrock:us-east-1/us.amazon.nova-micro-v1:0", &p) &&
          p.usd_per_m_input == 0.035 && p.usd_per_m_output == 0.14);
    rf_accel a;
    CHECK(rf_catalog_accelerator(&cat, "NVIDIA L4", &a) && a.mem_bw_gbs == 300);
    CHECK(rf_catalog_accelerator(&cat, "1x nvidia t4g (g5g.2xlarge)", &a) && a.mem_bw_gbs == 320);
    CHECK(rf_catalog_accelerator(&cat, "NVIDIA H100 PCIe", &a) && a.mem_bw_gbs == 2000);
    CHECK(rf_catalog_accelerator(&cat, "NVIDIA H100 SXM", &a) && a.mem_bw_gbs == 3350);
    CHECK(rf_catalog_accelerator(&cat, "AWS Inferentia2", &a) && a.mem_bw_gbs == 817);
    CHECK(rf_catalog_accelerator(&cat, "AWS Trainium", &a) && a.mem_bw_gbs == 613);
    CHECK(!rf_catalog_accelerator(&cat, "NVIDIA L40", &a)); /* not L4, not L40S */
    CHECK(!rf_catalog_accelerator(&cat, "a toaster", &a));
    /* the seed's ratios: 613/300 = 2.04, 817/300 = 2.72 */
    CHECK(shown(613.0 / 300, 2) == 2.04 && shown(817.0 / 300, 2) == 2.72);
    rf_catalog_free(&cat);
    /* a prices file that is not there: nothing found, the reason kept */
    rf_catalog_load(&cat, "/nonexistent/prices.json", "/nonexistent/acc.json");
    CHECK(!cat.prices && strstr(cat.prices_error, "/nonexistent/prices.json"));
    CHECK(!rf_catalog_instance(&cat, "g6.xlarge", &p) &&
          !rf_catalog_accelerator(&cat, "NVIDIA L4", &a));
    rf_catalog_free(&cat);
    return check_summary("test_cost");
}
