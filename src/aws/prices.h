/* prices.h: on-demand prices from the AWS Price List Query API (GetProducts), for the
 * instance types and Bedrock models a cost analysis names.
 *
 * One query asks for one thing: an EC2 instance type (ServiceCode AmazonEC2; TERM_MATCH on
 * instanceType, regionCode, operatingSystem Linux, tenancy Shared, preInstalledSw NA,
 * capacitystatus Used), a SageMaker instance type (AmazonSageMaker; instanceName, regionCode,
 * component Hosting: real-time inference) or a Bedrock model (AmazonBedrock; regionCode, model
 * (the Price List's model name, e.g. "Nova Micro"), feature On-demand Inference; its input and
 * output token prices). The pages (PriceList: JSON strings, each a product with its terms) are
 * read with jansson; the price is the OnDemand term's priceDimensions pricePerUnit USD. More
 * than one distinct price for a query is an error (the filters did not pin one product), as is
 * none.
 *
 * Fetching signs each page's POST with aws/sign.h (service "pricing", the Price List
 * API's region, us-east-1 by default) at the endpoint aws/endpoint.h gives
 * (AWS_ENDPOINT_URL_PRICING, AWS_ENDPOINT_URL, else https://api.pricing.REGION.amazonaws.com).
 *
 * Ownership: no state kept between calls; rf_price_found is plain data; the request body
 * rf_aws_prices_request returns is the caller's (json_decref).
 */
#ifndef RF_AWS_PRICES_H
#define RF_AWS_PRICES_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>

#include "aws/cred.h"
#include "roofline/status.h"

typedef enum rf_price_kind {
    RF_PRICE_EC2,       /* an EC2 instance type, $/hour */
    RF_PRICE_SAGEMAKER, /* a SageMaker hosting instance type (ml.*), $/hour */
    RF_PRICE_BEDROCK,   /* a Bedrock model, $ per million input and output tokens */
} rf_price_kind;

typedef struct rf_price_query {
    rf_price_kind kind;
    const char *name;       /* "g6.xlarge", "ml.g6.xlarge", "amazon.nova-micro-v1:0" */
    const char *region;     /* whose price: "us-east-1" */
    const char *model_name; /* Bedrock: the Price List's model name; NULL: from the built-in
                             * table of model ids (rf_aws_prices_model_name) */
} rf_price_query;

typedef struct rf_price_found {
    double usd_per_hour;                      /* EC2, SageMaker */
    double usd_per_m_input, usd_per_m_output; /* Bedrock */
    int products;                             /* products the pages held */
    char effective[40];                       /* the OnDemand term's effectiveDate */
    char description[200];                    /* the price dimension's description */
} rf_price_found;

#define RF_PRICE_TOKEN_MAX 2048 /* a NextToken's bytes */

/* The Price List's model name for a Bedrock model id ("amazon.nova-micro-v1:0" or the inference
 * profile "us.amazon.nova-micro-v1:0" -> "Nova Micro"); NULL when the table has none. */
const char *rf_aws_prices_model_name(const char *model_id);

/* The GetProducts body for q ({ServiceCode, Filters, FormatVersion, MaxResults[, NextToken]});
 * next_token NULL for the first page. NULL when out of memory or (Bedrock) the model name is
 * unknown: err says which. Caller frees. */
json_t *rf_aws_prices_request(const rf_price_query *q, const char *next_token, rf_error *err);

/* Reads one GetProducts response page (the JSON body) into *acc, which starts zeroed and is
 * passed to every page of the query; next_token gets the page's NextToken ("" when it is the
 * last page; RF_PRICE_TOKEN_MAX bytes). RF_ERR_FORMAT naming what was wrong (not JSON, a
 * PriceList entry that is not a JSON string of a product, an OnDemand price that is not a
 * number, two different prices for the same thing, a Bedrock unit other than 1K or 1M tokens);
 * *acc keeps what earlier pages gave. */
rf_status rf_aws_prices_page(const rf_price_query *q, const char *body, size_t len,
                             rf_price_found *acc, char next_token[RF_PRICE_TOKEN_MAX],
                             rf_error *err);

/* Whether *acc, after the last page, holds the whole price q asks for: RF_OK, else RF_ERR_IO
 * naming the query (no product matched, or a Bedrock model without its input or output price). */
rf_status rf_aws_prices_complete(const rf_price_query *q, const rf_price_found *acc, rf_error *err);

/* Fetches q's price: every page, signed with creds for the Price List API in api_region
 * (NULL: us-east-1). RF_ERR_IO for a transfer that failed or an HTTP error (the message names
 * the status and AWS's error type and message, never a credential), and the errors above. */
rf_status rf_aws_prices_fetch(const rf_price_query *q, const rf_aws_creds *creds,
                              const char *api_region, rf_price_found *out, rf_error *err);

#endif
