#!/usr/bin/env python3
"""Prints the SigV4 Authorization headers botocore computes for the requests of
tests/unit/aws/test_sign.c (its BOTO_* constants came from this script; run it again after
changing a request there). Dev-only: botocore is not a dependency of the product."""
import datetime
from unittest import mock

import botocore.auth
import botocore.awsrequest
import botocore.credentials

DATE = datetime.datetime(2015, 8, 30, 12, 36, 0)


def sign(method, url, headers, body, region, service, token=None):
    creds = botocore.credentials.Credentials(
        "AKIDEXAMPLE", "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY", token)
    req = botocore.awsrequest.AWSRequest(method=method, url=url, headers=headers, data=body)
    with mock.patch("botocore.auth.get_current_datetime", return_value=DATE):
        botocore.auth.SigV4Auth(creds, service, region).add_auth(req)
    return req.headers["Authorization"]


body = b'{"messages":[{"role":"user","content":[{"text":"hi"}]}]}'
# AWS's published suite (aws-sig-v4-test-suite get-vanilla): botocore must agree with it
print("VANILLA", sign("GET", "https://example.amazonaws.com/", {}, b"", "us-east-1", "service"))
print("POST_VANILLA", sign("POST", "https://example.amazonaws.com/", {}, b"", "us-east-1",
                           "service"))
print("QUERY_ORDER", sign("GET", "https://example.amazonaws.com/?Param2=value2&Param1=value1", {},
                          b"", "us-east-1", "service"))
print("BOTO_CONVERSE", sign("POST",
      "https://bedrock-runtime.us-east-1.amazonaws.com/model/anthropic.claude-v2%3A1/converse",
      {"Content-Type": "application/json"}, body, "us-east-1", "bedrock", "SESSIONTOKEN"))
print("BOTO_SAGEMAKER", sign("POST",
      "http://127.0.0.1:8123/endpoints/my-endpoint/invocations",
      {"Content-Type": "application/json", "Accept": "application/json"}, body,
      "eu-west-1", "sagemaker"))
