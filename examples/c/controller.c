/*
 * controller: a host run by the elector (krabka_elector_new), the C form of
 * examples/go/controller.
 *
 *   controller <bootstrap> <role> <member> <topic> [seconds]
 *
 * One poll(2) loop over the queue's fd. The elector campaigns, renews,
 * stops the term before the lease runs out and campaigns again, all on the
 * library's threads; its events arrive as KRABKA_EVENT_TERM in the queue.
 * Guarded writes go out only between a STARTED and its STOPPED, through the
 * leadership taken from STARTED. Destroying the STOPPED event lets the
 * elector campaign again. After [seconds] (default: run until killed) it
 * destroys the elector, which resigns, so a standby takes over at once.
 */
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "krabka_coord.h"

static int fail(const char *what, krabka_err_t e, const char *why) {
    fprintf(stderr, "controller: %s: %s: %s\n", what, krabka_err2name(e), why);
    return 1;
}

int main(int argc, char **argv) {
    char es[512] = "", holder[KRABKA_NAME_BUF];
    krabka_conf_t *conf = krabka_conf_new();
    krabka_client_t *client = NULL;
    krabka_queue_t *queue = NULL;
    krabka_elector_t *elector = NULL;
    krabka_leadership_t *term = NULL; /* non-NULL between STARTED and STOPPED */
    krabka_err_t e;
    int fd = -1;
    if (argc < 5) {
        fprintf(stderr, "usage: controller <bootstrap> <role> <member> <topic> [seconds]\n");
        return 2;
    }
    long seconds = argc > 5 ? atol(argv[5]) : 0;
    if ((e = krabka_conf_set(conf, "bootstrap.servers", argv[1], es, sizeof es)) ||
        (e = krabka_client_new(conf, &client, es, sizeof es)))
        return fail("client", e, es);
    krabka_conf_destroy(conf);
    if ((e = krabka_queue_new(&queue)) || (e = krabka_queue_fd(queue, &fd)) ||
        (e = krabka_elector_new(client, argv[2], KRABKA_NTS, argv[3], KRABKA_NTS, 0, queue, 0, &elector, es,
                                sizeof es)))
        return fail("elector", e, es);

    time_t end = seconds > 0 ? time(NULL) + seconds : 0;
    unsigned long n = 0, written = 0;
    while (!end || time(NULL) < end) {
        struct pollfd p = {fd, POLLIN, 0};
        poll(&p, 1, term ? 500 : 1000); /* the pace of commands while leading */
        krabka_event_t *ev = NULL;
        while (krabka_queue_poll(queue, &ev) == KRABKA_OK && ev) {
            krabka_term_event_kind_t kind = 0;
            uint64_t t = 0;
            krabka_event_term_kind(ev, &kind, NULL, 0); /* INVALID_ARG (kind 0) for other types */
            krabka_event_term(ev, &t, NULL, 0);
            krabka_event_holder(ev, holder, sizeof holder, NULL, NULL, 0);
            if (kind == KRABKA_TERM_STARTED) {
                krabka_event_take_leadership(ev, &term, NULL, 0);
                printf("STARTED term %llu\n", (unsigned long long)t);
            } else if (kind == KRABKA_TERM_STOPPED) {
                krabka_stop_reason_t r = KRABKA_STOP_NONE;
                krabka_event_stop_reason(ev, &r, NULL, 0);
                krabka_event_error(ev, &e, es, sizeof es);
                printf("STOPPED term %llu reason %d: %s\n", (unsigned long long)t, (int)r, es);
                krabka_leadership_destroy(term); /* the term is over */
                term = NULL;
            } else if (kind == KRABKA_TERM_AT_RISK || kind == KRABKA_TERM_RECOVERED) {
                printf("%s term %llu\n", kind == KRABKA_TERM_AT_RISK ? "AT_RISK" : "RECOVERED", (unsigned long long)t);
            } else if (kind == KRABKA_TERM_NEW_LEADER) {
                printf("NEW_LEADER %s\n", holder);
            }
            krabka_event_destroy(ev); /* a STOPPED: the elector may campaign again */
        }
        if (term) { /* leading: one guarded write; the broker refuses it after the term */
            char value[64];
            krabka_message_t m = KRABKA_MESSAGE_INIT;
            snprintf(value, sizeof value, "command %lu", ++n);
            m.topic = argv[4];
            m.value = (const uint8_t *)value;
            m.value_len = strlen(value);
            if ((e = krabka_leadership_produce(term, &m, 1, KRABKA_TIMEOUT_DEFAULT, NULL, es, sizeof es)))
                fprintf(stderr, "controller: produce refused: %s: %s\n", krabka_err2name(e), es);
            else
                written++;
        }
    }
    printf("%lu commands written\n", written);
    krabka_elector_destroy(elector); /* resigns a held term; its STOPPED stays in the queue */
    krabka_leadership_destroy(term);  /* NULL: INVALID_HANDLE, harmless */
    krabka_queue_destroy(queue);
    krabka_client_destroy(client);
    return 0;
}
