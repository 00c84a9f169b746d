/* cmd_fake.c: `roofline fake-backend`: runs the bench's fake OpenAI backend (src/fake/
 * fake_server.h) until SIGINT or SIGTERM, then stops it and prints its counters.
 * The signals are blocked before the server starts, so its threads inherit the mask and the
 * main thread takes them with sigwait: no handler, no async-signal-safety concerns. */
#include <signal.h>
#include <stdio.h>
#include <string.h>

#include "fake/fake_server.h"
#include "cli.h"

static rf_status parse_fault(void *dest, const char *opt, const char *v, rf_error *err) {
    if (!rf_fake_fault_parse(v, dest))
        return rf_error_set(err, RF_ERR_ARG,
                            "%s '%s' is not one of none, refuse, 500, 429, stall, truncate, "
                            "invalid_json, error_event, wrong_tool_call, wrong_tool_name",
                            opt, v);
    return RF_OK;
}

int cli_fake(int argc, char **argv) {
    static const char *const verb = "fake-backend";
    rf_fake_params p = rf_fake_default_params();
    double rate = -1;
    long seed = -1;
    const rf_opt opts[] = {
        {"--port", NULL, RF_OPT_INT, RF_OPT_DEST(p.port), .lo = 0, .hi = 65535, .metavar = "N",
         .help = "the port on 127.0.0.1 (default 0: a free one)"},
        {"--ttft-ms", NULL, RF_OPT_DOUBLE, RF_OPT_DEST(p.ttft_ms), .lo = 0, .hi = 600000,
         .metavar = "X", .help = "first content X ms after the request arrives (default 50)"},
        {"--gap-ms", NULL, RF_OPT_DOUBLE, RF_OPT_DEST(p.gap_ms), .lo = 0, .hi = 600000,
         .metavar = "Y", .help = "then one event every Y ms (default 10)"},
        {"--tokens", NULL, RF_OPT_INT, RF_OPT_DEST(p.tokens), .lo = 0, .hi = 1000000,
         .metavar = "N", .help = "tokens per reply (default: the request's max_tokens, else 16)"},
        {"--tokens-per-chunk", NULL, RF_OPT_INT, RF_OPT_DEST(p.tokens_per_chunk), .lo = 1,
         .hi = 10000, .metavar = "K", .help = "tokens per event (default 1)"},
        {"--no-usage", NULL, RF_OPT_FALSE, RF_OPT_DEST(p.usage),
         .help = "no usage object in the replies"},
        {"--fault", NULL, RF_OPT_STRING, .dest = &p.fault, .fn = parse_fault, .metavar = "KIND",
         .help = "inject KIND: refuse, 500, 429, stall, truncate, invalid_json, error_event, "
                 "wrong_tool_call, wrong_tool_name"},
        {"--fault-rate", NULL, RF_OPT_DOUBLE, RF_OPT_DEST(rate), .lo = 0, .hi = 1, .metavar = "R",
         .help = "the fraction of requests that get the fault (default 1)"},
        {"--fault-after", NULL, RF_OPT_INT, RF_OPT_DEST(p.fault_after), .lo = 0, .hi = 1000000,
         .metavar = "K", .help = "content events before a mid-stream fault (default 2)"},
        {"--stall-ms", NULL, RF_OPT_DOUBLE, RF_OPT_DEST(p.stall_ms), .lo = 0, .hi = 86400000,
         .metavar = "X", .help = "how long the stall fault stalls (default 60000)"},
        {"--model", NULL, RF_OPT_STRING, RF_OPT_DEST(p.model), .metavar = "NAME",
         .help = "the served model id (default fake-model)"},
        {"--seed", NULL, RF_OPT_INT, RF_OPT_DEST(seed), .lo = 0, .hi = 0x7fffffffL, .metavar = "S",
         .help = "the seed of the fault draw (default 1)"},
    };
    const rf_opt_spec spec = {
        .prog = "roofline fake-backend",
        .about =
            "A fake OpenAI-compatible server on 127.0.0.1 that streams a programmed schedule:\n"
            "first content X ms after the request arrives (default 50), then one event every\n"
            "Y ms (default 10); N tokens (default: the request's max_tokens, else 16) of text\n"
            "\"tok \", K per event (default 1); usage on unless --no-usage. --fault injects KIND\n"
            "(refuse, 500, 429, stall, truncate, invalid_json, error_event, wrong_tool_call,\n"
            "wrong_tool_name) into a fraction R of the requests (default 1 with --fault).\n"
            "Requests override all of this with a \"fake\" object (see src/fake/fake_server.h);\n"
            "what they ask for is capped (1 MiB of content per stream event, 64 MiB per\n"
            "non-stream body, 1024-byte names): a request over a cap gets a 400 naming the "
            "fields.\n"
            "Port 0 (default) picks a free one. Prints 'listening on http://127.0.0.1:PORT/v1';\n"
            "SIGINT or SIGTERM stops it and prints the counters.\n",
        .opts = opts,
        .n_opts = sizeof opts / sizeof opts[0],
    };
    int rc = cli_opts(verb, &spec, argc, argv);
    if (rc >= 0) return rc;
    bool rate_set = rate >= 0;
    if (rate_set) p.fault_rate = rate;
    if (seed >= 0) p.seed = (uint64_t)seed;
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
