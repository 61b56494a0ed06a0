/* The test aids of include/krabka_coord_testing.h, with no broker:
 * (a) bad input: NULL, stale handles, invalid names, a duplicate name, the
 *     clock moved backwards, controls on a client of a real broker;
 * (b) a controller's failover on the in-process cluster: win, fenced
 *     mid-command by a blind successor (the fenced record is absent when
 *     read back), the standby takes over once the clock passes the
 *     holder's deadline. Its wall time is printed, never asserted. */
#define _POSIX_C_SOURCE 200809L
#define CHECK_NAME "testing"
#include <string.h>
#include <time.h>

#include "krabka_coord_testing.h"
#include "check.h"

/* A call that must fail with code, errstr containing want. */
#define FAILS(call, code, want)                                                   \
    do {                                                                          \
        errstr[0] = '\0';                                                         \
        krabka_err_t e_ = (call);                                                 \
        CHECK(e_ == (code), "%s: got %s (%s), want %s", #call, krabka_err2name(e_), \
              errstr, krabka_err2name(code));                                     \
        CHECK(strstr(errstr, (want)) != NULL, "%s: errstr \"%s\" lacks \"%s\"",    \
              #call, errstr, (want));                                             \
    } while (0)

static krabka_client_t *client_of(const char *bootstrap) {
    krabka_conf_t *conf = krabka_conf_new();
    krabka_client_t *c = NULL;
    OK(krabka_conf_set(conf, "bootstrap.servers", bootstrap, ES));
    OK(krabka_client_new(conf, &c, ES));
    krabka_conf_destroy(conf);
    return c;
}

static double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec / 1e9;
}

