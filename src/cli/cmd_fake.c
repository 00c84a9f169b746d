/* cmd_fake.c: `roofline fake-backend`: runs the bench's fake OpenAI backend (src/bench/
 * fake_server.h) until SIGINT or SIGTERM, then stops it and prints its counters.
 * The signals are blocked before the server starts, so its threads inherit the mask and the
 * main thread takes them with sigwait: no handler, no async-signal-safety concerns. */
#include <signal.h>
#include <stdio.h>
#include <string.h>

#include "fake/fake_server.h"
#include "cli.h"

static void usage(void) {
    printf("usage: roofline fake-backend [--port N] [--ttft-ms X] [--gap-ms Y] [--tokens N]\n"
           "         [--tokens-per-chunk K] [--no-usage] [--fault KIND] [--fault-rate R]\n"
           "         [--fault-after K] [--stall-ms X] [--model NAME] [--seed S]\n"
           "A fake OpenAI-compatible server on 127.0.0.1 that streams a programmed schedule:\n"
           "first content X ms after the request arrives (default 50), then one event every\n"
           "Y ms (default 10); N tokens (default: the request's max_tokens, else 16) of text\n"
           "\"tok \", K per event (default 1); usage on unless --no-usage. --fault injects KIND\n"
           "(refuse, 500, 429, stall, truncate, invalid_json, error_event, wrong_tool_call,\n"
           "wrong_tool_name) into a fraction R of the requests (default 1 with --fault).\n"
           "Requests override all of this with a \"fake\" object (see src/fake/fake_server.h);\n"
           "what they ask for is capped (1 MiB of content per stream event, 64 MiB per\n"
           "non-stream body, 1024-byte names): a request over a cap gets a 400 naming the fields.\n"
           "Port 0 (default) picks a free one. Prints 'listening on http://127.0.0.1:PORT/v1';\n"
           "SIGINT or SIGTERM stops it and prints the counters.\n");
}

int cli_fake(int argc, char **argv) {
    static const char *const verb = "fake-backend";
    rf_fake_params p = rf_fake_default_params();
    bool rate_set = false;
    long v;
    double d;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *val = i + 1 < argc ? argv[i + 1] : NULL;
        if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
            usage();
            return RF_EXIT_OK;
        } else if (!strcmp(a, "--no-usage")) {
            p.usage = false;
            continue;
        } else if (!val) {
            cli_errorf(verb, "unknown option or missing value '%s' (roofline %s --help)", a, verb);
            return RF_EXIT_BAD_INPUT;
        }
        i++;
        if (!strcmp(a, "--port")) {
            if (!cli_parse_int(verb, a, val, 0, 65535, &v)) return RF_EXIT_BAD_INPUT;
            p.port = (int)v;
        } else if (!strcmp(a, "--ttft-ms")) {
            if (!cli_parse_float(verb, a, val, 0, 600000, &p.ttft_ms)) return RF_EXIT_BAD_INPUT;
        } else if (!strcmp(a, "--gap-ms")) {
            if (!cli_parse_float(verb, a, val, 0, 600000, &p.gap_ms)) return RF_EXIT_BAD_INPUT;
        } else if (!strcmp(a, "--tokens")) {
            if (!cli_parse_int(verb, a, val, 0, 1000000, &v)) return RF_EXIT_BAD_INPUT;
            p.tokens = (int32_t)v;
        } else if (!strcmp(a, "--tokens-per-chunk")) {
            if (!cli_parse_int(verb, a, val, 1, 10000, &v)) return RF_EXIT_BAD_INPUT;
            p.tokens_per_chunk = (int32_t)v;
        } else if (!strcmp(a, "--fault")) {
            if (!rf_fake_fault_parse(val, &p.fault)) {
                cli_errorf(verb,
                           "--fault '%s' is not one of none, refuse, 500, 429, stall, truncate, "
                           "invalid_json, error_event, wrong_tool_call, wrong_tool_name",
                           val);
                return RF_EXIT_BAD_INPUT;
            }
        } else if (!strcmp(a, "--fault-rate")) {
            if (!cli_parse_float(verb, a, val, 0, 1, &d)) return RF_EXIT_BAD_INPUT;
            p.fault_rate = d;
            rate_set = true;
        } else if (!strcmp(a, "--fault-after")) {
            if (!cli_parse_int(verb, a, val, 0, 1000000, &v)) return RF_EXIT_BAD_INPUT;
            p.fault_after = (int32_t)v;
        } else if (!strcmp(a, "--stall-ms")) {
            if (!cli_parse_float(verb, a, val, 0, 86400000, &p.stall_ms)) return RF_EXIT_BAD_INPUT;
        } else if (!strcmp(a, "--model")) {
            p.model = val;
        } else if (!strcmp(a, "--seed")) {
            if (!cli_parse_int(verb, a, val, 0, 0x7fffffffL, &v)) return RF_EXIT_BAD_INPUT;
            p.seed = (uint64_t)v;
        } else {
            cli_errorf(verb, "unknown option '%s' (roofline %s --help)", a, verb);
            return RF_EXIT_BAD_INPUT;
        }
    }
    if (p.fault != RF_FAKE_FAULT_NONE && !rate_set) p.fault_rate = 1;

    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, SIGINT);
    sigaddset(&set, SIGTERM);
    pthread_sigmask(SIG_BLOCK, &set, NULL);
    signal(SIGPIPE, SIG_IGN);
    cli_raise_fd_limit(verb); /* a descriptor per connection */

    rf_fake *f = NULL;
    rf_error err = {0};
    rf_status st = rf_fake_start(&p, &f, &err);
    if (st) {
        cli_errorf(verb, "%s", err.msg);
        return cli_exit_for(st);
    }
    printf("listening on http://127.0.0.1:%d/v1\n", rf_fake_port(f));
    fflush(stdout);
    int sig = 0;
    sigwait(&set, &sig);
    rf_fake_stats s = rf_fake_get_stats(f);
    rf_fake_stop(f);
    printf("stopped (%s): requests %llu, chat %llu, bad %llu, streams started %llu, "
           "streams completed %llu, bodies completed %llu, faults injected %llu, client "
           "disconnects %llu\n",
           sig == SIGINT ? "SIGINT" : "SIGTERM", (unsigned long long)s.requests,
           (unsigned long long)s.chat_requests, (unsigned long long)s.bad_requests,
           (unsigned long long)s.streams_started, (unsigned long long)s.streams_completed,
           (unsigned long long)s.bodies_completed, (unsigned long long)s.faults_injected,
           (unsigned long long)s.client_disconnects);
    printf("  chunk lateness ms (sent - programmed, 0.1 ms bins): p50 %.1f p90 %.1f p99 %.1f max "
           "%.2f over %llu chunks\n",
           rf_fake_late_quantile(&s, 0.5), rf_fake_late_quantile(&s, 0.9),
           rf_fake_late_quantile(&s, 0.99), s.late_max_ms, (unsigned long long)s.chunks_sent);
    printf("  served %llu streamed tokens in %.4f s (first request in to last stream out): %.1f "
           "tok/s\n",
           (unsigned long long)s.streamed_tokens, s.served_s,
           s.served_s > 0 ? (double)s.streamed_tokens / s.served_s : 0.0);
    for (int k = 1; k < RF_FAKE_FAULT_COUNT; k++)
        if (s.faults_by_kind[k])
            printf("  fault %-16s %llu\n", rf_fake_fault_name((rf_fake_fault)k),
                   (unsigned long long)s.faults_by_kind[k]);
    fflush(stdout);
    return RF_EXIT_OK;
}
