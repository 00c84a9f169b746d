/* test_prices.c: GetProducts pages (recorded in tests/data/aws_prices) read into prices, the
 * request bodies, the prices file written back, and a run file's instance names resolved
 * through it (unknown names and unreplaced placeholders refused by name). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "bench/runfile.h"
#include "check.h"
#include "aws/prices.h"
#include "report/catalog.h"
#include "report/econ.h"
#include "util/file.h"

static char g_data[1024];

static rf_status read_page(const rf_price_query *q, const char *file, rf_price_found *acc,
                           char *tok, rf_error *err) {
    char path[1200], *text = NULL;
    size_t len = 0;
    snprintf(path, sizeof path, "%s/aws_prices/%s", g_data, file);
    rf_status st = rf_read_file(path, (size_t)1 << 24, &text, &len, err);
    CHECK_MSG(st == RF_OK, "%s: %s", path, err->msg);
    if (st) return st;
    st = rf_aws_prices_page(q, text, len, acc, tok, err);
    free(text);
    return st;
}

static bool has_filter(const json_t *body, const char *field, const char *value) {
    size_t i;
    const json_t *f;
    json_array_foreach(json_object_get(body, "Filters"), i, f) {
        if (!strcmp(json_string_value(json_object_get(f, "Field")), field) &&
            !strcmp(json_string_value(json_object_get(f, "Value")), value) &&
            !strcmp(json_string_value(json_object_get(f, "Type")), "TERM_MATCH"))
            return true;
    }
    return false;
}

static void test_requests(void) {
    rf_error err = {0};
    rf_price_query q = {RF_PRICE_EC2, "g6.xlarge", "us-east-2", NULL};
    json_t *b = rf_aws_prices_request(&q, NULL, &err);
    CHECK(b && !strcmp(json_string_value(json_object_get(b, "ServiceCode")), "AmazonEC2"));
    CHECK(has_filter(b, "instanceType", "g6.xlarge") && has_filter(b, "regionCode", "us-east-2"));
    CHECK(has_filter(b, "operatingSystem", "Linux") && has_filter(b, "tenancy", "Shared"));
    CHECK(has_filter(b, "preInstalledSw", "NA") && has_filter(b, "capacitystatus", "Used"));
    CHECK(!json_object_get(b, "NextToken"));
    CHECK(!strcmp(json_string_value(json_object_get(b, "FormatVersion")), "aws_v1"));
    json_decref(b);
    b = rf_aws_prices_request(&q, "tok123", &err);
    CHECK(b && !strcmp(json_string_value(json_object_get(b, "NextToken")), "tok123"));
    json_decref(b);
    rf_price_query s = {RF_PRICE_SAGEMAKER, "ml.g6.xlarge", "us-east-1", NULL};
    b = rf_aws_prices_request(&s, "", &err);
    CHECK(b && !strcmp(json_string_value(json_object_get(b, "ServiceCode")), "AmazonSageMaker"));
    CHECK(has_filter(b, "instanceName", "ml.g6.xlarge") && has_filter(b, "component", "Hosting"));
    CHECK(!json_object_get(b, "NextToken"));
    json_decref(b);
    /* an inference profile names the same model */
    rf_price_query m = {RF_PRICE_BEDROCK, "us.amazon.nova-micro-v1:0", "us-east-1", NULL};
    b = rf_aws_prices_request(&m, NULL, &err);
    CHECK(b && has_filter(b, "model", "Nova Micro") &&
          has_filter(b, "feature", "On-demand Inference"));
    json_decref(b);
    rf_price_query u = {RF_PRICE_BEDROCK, "acme.unknown-v9:0", "us-east-1", NULL};
    CHECK(!rf_aws_prices_request(&u, NULL, &err));
    CHECK_MSG(strstr(err.msg, "acme.unknown-v9:0") && strstr(err.msg, "--bedrock-model"), "%s",
              err.msg);
    u.model_name = "Unknown Nine";
    b = rf_aws_prices_request(&u, NULL, &err);
    CHECK(b && has_filter(b, "model", "Unknown Nine"));
    json_decref(b);
}