static void bad_input(void) {
    krabka_testing_cluster_t *c = NULL, *dup = NULL;
    char long_name[KRABKA_TESTING_NAME_MAX + 2];
    int64_t now = 0, n = 0;
    size_t len = 0;
    krabka_token_t tok;

    /* Names. */
    FAILS(krabka_testing_cluster_new(NULL, KRABKA_NTS, 1, 0, &c, ES), KRABKA_ERR_INVALID_ARG, "name is NULL");
    FAILS(krabka_testing_cluster_new("", KRABKA_NTS, 1, 0, &c, ES), KRABKA_ERR_INVALID_ARG, "empty");
    FAILS(krabka_testing_cluster_new("a b", KRABKA_NTS, 1, 0, &c, ES), KRABKA_ERR_INVALID_ARG, "character ' '");
    FAILS(krabka_testing_cluster_new("a/b", KRABKA_NTS, 1, 0, &c, ES), KRABKA_ERR_INVALID_ARG, "\"a/b\"");
    FAILS(krabka_testing_cluster_new("a\0b", 3, 1, 0, &c, ES), KRABKA_ERR_INVALID_ARG, "character");
    memset(long_name, 'x', sizeof long_name - 1);
    long_name[sizeof long_name - 1] = '\0';
    FAILS(krabka_testing_cluster_new(long_name, KRABKA_NTS, 1, 0, &c, ES), KRABKA_ERR_INVALID_ARG, "longer than 64");
    FAILS(krabka_testing_cluster_new("ok", KRABKA_NTS, 0, 0, &c, ES), KRABKA_ERR_INVALID_ARG, "partitions 0");
    FAILS(krabka_testing_cluster_new("ok", KRABKA_NTS, 1, 8, &c, ES), KRABKA_ERR_INVALID_ARG, "unknown flags");
    FAILS(krabka_testing_cluster_new("ok", KRABKA_NTS, 1, 0, NULL, ES), KRABKA_ERR_INVALID_ARG, "out is NULL");
    CHECK(c == NULL, "a failed cluster_new wrote *out");

    /* A live name twice; the name accessor. */
    OK(krabka_testing_cluster_new("c-bad", KRABKA_NTS, 2, 0, &c, ES));
    CHECK(strcmp(krabka_testing_cluster_name(c), "c-bad") == 0, "name %s", krabka_testing_cluster_name(c));
    FAILS(krabka_testing_cluster_new("c-bad", KRABKA_NTS, 1, 0, &dup, ES), KRABKA_ERR_INVALID_ARG, "already exists");

    /* The clock. */
    OK(krabka_testing_clock_now(c, &now, ES));
    CHECK(now == KRABKA_TESTING_CLOCK_START_MS, "a new clock reads %lld", (long long)now);
    FAILS(krabka_testing_clock_advance(c, -1, ES), KRABKA_ERR_INVALID_ARG, "never goes backwards");
    OK(krabka_testing_clock_advance(c, 250, ES));
    OK(krabka_testing_clock_now(c, &now, ES));
    CHECK(now == KRABKA_TESTING_CLOCK_START_MS + 250, "after advancing 250 ms the clock reads %lld", (long long)now);
    FAILS(krabka_testing_clock_now(c, NULL, ES), KRABKA_ERR_INVALID_ARG, "now_ms is NULL");
    FAILS(krabka_testing_clock_now(NULL, &now, ES), KRABKA_ERR_INVALID_HANDLE, "NULL");

    /* Reads. */
    FAILS(krabka_testing_topic_count(c, NULL, 0, &n, ES), KRABKA_ERR_INVALID_ARG, "topic is NULL");
    FAILS(krabka_testing_topic_count(c, "", 0, &n, ES), KRABKA_ERR_INVALID_ARG, "topic is empty");
    FAILS(krabka_testing_topic_count(c, "t", 2, &n, ES), KRABKA_ERR_INVALID_ARG, "partition 2");
    FAILS(krabka_testing_topic_count(c, "t", -1, &n, ES), KRABKA_ERR_INVALID_ARG, "out of range");
    OK(krabka_testing_topic_count(c, "t", 1, &n, ES));
    CHECK(n == 0, "an unwritten topic has %lld records", (long long)n);
    FAILS(krabka_testing_topic_record(c, "t", 0, 0, NULL, NULL, 0, &len, NULL, ES), KRABKA_ERR_INVALID_ARG, "has 0 committed records");
    FAILS(krabka_testing_topic_record(c, "t", 0, 0, NULL, NULL, 0, NULL, NULL, ES), KRABKA_ERR_INVALID_ARG, "value_len is NULL");

    /* A real-time cluster cannot be advanced. */
    OK(krabka_testing_cluster_new("c-real", KRABKA_NTS, 1, KRABKA_TESTING_REAL_TIME, &dup, ES));
    FAILS(krabka_testing_clock_advance(dup, 1, ES), KRABKA_ERR_INVALID_ARG, "real time");
    OK(krabka_testing_cluster_destroy(dup));

    /* Controls on a client of a real broker (never connected) and on
     * handles that are not clients. */
    krabka_client_t *real = client_of("127.0.0.1:1");
    FAILS(krabka_testing_client_set_cut(real, 1, ES), KRABKA_ERR_INVALID_ARG, "not connected to an in-process cluster");
    FAILS(krabka_testing_client_set_paused(real, 1, ES), KRABKA_ERR_INVALID_ARG, "127.0.0.1:1");
    FAILS(krabka_testing_client_kill(real, ES), KRABKA_ERR_INVALID_ARG, "krabka_testing_client_kill");
    FAILS(krabka_testing_mint(real, "r", KRABKA_NTS, &tok, ES), KRABKA_ERR_INVALID_ARG, "not connected to an in-process cluster");
    FAILS(krabka_testing_client_set_cut(NULL, 1, ES), KRABKA_ERR_INVALID_HANDLE, "NULL");
    FAILS(krabka_testing_client_kill((krabka_client_t *)c, ES), KRABKA_ERR_INVALID_HANDLE, "krabka_testing_cluster_t");
    FAILS(krabka_testing_clock_advance((krabka_testing_cluster_t *)real, 1, ES), KRABKA_ERR_INVALID_HANDLE, "krabka_client_t");
    OK(krabka_client_destroy(real));

    /* mem:// names in the configuration. */
    krabka_conf_t *conf = krabka_conf_new();
    FAILS(krabka_conf_set(conf, "bootstrap.servers", "mem://a b", ES), KRABKA_ERR_INVALID_CONFIG, "bootstrap.servers");
    FAILS(krabka_conf_set(conf, "bootstrap.servers", "mem://x,localhost:9092", ES), KRABKA_ERR_INVALID_CONFIG, "only entry");
    OK(krabka_conf_set(conf, "bootstrap.servers", "mem://nobody", ES));
    krabka_client_t *none = NULL;
    FAILS(krabka_client_new(conf, &none, ES), KRABKA_ERR_INVALID_CONFIG, "no in-process cluster named \"nobody\"");
    krabka_conf_destroy(conf);

    /* A client of the cluster: mint's role errors; a killed client cannot
     * be cut or paused. */
    krabka_client_t *m = client_of("mem://c-bad");
    FAILS(krabka_testing_mint(m, "", KRABKA_NTS, &tok, ES), KRABKA_ERR_EMPTY_ROLE, "");
    FAILS(krabka_testing_mint(m, "r", KRABKA_NTS, NULL, ES), KRABKA_ERR_INVALID_ARG, "out is NULL");
    OK(krabka_testing_mint(m, "r", KRABKA_NTS, &tok, ES));
    OK(krabka_testing_client_kill(m, ES));
    OK(krabka_testing_client_kill(m, ES));
    FAILS(krabka_testing_client_set_cut(m, 1, ES), KRABKA_ERR_INVALID_ARG, "killed");
    FAILS(krabka_testing_client_set_paused(m, 1, ES), KRABKA_ERR_INVALID_ARG, "killed");

    /* Stale handles; the name is free again after destroy. */
    OK(krabka_testing_cluster_destroy(c));
    CHECK(krabka_testing_cluster_destroy(c) == KRABKA_ERR_INVALID_HANDLE, "a second destroy");
    CHECK(krabka_testing_cluster_destroy(NULL) == KRABKA_ERR_INVALID_HANDLE, "destroy NULL");
    CHECK(krabka_testing_cluster_name(c) == NULL, "the name of a destroyed cluster");
    FAILS(krabka_testing_clock_advance(c, 1, ES), KRABKA_ERR_INVALID_HANDLE, "destroyed");
    FAILS(krabka_testing_topic_count(c, "t", 0, &n, ES), KRABKA_ERR_INVALID_HANDLE, "destroyed");
    FAILS(krabka_testing_mint(m, "r", KRABKA_NTS, &tok, ES), KRABKA_ERR_TRANSPORT, "destroyed");
    OK(krabka_client_destroy(m));
    FAILS(krabka_testing_client_kill(m, ES), KRABKA_ERR_INVALID_HANDLE, "destroyed");
    OK(krabka_testing_cluster_new("c-bad", KRABKA_NTS, 1, 0, &c, ES));
    OK(krabka_testing_cluster_destroy(c));
}

