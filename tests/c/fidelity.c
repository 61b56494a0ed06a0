/*
 * Fidelity of the in-process cluster through the C ABI (issue 37,
 * docs/TESTING.md): the same scenarios run on the in-process cluster
 * (bootstrap.servers=mem://NAME, manual clock) and on the brokers
 * $KRABKA_BOOTSTRAP (transaction.version 2) and $KRABKA_BOOTSTRAP_TV1; each
 * scenario reports the sequence of results and events the C API gave, and
 * the test fails when the in-process sequence differs from a broker's.
 * $KRABKA_C_TOPIC (one partition, on both clusters) takes the guarded
 * writes; `make capi-fidelity` creates it. A missing variable fails.
 *
 * Scenarios: election, renewal, resign, kill, blind successor then a
 * refused write, elector term events. What must differ is left out: timings
 * (the in-process clock moves only when advanced; the broker's is the wall
 * clock), token values (compared relative to each other), the place of the
 * NEW_LEADER event naming the elector's own lease (timing on both). How
 * the faults are made on the broker: kill = krabka_client_destroy (which
 * ends leaderships without resigning); blind successor = a client on
 * another coordination topic acquiring the role (tests/c/blind.c explains
 * why its holder cannot see it). Pause and at-risk under a cut link need a
 * proxy between a C client and the broker; the Go fidelity test
 * (core/kafka/fidelity_test.go) runs them, and tests/c/elect_faults.c runs
 * at-risk under a cut link on the broker through the C API.
 */
#define _POSIX_C_SOURCE 200809L
#define CHECK_NAME "fidelity"
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "krabka_coord_testing.h"
#include "check.h"

typedef struct world {
    const char *name;
    char bootstrap[256];
    krabka_testing_cluster_t *cluster; /* the in-process cluster, NULL on a broker */
    char coord_topic[128];
    char other_topic[128]; /* the blind successor's coordination topic */
    const char *data;
} world_t;

static char trace[2048];

static void note(const char *fmt, const char *a, const char *b) {
    size_t n = strlen(trace);
    snprintf(trace + n, sizeof trace - n, fmt, a, b);
    n = strlen(trace);
    snprintf(trace + n, sizeof trace - n, "; ");
}

static const char *yes(int v) { return v ? "yes" : "no"; }

static krabka_client_t *client_on(world_t *w, const char *topic) {
    krabka_conf_t *conf = krabka_conf_new();
    krabka_client_t *c = NULL;
    const char *kv[][2] = {{"bootstrap.servers", w->bootstrap}, {"krabka.topic", topic},
                           {"krabka.topic.partitions", "1"},    {"request.timeout.ms", "5000"},
                           {"krabka.lease.ms", "2000"},         {"krabka.renew.interval.ms", "500"},
                           {"krabka.challenge.stagger.ms", "500"}, {"krabka.poll.interval.ms", "100"}};
    for (size_t i = 0; i < sizeof kv / sizeof kv[0]; i++)
        OK(krabka_conf_set(conf, kv[i][0], kv[i][1], ES));
    OK(krabka_client_new(conf, &c, ES));
    krabka_conf_destroy(conf);
    return c;
}

static krabka_client_t *client(world_t *w) { return client_on(w, w->coord_topic); }

