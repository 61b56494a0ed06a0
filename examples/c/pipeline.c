/*
 * pipeline: a leader that turns requests into commands exactly once.
 *
 *   pipeline <bootstrap> <role> <member> <requests-topic> <commands-topic>
 *
 * While it holds the role it reads the request topic under the term
 * (krabka_leadership_consume: read_committed, from the offsets committed
 * for the role) and, for each poll, writes one command per request to the
 * command topic (same partition, value "done <request>") with the
 * consumed offsets in the same transaction
 * (krabka_leadership_produce_offsets). If it is deposed (killed, paused,
 * cut off), the broker refuses its late commands and offsets together, and
 * the next leader starts exactly after the last request whose command was
 * committed: no request is lost and none is dispatched twice
 * (docs/PIPELINES.md). Devices still check the krabka.token header of each
 * command for side effects outside Kafka.
 *
 * SIGTERM/SIGINT resigns (a standby takes over at once) and exits. Both
 * topics must exist.
 */
#define _POSIX_C_SOURCE 200809L
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "krabka_coord.h"

enum { MAX_RECORDS = 100, MAX_PARTITIONS = 64 };

static volatile sig_atomic_t stop_requested;
static void on_signal(int sig) {
    (void)sig;
    stop_requested = 1;
}

static char errstr[512];
#define ES errstr, sizeof errstr

/* One input of a leadership: poll -> commands + offsets until an error or a
 * signal. Returns the error (KRABKA_OK on a signal). */
static krabka_err_t run_input(krabka_leadership_t *l, krabka_input_t *in, const char *commands) {
    krabka_err_t e;
    while (!stop_requested) {
        int due = 0;
        if (krabka_leadership_renew_due(l, &due) == KRABKA_OK && due &&
            (e = krabka_leadership_renew(l, KRABKA_TIMEOUT_DEFAULT, ES)) != KRABKA_OK && krabka_err_is_fatal(e))
            return e;
        krabka_records_t *recs = NULL;
        e = krabka_input_poll(in, MAX_RECORDS, 500, &recs, ES);
        if (e == KRABKA_ERR_TIMEOUT)
            continue; /* nothing new */
        if (e != KRABKA_OK)
            return e;
        size_t n = 0;
        krabka_records_count(recs, &n);
        krabka_message_t msgs[MAX_RECORDS];
        char values[MAX_RECORDS][300];
        for (size_t i = 0; i < n; i++) {
            krabka_input_record_t r;
            krabka_records_get(recs, i, &r);
            krabka_message_t m = KRABKA_MESSAGE_INIT;
            int len = snprintf(values[i], sizeof values[i], "done %.*s", (int)(r.value_len < 250 ? r.value_len : 250),
                               r.value ? (const char *)r.value : "");
            m.topic = commands;
            m.partition = r.partition;
            m.key = r.key; /* points into recs: destroyed after the write */
            m.key_len = r.key_len;
            m.value = (const uint8_t *)values[i];
            m.value_len = (size_t)len;
            msgs[i] = m;
        }
        /* The offsets of every partition read: the next request to read. */
        krabka_offset_t pos[MAX_PARTITIONS];
        size_t np = 0;
        krabka_input_position(in, pos, MAX_PARTITIONS, &np);
        if (np > MAX_PARTITIONS)
            np = MAX_PARTITIONS;
        e = krabka_leadership_produce_offsets(l, pos, np, msgs, n, KRABKA_TIMEOUT_DEFAULT, NULL, ES);
        krabka_records_destroy(recs);
        if (e != KRABKA_OK)
            return e;
        printf("dispatched %zu commands\n", n);
        fflush(stdout);
    }
    return KRABKA_OK;
}

/* One leadership: read the requests from the committed offsets; after an
 * error that leaves the leadership (a timeout, say), read them again from
 * the committed offsets (nothing of the failed write was committed).
 * Returns the error that ended the term (KRABKA_OK on a signal). */
static krabka_err_t lead(krabka_leadership_t *l, const char *requests, const char *commands) {
    const char *topics[1] = {requests};
    krabka_err_t e = KRABKA_OK;
    while (!stop_requested) {
        krabka_input_t *in = NULL;
        e = krabka_leadership_consume(l, topics, 1, KRABKA_TIMEOUT_DEFAULT, &in, ES);
        if (e == KRABKA_OK) {
            e = run_input(l, in, commands);
            krabka_input_destroy(in);
        }
        if (e != KRABKA_OK && krabka_err_is_fatal(e))
            return e; /* FENCED, LEASE_EXPIRED, ...: the term is over */
        if (e != KRABKA_OK)
            fprintf(stderr, "pipeline: %s: %s (reading again from the committed offsets)\n", krabka_err2name(e), errstr);
    }
    return KRABKA_OK;
}

int main(int argc, char **argv) {
    if (argc != 6) {
        fprintf(stderr, "usage: %s <bootstrap> <role> <member> <requests-topic> <commands-topic>\n", argv[0]);
        return 2;
    }
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_signal;
    sigaction(SIGTERM, &sa, NULL);
    sigaction(SIGINT, &sa, NULL);

    krabka_conf_t *conf = krabka_conf_new();
    krabka_client_t *client = NULL;
    if (krabka_conf_set(conf, "bootstrap.servers", argv[1], ES) != KRABKA_OK ||
        krabka_client_new(conf, &client, ES) != KRABKA_OK) {
        fprintf(stderr, "pipeline: %s\n", errstr);
        return 1;
    }
    krabka_conf_destroy(conf);
    while (!stop_requested) {
        krabka_leadership_t *l = NULL;
        krabka_err_t e = krabka_client_acquire(client, argv[2], KRABKA_NTS, argv[3], KRABKA_NTS, 1000, &l, ES);
        if (e == KRABKA_ERR_TIMEOUT)
            continue; /* still a standby: look at the stop flag, wait again */
        if (e != KRABKA_OK) {
            fprintf(stderr, "pipeline: acquire: %s\n", errstr);
            break;
        }
        krabka_token_t t;
        char tok[KRABKA_TOKEN_TEXT_MAX];
        krabka_leadership_token(l, &t);
        krabka_token_format(t, tok, sizeof tok);
        printf("leading with token %s\n", tok);
        fflush(stdout);
        e = lead(l, argv[4], argv[5]);
        if (e != KRABKA_OK)
            printf("term over: %s: %s\n", krabka_err2name(e), errstr);
        if (stop_requested)
            krabka_leadership_resign(l, KRABKA_TIMEOUT_DEFAULT, ES);
        krabka_leadership_destroy(l);
    }
    krabka_client_destroy(client);
    return 0;
}