static krabka_err_t produce(krabka_leadership_t *l, const char *value) {
    krabka_message_t msg = KRABKA_MESSAGE_INIT;
    krabka_produce_result_t res;
    msg.topic = "commands";
    msg.partition = 0;
    msg.value = (const uint8_t *)value;
    msg.value_len = strlen(value);
    errstr[0] = '\0';
    return krabka_leadership_produce(l, &msg, 1, 0, &res, ES);
}

/* The committed values of commands/0, joined with ',' into out. */
static void committed(krabka_testing_cluster_t *c, char *out, size_t size) {
    int64_t n = 0;
    out[0] = '\0';
    OK(krabka_testing_topic_count(c, "commands", 0, &n, ES));
    for (int64_t i = 0; i < n; i++) {
        uint8_t v[64];
        size_t len = 0;
        OK(krabka_testing_topic_record(c, "commands", 0, i, NULL, v, sizeof v - 1, &len, NULL, ES));
        v[len] = '\0';
        if (i > 0)
            strncat(out, ",", size - strlen(out) - 1);
        strncat(out, (const char *)v, size - strlen(out) - 1);
    }
}

static void failover(void) {
    double start = now_s();
    krabka_testing_cluster_t *c = NULL;
    krabka_leadership_t *a_lead = NULL, *b_lead = NULL;
    krabka_token_t a_tok, blind, b_tok;
    krabka_lease_t a_lease;
    int64_t retry_at = 0, now = 0, advanced = 0;
    char got[256];

    OK(krabka_testing_cluster_new("c-failover", KRABKA_NTS, 1, 0, &c, ES));
    krabka_client_t *a = client_of("mem://c-failover");
    krabka_client_t *b = client_of("mem://c-failover");

    /* Win, and a first command. */
    OK(krabka_client_acquire(a, "controller", KRABKA_NTS, "node-a", KRABKA_NTS, 0, &a_lead, ES));
    OK(krabka_leadership_token(a_lead, &a_tok));
    OK(krabka_leadership_lease(a_lead, &a_lease));
    OK(produce(a_lead, "cmd-1"));

    /* The standby registers and does not win while the lease is live. */
    OK(krabka_client_try_acquire(b, "controller", KRABKA_NTS, "node-b", KRABKA_NTS, 0, &b_lead, &retry_at, ES));
    CHECK(b_lead == NULL, "the standby won a live lease");

    /* Fenced mid-command: a blind successor mints the role from outside;
     * the holder's produce is refused and leaves nothing. */
    OK(krabka_testing_mint(a, "controller", KRABKA_NTS, &blind, ES));
    CHECK(krabka_token_compare(blind, a_tok) > 0, "the blind token does not supersede the holder's");
    krabka_err_t e = produce(a_lead, "cmd-2");
    CHECK(e == KRABKA_ERR_FENCED, "the fenced holder's produce answered %s (%s)", krabka_err2name(e), errstr);
    committed(c, got, sizeof got);
    CHECK(strcmp(got, "cmd-1") == 0, "commands holds \"%s\", want only cmd-1", got);

    /* The standby takes over once the clock passes the holder's deadline:
     * advance to when try_acquire says the answer can change. */
    for (int i = 0; i < 100 && b_lead == NULL; i++) {
        OK(krabka_testing_clock_now(c, &now, ES));
        if (retry_at > now) {
            OK(krabka_testing_clock_advance(c, retry_at - now, ES));
            advanced += retry_at - now;
        }
        OK(krabka_client_try_acquire(b, "controller", KRABKA_NTS, "node-b", KRABKA_NTS, 0, &b_lead, &retry_at, ES));
    }
    CHECK(b_lead != NULL, "the standby never took over");
    if (b_lead == NULL)
        exit(1);
    OK(krabka_testing_clock_now(c, &now, ES));
    CHECK(now >= a_lease.deadline, "the standby won at %lld, before the holder's deadline %lld", (long long)now, (long long)a_lease.deadline);
    OK(krabka_leadership_token(b_lead, &b_tok));
    CHECK(krabka_token_compare(b_tok, blind) > 0, "the standby's token does not supersede the blind one");
    OK(produce(b_lead, "cmd-3"));
    committed(c, got, sizeof got);
    CHECK(strcmp(got, "cmd-1,cmd-3") == 0, "commands holds \"%s\", want cmd-1,cmd-3", got);

    OK(krabka_leadership_destroy(a_lead));
    OK(krabka_leadership_destroy(b_lead));
    OK(krabka_client_destroy(a));
    OK(krabka_client_destroy(b));
    OK(krabka_testing_cluster_destroy(c));
    printf("testing: failover (win, fenced mid-command, standby takes over): %lld ms of cluster time, %.1f ms of wall time, no broker\n",
           (long long)advanced, (now_s() - start) * 1000);
}

int main(void) {
    bad_input();
    failover();
    printf("testing: %d checks, %d failures\n", checks, failures);
    return failures == 0 ? 0 : 1;
}