static int64_t now_ms(world_t *w) {
    int64_t now = 0;
    struct timespec ts;
    if (w->cluster) {
        OK(krabka_testing_clock_now(w->cluster, &now, ES));
        return now;
    }
    clock_gettime(CLOCK_REALTIME, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* Lets the world's time reach t: the in-process clock is advanced, the
 * broker's waited for. */
static void pass_to(world_t *w, int64_t t) {
    int64_t now = now_ms(w);
    if (t <= now)
        return;
    if (w->cluster) {
        OK(krabka_testing_clock_advance(w->cluster, t - now, ES));
    } else {
        struct timespec d = {(t - now) / 1000, ((t - now) % 1000) * 1000000};
        nanosleep(&d, NULL);
    }
}

static const char *code(krabka_err_t e) { return krabka_err2name(e); }

static krabka_err_t produce(world_t *w, krabka_leadership_t *l, const char *v) {
    krabka_message_t m = KRABKA_MESSAGE_INIT;
    m.topic = w->data;
    m.partition = 0;
    m.key = (const uint8_t *)v; /* a key: the broker's topic may be compacted */
    m.key_len = strlen(v);
    m.value = (const uint8_t *)v;
    m.value_len = strlen(v);
    return krabka_leadership_produce(l, &m, 1, 0, NULL, ES);
}

/* The standby's loop: try_acquire, and let time pass to when it says the
 * answer can change, up to 50 times. */
static krabka_leadership_t *take_over(world_t *w, krabka_client_t *b, const char *role) {
    krabka_leadership_t *l = NULL;
    int64_t retry_at = 0;
    for (int i = 0; i < 50 && l == NULL; i++) {
        OK(krabka_client_try_acquire(b, role, KRABKA_NTS, "b", KRABKA_NTS, 0, &l, &retry_at, ES));
        if (l == NULL)
            pass_to(w, retry_at);
    }
    return l;
}

/* A blind successor of role: the in-process cluster mints it; on a broker
 * a client on another coordination topic acquires it. */
static void blind_mint(world_t *w, krabka_client_t *a, const char *role) {
    if (w->cluster) {
        krabka_token_t t;
        OK(krabka_testing_mint(a, role, KRABKA_NTS, &t, ES));
        return;
    }
    krabka_client_t *s = client_on(w, w->other_topic);
    krabka_leadership_t *l = NULL;
    OK(krabka_client_acquire(s, role, KRABKA_NTS, "successor", KRABKA_NTS, 20000, &l, ES));
    krabka_leadership_destroy(l);
    krabka_client_destroy(s);
}

static void sc_election(world_t *w) {
    krabka_client_t *a = client(w), *b = client(w);
    krabka_leadership_t *la = NULL, *lb = NULL;
    krabka_status_t *st = NULL;
    krabka_token_t ta, ts;
    char holder[KRABKA_NAME_BUF];
    size_t len = 0;
    int has = 0, current = 0;
    int64_t retry_at = 0;
    note("a acquire: %s%s", code(krabka_client_acquire(a, "fid-election", KRABKA_NTS, "a", KRABKA_NTS, 20000, &la, ES)), "");
    note("b try_acquire: %s, won %s", code(krabka_client_try_acquire(b, "fid-election", KRABKA_NTS, "b", KRABKA_NTS, 0, &lb, &retry_at, ES)), yes(lb != NULL));
    OK(krabka_client_describe(b, "fid-election", KRABKA_NTS, 0, &st, ES));
    OK(krabka_status_holder(st, &has, holder, sizeof holder, &len));
    holder[has ? len : 0] = '\0';
    OK(krabka_status_token(st, &ts));
    OK(krabka_status_current(st, &current));
    OK(krabka_leadership_token(la, &ta));
    note("describe: holder %s, current %s", holder, yes(current));
    note("describe: token is a's %s%s", yes(krabka_token_compare(ts, ta) == 0), "");
    krabka_status_destroy(st);
    krabka_leadership_destroy(la);
    krabka_client_destroy(a);
    krabka_client_destroy(b);
}

static void sc_renewal(world_t *w) {
    krabka_client_t *a = client(w);
    krabka_leadership_t *la = NULL;
    krabka_lease_t l1, l2;
    krabka_token_t t1, t2;
    OK(krabka_client_acquire(a, "fid-renewal", KRABKA_NTS, "a", KRABKA_NTS, 20000, &la, ES));
    OK(krabka_leadership_lease(la, &l1));
    OK(krabka_leadership_token(la, &t1));
    pass_to(w, now_ms(w) + 500);
    note("a renew: %s%s", code(krabka_leadership_renew(la, 0, ES)), "");
    OK(krabka_leadership_lease(la, &l2));
    OK(krabka_leadership_token(la, &t2));
    note("deadline later %s, token same %s", yes(l2.deadline > l1.deadline), yes(krabka_token_compare(t1, t2) == 0));
    krabka_leadership_destroy(la);
    krabka_client_destroy(a);
}

static void sc_resign(world_t *w) {
    krabka_client_t *a = client(w), *b = client(w);
    krabka_leadership_t *la = NULL, *lb = NULL;
    int64_t retry_at = 0;
    OK(krabka_client_acquire(a, "fid-resign", KRABKA_NTS, "a", KRABKA_NTS, 20000, &la, ES));
    OK(krabka_client_try_acquire(b, "fid-resign", KRABKA_NTS, "b", KRABKA_NTS, 0, &lb, &retry_at, ES));
    note("a resign: %s%s", code(krabka_leadership_resign(la, 0, ES)), "");
    note("b try_acquire after the resign: %s, won %s", code(krabka_client_try_acquire(b, "fid-resign", KRABKA_NTS, "b", KRABKA_NTS, 0, &lb, &retry_at, ES)), yes(lb != NULL));
    note("a produce after resign: %s%s", code(produce(w, la, "a-after-resign")), "");
    krabka_leadership_destroy(la);
    krabka_leadership_destroy(lb);
    krabka_client_destroy(a);
    krabka_client_destroy(b);
}

static void sc_kill(world_t *w) {
    krabka_client_t *a = client(w), *b = client(w);
    krabka_leadership_t *la = NULL, *lb = NULL;
    krabka_lease_t lease;
    int64_t retry_at = 0;
    OK(krabka_client_acquire(a, "fid-kill", KRABKA_NTS, "a", KRABKA_NTS, 20000, &la, ES));
    OK(krabka_leadership_lease(la, &lease));
    OK(krabka_client_try_acquire(b, "fid-kill", KRABKA_NTS, "b", KRABKA_NTS, 0, &lb, &retry_at, ES));
    note("b before the kill: won %s%s", yes(lb != NULL), "");
    if (w->cluster)
        OK(krabka_testing_client_kill(a, ES));
    krabka_leadership_destroy(la);
    krabka_client_destroy(a); /* on the broker: the abrupt close (no resign) */
    lb = take_over(w, b, "fid-kill");
    note("b took over: %s, after a's deadline %s", yes(lb != NULL), yes(now_ms(w) >= lease.deadline));
    krabka_leadership_destroy(lb);
    krabka_client_destroy(b);
}

static void sc_blind(world_t *w) {
    krabka_client_t *a = client(w);
    krabka_leadership_t *la = NULL;
    krabka_leadership_state_t state;
    OK(krabka_client_acquire(a, "fid-blind", KRABKA_NTS, "a", KRABKA_NTS, 20000, &la, ES));
    note("a produce a-1: %s%s", code(produce(w, la, "a-1")), "");
    blind_mint(w, a, "fid-blind");
    note("a produce a-2: %s%s", code(produce(w, la, "a-2")), "");
    OK(krabka_leadership_state(la, &state));
    note("a state FENCED: %s%s", yes(state == KRABKA_LEADERSHIP_FENCED), "");
    krabka_leadership_destroy(la);
    krabka_client_destroy(a);
}

static void sc_elector(world_t *w) {
    krabka_client_t *a = client(w);
    krabka_queue_t *q = NULL;
    krabka_elector_t *e = NULL;
    krabka_leadership_t *term = NULL;
    char buf[64];
    int fd = -1;
    OK(krabka_queue_new(&q));
    OK(krabka_queue_fd(q, &fd));
    OK(krabka_elector_new(a, "fid-elector", KRABKA_NTS, "a", KRABKA_NTS, KRABKA_ELECT_NO_RECAMPAIGN, q, 0, &e, ES));
    for (int spins = 0; spins < 400; spins++) {
        krabka_event_t *ev = NULL;
        struct timespec d = {0, 50 * 1000000};
        if (krabka_queue_poll(q, &ev) != KRABKA_OK || ev == NULL) {
            nanosleep(&d, NULL);
            continue;
        }
        krabka_term_event_kind_t kind = 0;
        krabka_stop_reason_t why = KRABKA_STOP_NONE;
        char holder[KRABKA_NAME_BUF] = "";
        uint64_t t = 0;
        krabka_event_term_kind(ev, &kind, NULL, 0);
        krabka_event_term(ev, &t, NULL, 0);
        krabka_event_holder(ev, holder, sizeof holder, NULL, NULL, 0);
        snprintf(buf, sizeof buf, "%llu", (unsigned long long)t);
        if (kind == KRABKA_TERM_NEW_LEADER && strcmp(holder, "a") == 0) {
            /* NEW_LEADER of its own lease: its place is timing on both */
        } else if (kind == KRABKA_TERM_STARTED) {
            note("STARTED term %s%s", buf, "");
            OK(krabka_event_take_leadership(ev, &term, ES));
            blind_mint(w, a, "fid-elector");
            note("produce after the blind mint: %s%s", code(produce(w, term, "e-1")), "");
        } else if (kind == KRABKA_TERM_STOPPED) {
            krabka_event_stop_reason(ev, &why, NULL, 0);
            note("STOPPED term %s, FENCED %s", buf, yes(why == KRABKA_STOP_FENCED));
            krabka_event_destroy(ev);
            break;
        } else {
            char k[16];
            snprintf(k, sizeof k, "%d", (int)kind);
            note("term event kind %s holder %s", k, holder);
        }
        krabka_event_destroy(ev);
    }
    krabka_leadership_destroy(term);
    krabka_elector_destroy(e);
    krabka_queue_destroy(q);
    krabka_client_destroy(a);
}

static const struct {
    const char *name;
    void (*run)(world_t *);
} scenarios[] = {{"election", sc_election}, {"renewal", sc_renewal}, {"resign", sc_resign},
                 {"kill", sc_kill}, {"blind successor then a refused write", sc_blind},
                 {"elector term events", sc_elector}};

/* Runs scenario i on w and copies its trace into out. */
static void run(world_t *w, size_t i, char *out, size_t size) {
    trace[0] = '\0';
    scenarios[i].run(w);
    snprintf(out, size, "%s", trace);
}

int main(void) {
    const char *tv2 = getenv("KRABKA_BOOTSTRAP"), *tv1 = getenv("KRABKA_BOOTSTRAP_TV1"), *data = getenv("KRABKA_C_TOPIC");
    if (!tv2 || !tv1 || !data) {
        printf("fidelity: FAIL: KRABKA_BOOTSTRAP, KRABKA_BOOTSTRAP_TV1 and KRABKA_C_TOPIC must be set (make capi-fidelity)\n");
        return 1;
    }
    const char *brokers[][2] = {{"tv2", tv2}, {"tv1", tv1}};
    char mem[2048], got[2048];
    for (size_t i = 0; i < sizeof scenarios / sizeof scenarios[0]; i++) {
        world_t m = {"mem", "", NULL, "", "", data};
        char name[64];
        snprintf(name, sizeof name, "cfid-%ld-%zu", (long)getpid(), i);
        snprintf(m.bootstrap, sizeof m.bootstrap, "mem://%s", name);
        snprintf(m.coord_topic, sizeof m.coord_topic, "cfid-coord");
        snprintf(m.other_topic, sizeof m.other_topic, "cfid-other");
        OK(krabka_testing_cluster_new(name, KRABKA_NTS, 1, 0, &m.cluster, ES));
        run(&m, i, mem, sizeof mem);
        OK(krabka_testing_cluster_destroy(m.cluster));
        for (size_t k = 0; k < 2; k++) {
            world_t b = {brokers[k][0], "", NULL, "", "", data};
            snprintf(b.bootstrap, sizeof b.bootstrap, "%s", brokers[k][1]);
            snprintf(b.coord_topic, sizeof b.coord_topic, "krabka-cfid-%ld-%zu", (long)getpid(), i);
            snprintf(b.other_topic, sizeof b.other_topic, "krabka-cfid-other-%ld-%zu", (long)getpid(), i);
            run(&b, i, got, sizeof got);
            int same = strcmp(mem, got) == 0;
            CHECK(same, "%s on %s: in-process [%s], broker [%s]", scenarios[i].name, b.name, mem, got);
            printf("fidelity: %s %s: same %s: [%s]\n", b.name, scenarios[i].name, same ? "yes" : "NO", got);
        }
    }
    printf("fidelity: %d checks, %d failures\n", checks, failures);
    return failures == 0 ? 0 : 1;
}
