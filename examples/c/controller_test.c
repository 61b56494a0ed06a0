/*
 * controller_test: a test of a controller built like examples/c/controller.c
 * (an elector, guarded writes only inside a term), written as a user would
 * write it: on the in-process cluster of krabka_coord_testing.h, with no
 * broker and no waiting for real time.
 *
 *   cc controller_test.c $(pkg-config --cflags --libs krabka_coord) && ./a.out
 *
 * Node A wins and dispatches a command; a blind successor fences it in the
 * middle of the next command (the broker model refuses the write and
 * nothing of it is committed) and its term stops as FENCED; node B takes
 * over once the cluster's clock passes A's lease deadline. Prints the wall
 * time it took.
 */
#define _POSIX_C_SOURCE 200809L
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "krabka_coord_testing.h"

static char es[512];
static int failed;

#define EXPECT(cond, ...)                                                   \
    do {                                                                    \
        if (!(cond)) {                                                      \
            failed = 1;                                                     \
            printf("controller_test: FAIL line %d: %s: ", __LINE__, #cond); \
            printf(__VA_ARGS__);                                            \
            printf("\n");                                                   \
        }                                                                   \
    } while (0)
#define MUST(call)                                                              \
    do {                                                                        \
        krabka_err_t e_ = (call);                                               \
        if (e_ != KRABKA_OK) {                                                  \
            printf("controller_test: line %d: %s: %s: %s\n", __LINE__, #call,   \
                   krabka_err2name(e_), es);                                    \
            exit(1);                                                            \
        }                                                                       \
    } while (0)

/* A node of the controller: its client, queue and elector. */
struct node {
    krabka_client_t *client;
    krabka_queue_t *queue;
    krabka_elector_t *elector;
};

static void start(struct node *n, const char *cluster, const char *member, int flags) {
    char bootstrap[128];
    krabka_conf_t *conf = krabka_conf_new();
    snprintf(bootstrap, sizeof bootstrap, "mem://%s", cluster);
    MUST(krabka_conf_set(conf, "bootstrap.servers", bootstrap, es, sizeof es));
    MUST(krabka_client_new(conf, &n->client, es, sizeof es));
    krabka_conf_destroy(conf);
    MUST(krabka_queue_new(&n->queue));
    MUST(krabka_elector_new(n->client, "controller", KRABKA_NTS, member, KRABKA_NTS, flags, n->queue, 0,
                            &n->elector, es, sizeof es));
}

/* The next term event of kind want on n's queue (other events are dropped).
 * While none comes, the cluster's clock moves on by step_ms (0: never),
 * at most 300 times. The caller destroys the event. */
static krabka_event_t *next_term(struct node *n, krabka_term_event_kind_t want, krabka_testing_cluster_t *c,
                                 int64_t step_ms) {
    int fd = -1;
    MUST(krabka_queue_fd(n->queue, &fd));
    for (int i = 0; i < 300; i++) {
        struct pollfd p = {fd, POLLIN, 0};
        krabka_event_t *ev = NULL;
        poll(&p, 1, step_ms ? 5 : 1000);
        while (krabka_queue_poll(n->queue, &ev) == KRABKA_OK && ev) {
            krabka_term_event_kind_t kind = 0;
            krabka_event_term_kind(ev, &kind, NULL, 0);
            if (kind == want)
                return ev;
            krabka_event_destroy(ev);
        }
        if (step_ms)
            MUST(krabka_testing_clock_advance(c, step_ms, es, sizeof es));
    }
    printf("controller_test: no term event %d came\n", (int)want);
    exit(1);
}

static krabka_err_t dispatch(krabka_leadership_t *term, const char *command) {
    krabka_message_t m = KRABKA_MESSAGE_INIT;
    m.topic = "commands";
    m.partition = 0;
    m.value = (const uint8_t *)command;
    m.value_len = strlen(command);
    es[0] = '\0';
    return krabka_leadership_produce(term, &m, 1, KRABKA_TIMEOUT_DEFAULT, NULL, es, sizeof es);
}

/* The committed commands, joined with ','. */
static const char *commands(krabka_testing_cluster_t *c) {
    static char out[256];
    int64_t n = 0;
    out[0] = '\0';
    MUST(krabka_testing_topic_count(c, "commands", 0, &n, es, sizeof es));
    for (int64_t i = 0; i < n; i++) {
        char v[64];
        size_t len = 0;
        MUST(krabka_testing_topic_record(c, "commands", 0, i, NULL, (uint8_t *)v, sizeof v - 1, &len, NULL, es,
                                         sizeof es));
        v[len] = '\0';
        snprintf(out + strlen(out), sizeof out - strlen(out), "%s%s", i ? "," : "", v);
    }
    return out;
}

int main(void) {
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    krabka_testing_cluster_t *cluster = NULL;
    krabka_leadership_t *term_a = NULL, *term_b = NULL;
    krabka_stop_reason_t why = KRABKA_STOP_NONE;
    struct node a, b;

    MUST(krabka_testing_cluster_new("controller-test", KRABKA_NTS, 1, 0, &cluster, es, sizeof es));

    /* Node A wins and dispatches. A fenced node steps down for good. */
    start(&a, "controller-test", "node-a", KRABKA_ELECT_NO_RECAMPAIGN);
    krabka_event_t *started = next_term(&a, KRABKA_TERM_STARTED, cluster, 0);
    MUST(krabka_event_take_leadership(started, &term_a, es, sizeof es));
    krabka_event_destroy(started);
    MUST(dispatch(term_a, "command 1"));

    /* Node B stands by. */
    start(&b, "controller-test", "node-b", 0);
    krabka_event_destroy(next_term(&b, KRABKA_TERM_NEW_LEADER, cluster, 0));

    /* Fenced in the middle of a command: a blind successor takes the role
     * at the coordinator; A's next write is refused and its term stops. */
    krabka_token_t successor;
    MUST(krabka_testing_mint(a.client, "controller", KRABKA_NTS, &successor, es, sizeof es));
    krabka_err_t e = dispatch(term_a, "command 2");
    EXPECT(e == KRABKA_ERR_FENCED, "command 2 answered %s (%s), want FENCED", krabka_err2name(e), es);
    krabka_event_t *stopped = next_term(&a, KRABKA_TERM_STOPPED, cluster, 0);
    krabka_event_stop_reason(stopped, &why, NULL, 0);
    EXPECT(why == KRABKA_STOP_FENCED, "A's term stopped with reason %d, want FENCED", (int)why);
    krabka_event_destroy(stopped);
    EXPECT(strcmp(commands(cluster), "command 1") == 0, "committed: %s, want only command 1", commands(cluster));

    /* B takes over once the clock passes A's lease deadline (5 s steps). */
    started = next_term(&b, KRABKA_TERM_STARTED, cluster, 5000);
    MUST(krabka_event_take_leadership(started, &term_b, es, sizeof es));
    krabka_event_destroy(started);
    MUST(dispatch(term_b, "command 3"));
    EXPECT(strcmp(commands(cluster), "command 1,command 3") == 0, "committed: %s, want command 1,command 3",
           commands(cluster));

    krabka_leadership_destroy(term_a);
    krabka_leadership_destroy(term_b);
    krabka_elector_destroy(a.elector);
    krabka_elector_destroy(b.elector);
    krabka_queue_destroy(a.queue);
    krabka_queue_destroy(b.queue);
    krabka_client_destroy(a.client);
    krabka_client_destroy(b.client);
    krabka_testing_cluster_destroy(cluster);
    clock_gettime(CLOCK_MONOTONIC, &t1);
    printf("controller_test: %s: win, fenced mid-command, standby takes over in %.1f ms of wall time, no broker\n",
           failed ? "FAILED" : "ok", (t1.tv_sec - t0.tv_sec) * 1e3 + (t1.tv_nsec - t0.tv_nsec) / 1e6);
    return failed;
}