static void test_pages(void) {
    rf_error err = {0};
    char tok[RF_PRICE_TOKEN_MAX];
    rf_price_query q = {RF_PRICE_EC2, "g6.xlarge", "us-east-1", NULL};
    rf_price_found acc;
    memset(&acc, 0, sizeof acc);
    /* an empty page with a token, then the product (OnDemand and a cheaper Reserved term),
     * then the same product again */
    CHECK(read_page(&q, "ec2_g6_page1.json", &acc, tok, &err) == RF_OK && tok[0]);
    CHECK(acc.products == 0 && acc.usd_per_hour == 0);
    CHECK(rf_aws_prices_complete(&q, &acc, &err) == RF_ERR_IO && strstr(err.msg, "g6.xlarge"));
    CHECK(read_page(&q, "ec2_g6_page2.json", &acc, tok, &err) == RF_OK && tok[0]);
    CHECK(read_page(&q, "ec2_g6_page3.json", &acc, tok, &err) == RF_OK && !tok[0]);
    CHECK_MSG(acc.usd_per_hour == 0.8048 && acc.products == 2, "%g %d", acc.usd_per_hour,
              acc.products);
    CHECK(!strcmp(acc.effective, "2026-11-01T00:00:00Z") && strstr(acc.description, "Linux"));
    CHECK(rf_aws_prices_complete(&q, &acc, &err) == RF_OK);
    /* Linux and Windows rows together: not one price */
    memset(&acc, 0, sizeof acc);
    CHECK(read_page(&q, "ec2_g6_ambiguous.json", &acc, tok, &err) == RF_ERR_FORMAT);
    CHECK_MSG(strstr(err.msg, "different") && strstr(err.msg, "g6.xlarge"), "%s", err.msg);
    rf_price_query s = {RF_PRICE_SAGEMAKER, "ml.g6.xlarge", "us-east-1", NULL};
    memset(&acc, 0, sizeof acc);
    CHECK(read_page(&s, "sagemaker_g6.json", &acc, tok, &err) == RF_OK);
    CHECK(acc.usd_per_hour == 1.1267 && rf_aws_prices_complete(&s, &acc, &err) == RF_OK);
    /* Bedrock: input on one page, output on the next, per 1K tokens */
    rf_price_query m = {RF_PRICE_BEDROCK, "amazon.nova-micro-v1:0", "us-east-1", NULL};
    memset(&acc, 0, sizeof acc);
    CHECK(read_page(&m, "bedrock_nova_page1.json", &acc, tok, &err) == RF_OK && tok[0]);
    CHECK(rf_aws_prices_complete(&m, &acc, &err) == RF_ERR_IO && strstr(err.msg, "output"));
    CHECK(read_page(&m, "bedrock_nova_page2.json", &acc, tok, &err) == RF_OK && !tok[0]);
    CHECK_MSG(acc.usd_per_m_input > 0.034999 && acc.usd_per_m_input < 0.035001 &&
                  acc.usd_per_m_output > 0.139999 && acc.usd_per_m_output < 0.140001,
              "%g %g", acc.usd_per_m_input, acc.usd_per_m_output);
    CHECK(rf_aws_prices_complete(&m, &acc, &err) == RF_OK);
    /* bad pages, each named */
    static const struct {
        const char *body, *needle;
    } bad[] = {
        {"not json", "not a JSON object"},
        {"{\"FormatVersion\": \"aws_v1\"}", "no PriceList"},
        {"{\"PriceList\": [1]}", "PriceList[0] is not a string"},
        {"{\"PriceList\": [\"{\\\"product\\\"\"]}", "PriceList[0] is not a product"},
        {"{\"PriceList\": [\"{\\\"terms\\\": {\\\"OnDemand\\\": {\\\"T\\\": "
         "{\\\"priceDimensions\\\""
         ": {\\\"D\\\": {\\\"unit\\\": \\\"Hrs\\\", \\\"pricePerUnit\\\": {\\\"USD\\\": "
         "\\\"cheap\\\"}}}}}}}\"]}",
         "pricePerUnit.USD is not a number"},
        {"{\"PriceList\": [\"{\\\"terms\\\": {\\\"OnDemand\\\": {\\\"T\\\": "
         "{\\\"priceDimensions\\\""
         ": {\\\"D\\\": {\\\"unit\\\": \\\"Quantity\\\", \\\"pricePerUnit\\\": {\\\"USD\\\": "
         "\\\"1.0\\\"}}}}}}}\"]}",
         "is not hours"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        memset(&acc, 0, sizeof acc);
        rf_status st = rf_aws_prices_page(&q, bad[i].body, strlen(bad[i].body), &acc, tok, &err);
        CHECK_MSG(st == RF_ERR_FORMAT && strstr(err.msg, bad[i].needle), "%zu: %d %s", i, st,
                  err.msg);
    }
}

static void test_prices_file(const char *dir) {
    char path[1200];
    snprintf(path, sizeof path, "%s/prices.json", dir);
    rf_error err = {0};
    json_t *p = NULL;
    CHECK(rf_prices_load(path, false, &p, &err) == RF_ERR_IO && strstr(err.msg, path));
    CHECK(rf_prices_load(path, true, &p, &err) == RF_OK && json_object_get(p, "about"));
    CHECK(rf_prices_set_instance(p, "g6.xlarge", 0.8048, "aws-pricing-api GetProducts us-east-1",
                                 "2026-12-01", "us-east-1", &err) == RF_OK);
    CHECK(rf_prices_set_per_token(p, "amazon.nova-micro-v1:0", 0.035, 0.14, "Nova Micro",
                                  "aws-pricing-api GetProducts us-east-1", "2026-12-01",
                                  "us-east-1", &err) == RF_OK);
    CHECK(rf_prices_save(p, path, &err) == RF_OK);
    json_decref(p);
    /* written again over an entry with more fields: they are kept, the assumption mark goes */
    CHECK(rf_prices_load(path, false, &p, &err) == RF_OK);
    json_object_set_new(json_object_get(json_object_get(p, "instances"), "g6.xlarge"), "hardware",
                        json_string("NVIDIA L4"));
    json_object_set_new(json_object_get(json_object_get(p, "instances"), "g6.xlarge"), "assumption",
                        json_true());
    CHECK(rf_prices_set_instance(p, "g6.xlarge", 0.81, "src2", "2026-12-02", NULL, &err) == 0);
    CHECK(rf_prices_save(p, path, &err) == RF_OK);
    json_decref(p);
    rf_catalog cat;
    rf_catalog_load(&cat, path, NULL);
    rf_price pr;
    CHECK(rf_catalog_instance(&cat, "g6.xlarge", &pr) && pr.usd_per_hour == 0.81);
    CHECK(!strcmp(pr.source, "src2") && !strcmp(pr.date, "2026-12-02") && !pr.assumption);
    CHECK(rf_catalog_per_token(&cat, "bedrock:us-east-1/amazon.nova-micro-v1:0", &pr) &&
          pr.usd_per_m_output == 0.14);
    CHECK(rf_catalog_need_instance(&cat, "g6.xlarge", &pr, &err) == RF_OK);
    CHECK(rf_catalog_need_instance(&cat, "p9.huge", &pr, &err) == RF_ERR_ARG);
    CHECK_MSG(strstr(err.msg, "p9.huge") && strstr(err.msg, path) &&
                  strstr(err.msg, "roofline prices --instance p9.huge"),
              "%s", err.msg);
    CHECK(rf_catalog_need_instance(&cat, "ml.x9", &pr, &err) == RF_ERR_ARG &&
          strstr(err.msg, "--sagemaker-instance ml.x9"));
    rf_catalog_free(&cat);
    /* a run file naming instance types: checked against the file before a run */
    rf_runfile rf;
    memset(&rf, 0, sizeof rf);
    rf_run_desc_defaults(&rf.desc);
    const char *run = "{\"backends\": [{\"name\": \"g6\", \"uri\": \"openai:http://h:1/v1\", "
                      "\"instance\": \"g6.xlarge\"}, {\"name\": \"big\", \"uri\": "
                      "\"openai:http://h:2/v1\", \"price\": {\"instance\": \"p9.huge\"}}]}";
    CHECK_MSG(rf_runfile_parse_json("run.json", run, &rf, &err) == RF_OK, "%s", err.msg);
    CHECK(!strcmp(rf.desc.backends[0].price_instance, "g6.xlarge"));
    CHECK(rf_econ_check_prices(&rf.desc, path, &err) == RF_ERR_ARG);
    CHECK_MSG(strstr(err.msg, "backend 'big'") && strstr(err.msg, "p9.huge") &&
                  strstr(err.msg, path),
              "%s", err.msg);
    rf.desc.n_backends = 1;
    CHECK(rf_econ_check_prices(&rf.desc, path, &err) == RF_OK);
    rf_runfile_free(&rf);
    /* a number of its own needs no entry */
    memset(&rf, 0, sizeof rf);
    rf_run_desc_defaults(&rf.desc);
    run = "{\"backends\": [{\"uri\": \"openai:http://h:1/v1\", \"instance\": \"p9.huge\", "
          "\"price\": {\"usd_per_hour\": 3}}]}";
    CHECK(rf_runfile_parse_json("run.json", run, &rf, &err) == RF_OK);
    CHECK(rf_econ_check_prices(&rf.desc, path, &err) == RF_OK);
    rf_runfile_free(&rf);
    /* two different names */
    memset(&rf, 0, sizeof rf);
    rf_run_desc_defaults(&rf.desc);
    run = "{\"backends\": [{\"uri\": \"openai:http://h:1/v1\", \"instance\": \"a.b\", "
          "\"price\": {\"instance\": \"c.d\"}}]}";
    CHECK(rf_runfile_parse_json("run.json", run, &rf, &err) == RF_ERR_ARG &&
          strstr(err.msg, "backends[0].instance"));
    rf_runfile_free(&rf);
    unlink(path);
}

static void test_placeholders(void) {
    rf_runfile rf;
    memset(&rf, 0, sizeof rf);
    rf_run_desc_defaults(&rf.desc);
    rf_error err = {0};
    const char *run = "{\"backends\": [{\"name\": \"g6\", \"uri\": \"openai:http://h:1/v1\"}, "
                      "{\"name\": \"sm\", \"uri\": \"sagemaker:us-east-1/<your-endpoint-name>\"}]}";
    CHECK(rf_runfile_parse_json("seeds-six.json", run, &rf, &err) == RF_ERR_ARG);
    CHECK_MSG(strstr(err.msg, "seeds-six.json") && strstr(err.msg, "backends[1].uri") &&
                  strstr(err.msg, "'<your-endpoint-name>'"),
              "%s", err.msg);
    rf_runfile_free(&rf);
    /* the shipped run file, as it is */
    char path[1200], *text = NULL;
    size_t len = 0;
    snprintf(path, sizeof path, "%s/../../data/runs/seeds-six.json", g_data);
    CHECK_MSG(rf_read_file(path, 1 << 20, &text, &len, &err) == RF_OK, "%s", err.msg);
    memset(&rf, 0, sizeof rf);
    rf_run_desc_defaults(&rf.desc);
    CHECK(text && rf_runfile_parse_json("seeds-six.json", text, &rf, &err) == RF_ERR_ARG &&
          strstr(err.msg, "<your-"));
    rf_runfile_free(&rf);
    free(text);
}

int main(void) {
    const char *td = getenv("ROOFLINE_TEST_DATA");
    snprintf(g_data, sizeof g_data, "%s", td && *td ? td : "tests/data");
    char dir[] = "/tmp/test_prices.XXXXXX";
    CHECK(mkdtemp(dir) != NULL);
    test_requests();
    test_pages();
    test_prices_file(dir);
    test_placeholders();
    rmdir(dir);
    return check_summary("test_prices");
}
