/*
 * Live test of the C API on a real broker ($KRABKA_BOOTSTRAP, a single-node
 * cluster; the topic $KRABKA_C_TOPIC must exist, `make capi-live` creates it).
 *
 *   1. node-a acquires; renew and a guarded write succeed; describe names it.
 *   1b. 64 threads call krabka_leadership_produce on that leadership at
 *      once (group commit): every call succeeds, no two messages share a
 *      (partition, offset), and each thread's messages land in its order.
 *   2. node-b's try_acquire does not win while node-a's lease is live.
 *   3. node-a restarts (a second client, same member) and takes the role at
 *      once with a newer token; the old leadership's produce and renew answer
 *      FENCED and its state is FENCED. Both clients follow the same
 *      coordination topic, so what this shows is the old leadership ending
 *      FENCED, normally through its client's live view (it reads the new
 *      lease and answers FENCED without sending the write: the view's early
 *      FENCED); a write that goes out before the view has caught up is
 *      refused by the broker instead, and either answer passes. It does not
 *      show the broker's refusal: blind.c does, with a successor the view
 *      cannot see.
 *   4. the holder is destroyed without resigning: node-b takes over after the
 *      lease deadline, with a newer token.
 *   5. node-b resigns (its produce then answers NOT_LEADER): node-a takes over
 *      at once, with a newer token; describe agrees.
 *   6. destroying a client while another thread waits in its acquire makes
 *      that acquire answer CLOSED.
 *   7. destroying a client ends its leadership: CLOSED.
 */
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "krabka_coord.h"

#define CHECK_NAME "live"
#include "check.h"

static const char *bootstrap, *topic;
static char role[128];

static int64_t now_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static krabka_client_t *new_client(const char *id) {
    krabka_conf_t *conf = krabka_conf_new();
    krabka_client_t *c = NULL;
    OK(krabka_conf_set(conf, "bootstrap.servers", bootstrap, ES));
    OK(krabka_conf_set(conf, "client.id", id, ES));
    OK(krabka_conf_set(conf, "krabka.lease.ms", "6000", ES));
    OK(krabka_conf_set(conf, "krabka.renew.interval.ms", "2000", ES));
    OK(krabka_conf_set(conf, "krabka.challenge.stagger.ms", "500", ES));
    OK(krabka_conf_set(conf, "krabka.poll.interval.ms", "200", ES));
    OK(krabka_conf_set(conf, "request.timeout.ms", "15000", ES));
    OK(krabka_client_new(conf, &c, ES));
    OK(krabka_conf_destroy(conf));
    return c;
}

static krabka_token_t token_of(const krabka_leadership_t *l) {
    krabka_token_t t = {-2, -2};
    OK(krabka_leadership_token(l, &t));
    return t;
}

static krabka_leadership_state_t state_of(const krabka_leadership_t *l) {
    krabka_leadership_state_t s = (krabka_leadership_state_t)-1;
    OK(krabka_leadership_state(l, &s));
    return s;
}

/* A guarded write of one command carrying the token. */
static krabka_err_t dispatch(krabka_leadership_t *l, int n, krabka_produce_result_t *res) {
    krabka_token_t t;
    char tok[KRABKA_TOKEN_TEXT_MAX], value[128];
    if (krabka_leadership_token(l, &t) != KRABKA_OK)
        return KRABKA_ERR_INVALID_HANDLE;
    krabka_token_format(t, tok, sizeof tok);
    snprintf(value, sizeof value, "command %d token %s", n, tok);
    krabka_message_t m = {sizeof(krabka_message_t), topic, KRABKA_PARTITION_ANY, (const uint8_t *)role, strlen(role),
                          (const uint8_t *)value, strlen(value), NULL, 0};
    errstr[0] = '\0';
    return krabka_leadership_produce(l, &m, 1, 10000, res, ES);
}

/* 1b: concurrent guarded writes from many threads on one leadership. */
enum { WRITERS = 64, EACH = 10 };
struct writer {
    krabka_leadership_t *l;
    int id;
    krabka_err_t err;
    char errstr[512];
    krabka_produce_result_t res[EACH];
};

static void *write_commands(void *arg) {
    struct writer *w = arg;
    char key[160], value[64];
    snprintf(key, sizeof key, "%s-writer-%d", role, w->id);
    for (int i = 0; i < EACH; i++) {
        snprintf(value, sizeof value, "writer %d command %d", w->id, i);
        krabka_message_t m = {sizeof(krabka_message_t), topic, KRABKA_PARTITION_ANY, (const uint8_t *)key, strlen(key),
                              (const uint8_t *)value, strlen(value), NULL, 0};
        w->err = krabka_leadership_produce(w->l, &m, 1, 30000, &w->res[i], w->errstr, sizeof w->errstr);
        if (w->err != KRABKA_OK)
            break;
    }
    return NULL;
}

static int cmp_result(const void *a, const void *b) {
    const krabka_produce_result_t *x = a, *y = b;
    if (x->partition != y->partition)
        return x->partition < y->partition ? -1 : 1;
    return x->offset < y->offset ? -1 : x->offset > y->offset;
}

static void concurrent_writes(krabka_leadership_t *l) {
    static struct writer ws[WRITERS];
    static krabka_produce_result_t all[WRITERS * EACH];
    pthread_t th[WRITERS];
    int64_t t0 = now_ms();
    for (int i = 0; i < WRITERS; i++) {
        ws[i] = (struct writer){.l = l, .id = i};
        CHECK(pthread_create(&th[i], NULL, write_commands, &ws[i]) == 0, "pthread_create");
    }
    for (int i = 0; i < WRITERS; i++)
        pthread_join(th[i], NULL);
    int64_t took = now_ms() - t0;
    for (int i = 0; i < WRITERS; i++) {
        CHECK(ws[i].err == KRABKA_OK, "writer %d: %s (%s)", i, krabka_err2name(ws[i].err), ws[i].errstr);
        for (int j = 1; j < EACH; j++)
            CHECK(ws[i].res[j].partition == ws[i].res[0].partition && ws[i].res[j].offset > ws[i].res[j - 1].offset,
                  "writer %d: command %d at %d/%" PRId64 " after %d/%" PRId64, i, j, ws[i].res[j].partition,
                  ws[i].res[j].offset, ws[i].res[j - 1].partition, ws[i].res[j - 1].offset);
        memcpy(&all[i * EACH], ws[i].res, sizeof ws[i].res);
    }
    qsort(all, WRITERS * EACH, sizeof all[0], cmp_result);
    for (int i = 1; i < WRITERS * EACH; i++)
        CHECK(cmp_result(&all[i - 1], &all[i]) != 0, "two commands at %d/%" PRId64, all[i].partition, all[i].offset);
    printf("live: 1b. %d threads wrote %d commands on one leadership in %" PRId64 " ms\n", WRITERS, WRITERS * EACH,
           took);
}

static void describe(krabka_client_t *c, const char *holder, krabka_token_t token) {
    krabka_status_t *st = NULL;
    int has = 0, cur = 0, has_lease = 0;
    char name[KRABKA_NAME_BUF];
    size_t len = 0, count = 0;
    krabka_token_t t;
    krabka_lease_t lease;
    int32_t part = -1, want_part = -2;
    int64_t skipped = -1;
    char parts[16];
    size_t ps = sizeof parts;
    OK(krabka_client_describe(c, role, KRABKA_NTS, 15000, &st, ES));
    OK(krabka_status_holder(st, &has, name, sizeof name, &len));
    CHECK(has && len == strlen(holder) && strcmp(name, holder) == 0, "holder %s, expected %s", has ? name : "(none)", holder);
    OK(krabka_status_token(st, &t));
    CHECK(krabka_token_compare(t, token) == 0, "describe token %" PRId64 ":%d, expected %" PRId64 ":%d",
          t.producer_id, t.producer_epoch, token.producer_id, token.producer_epoch);
    OK(krabka_status_current(st, &cur));
    CHECK(cur == 1, "current %d", cur);
    OK(krabka_status_lease(st, &has_lease, &lease));
    CHECK(has_lease && krabka_token_compare(lease.token, token) == 0 && lease.deadline > lease.granted_at,
          "lease of the holder");
    OK(krabka_status_roster_count(st, &count));
    CHECK(count >= 1, "roster count %zu", count);
    /* Succession order: rank 0 is the holder or the first standby, then
     * ranks rise by at most one per entry. */
    int32_t prev = 0;
    for (size_t i = 0; i < count; i++) {
        krabka_roster_entry_t e;
        OK(krabka_status_roster_entry(st, i, &e));
        CHECK(e.member_len > 0 && e.offset >= 0 && e.rank >= prev && e.rank <= prev + 1 && e.rank <= (int32_t)i,
              "roster entry %zu: rank %d after %d", i, e.rank, prev);
        prev = e.rank;
    }
    krabka_roster_entry_t e;
    CHECK(krabka_status_roster_entry(st, count, &e) == KRABKA_ERR_INVALID_ARG, "entry past the end");
    OK(krabka_status_partition(st, &part));
    krabka_conf_t *conf = krabka_conf_new();
    OK(krabka_conf_get(conf, "krabka.topic.partitions", parts, &ps));
    krabka_conf_destroy(conf);
    OK(krabka_role_partition(role, KRABKA_NTS, atoi(parts), &want_part, ES));
    CHECK(part == want_part, "partition %d, expected %d", part, want_part);
    OK(krabka_status_skipped(st, &skipped));
    CHECK(skipped == 0, "skipped %" PRId64, skipped);
    OK(krabka_status_destroy(st));
    CHECK(krabka_status_destroy(st) == KRABKA_ERR_INVALID_HANDLE, "double destroy");
}

struct waiter {
    krabka_client_t *client;
    krabka_err_t err;
    krabka_leadership_t *l;
    char errstr[512];
};

static void *wait_for_role(void *arg) {
    struct waiter *w = arg;
    w->err = krabka_client_acquire(w->client, role, KRABKA_NTS, "node-c", KRABKA_NTS, KRABKA_TIMEOUT_DEFAULT, &w->l,
                                   w->errstr, sizeof w->errstr);
    return NULL;
}

static void sleep_ms(long ms) {
    struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
    nanosleep(&ts, NULL);
}

int main(void) {
    bootstrap = getenv("KRABKA_BOOTSTRAP");
    topic = getenv("KRABKA_C_TOPIC");
    if (!bootstrap || !*bootstrap || !topic || !*topic) {
        fprintf(stderr, "live: set KRABKA_BOOTSTRAP (a running broker, see tests/kafka) and "
                        "KRABKA_C_TOPIC (an existing topic); `make capi-live` does both\n");
        return 2;
    }
    snprintf(role, sizeof role, "capi-live-%ld-%" PRId64, (long)(now_ms() % 100000), now_ms());

    krabka_client_t *ca = new_client("capi-live-a"), *cb = new_client("capi-live-b");
    krabka_leadership_t *l1 = NULL, *l2 = NULL, *l3 = NULL, *l4 = NULL, *none = NULL;
    krabka_produce_result_t res = {-1, -1};
    int64_t retry_at = 0, t0;

    /* 1. node-a acquires, renews, writes; describe names it. */
    OK(krabka_client_acquire(ca, role, KRABKA_NTS, "node-a", KRABKA_NTS, 60000, &l1, ES));
    krabka_token_t t1 = token_of(l1);
    CHECK(krabka_token_validate(t1, ES) == KRABKA_OK, "minted token is valid");
    CHECK(state_of(l1) == KRABKA_LEADERSHIP_ACTIVE, "state");
    OK(krabka_leadership_renew(l1, KRABKA_TIMEOUT_DEFAULT, ES));
    krabka_lease_t lease;
    OK(krabka_leadership_lease(l1, &lease));
    CHECK(lease.member_len == 6 && strcmp(lease.member, "node-a") == 0 &&
          krabka_token_compare(lease.token, t1) == 0, "lease names node-a under t1");
    int due = -1;
    OK(krabka_leadership_renew_due(l1, &due));
    CHECK(due == 0, "renew not due right after a renewal");
    OK(dispatch(l1, 1, &res));
    CHECK(res.offset >= 0 && res.partition >= 0, "produce result %d/%" PRId64, res.partition, res.offset);
    describe(cb, "node-a", t1);
    /* Issue 16.3: a message to topic "" is INVALID_ARG and the leadership
     * stays active. Issue 16.4: a timeout beyond what the clock holds means
     * no limit, not a deadline in the past. */
    {
        krabka_message_t bad = {sizeof(krabka_message_t), "", KRABKA_PARTITION_ANY, NULL, 0, (const uint8_t *)"x", 1, NULL, 0};
        krabka_err_t e = krabka_leadership_produce(l1, &bad, 1, 10000, NULL, ES);
        CHECK(e == KRABKA_ERR_INVALID_ARG && strstr(errstr, "topic") != NULL,
              "produce to topic \"\" gave %s (%s)", krabka_err2name(e), errstr);
        CHECK(state_of(l1) == KRABKA_LEADERSHIP_ACTIVE, "state after a produce to topic \"\"");
        OK(krabka_leadership_renew(l1, INT64_MAX, ES));
        OK(krabka_leadership_renew(l1, INT64_MAX / 1000000 + 1, ES));
        krabka_status_t *st = NULL;
        OK(krabka_client_describe(cb, role, KRABKA_NTS, INT64_MAX, &st, ES));
        krabka_status_destroy(st);
    }
    printf("live: 1. node-a holds %s with token %" PRId64 ":%d\n", role, t1.producer_id, t1.producer_epoch);

    concurrent_writes(l1);

    /* 2. node-b cannot take a live lease. */
    OK(krabka_client_try_acquire(cb, role, KRABKA_NTS, "node-b", KRABKA_NTS, 15000, &none, &retry_at, ES));
    CHECK(none == NULL, "node-b won a live lease");
    CHECK(retry_at > now_ms(), "retry_at %" PRId64 " is in the future", retry_at);

    /* 3. node-a restarts: the new leadership fences the old one. The FENCED
     * checks below accept the live view's early FENCED ("the log shows a
     * lease of node-a with token t2, which supersedes ...", the usual
     * answer: ca follows the partition ca2 wrote t2's lease to) and the
     * broker's refusal alike (PRODUCER_FENCED or INVALID_PRODUCER_EPOCH,
     * when the write beats the view); they prove the old leadership stops, not that the broker
     * refused a write (blind.c proves that). */
    krabka_client_t *ca2 = new_client("capi-live-a2");
    OK(krabka_client_acquire(ca2, role, KRABKA_NTS, "node-a", KRABKA_NTS, 60000, &l2, ES));
    krabka_token_t t2 = token_of(l2);
    CHECK(krabka_token_supersedes(t2, t1), "t2 supersedes t1");
    krabka_err_t e = dispatch(l1, 2, &res);
    CHECK(e == KRABKA_ERR_FENCED, "old leadership's produce gave %s (%s)", krabka_err2name(e), errstr);
    CHECK(krabka_err_is_fatal(e), "FENCED is fatal");
    e = krabka_leadership_renew(l1, KRABKA_TIMEOUT_DEFAULT, ES);
    CHECK(e == KRABKA_ERR_FENCED, "old leadership's renew gave %s (%s)", krabka_err2name(e), errstr);
    CHECK(state_of(l1) == KRABKA_LEADERSHIP_FENCED, "old leadership state %d", state_of(l1));
    OK(dispatch(l2, 3, &res));
    printf("live: 3. restarted node-a holds token %" PRId64 ":%d; the old leadership is FENCED\n",
           t2.producer_id, t2.producer_epoch);

    /* 4. destroy without resigning: node-b takes over after the deadline. */
    OK(krabka_leadership_lease(l2, &lease));
    OK(krabka_leadership_destroy(l2));
    CHECK(krabka_leadership_destroy(l2) == KRABKA_ERR_INVALID_HANDLE, "double destroy");
    OK(krabka_client_acquire(cb, role, KRABKA_NTS, "node-b", KRABKA_NTS, 60000, &l3, ES));
    krabka_token_t t3 = token_of(l3);
    CHECK(now_ms() >= lease.deadline, "node-b took over before the deadline");
    CHECK(krabka_token_supersedes(t3, t2), "t3 supersedes t2");
    OK(dispatch(l3, 4, &res));
    describe(ca, "node-b", t3);
    printf("live: 4. node-b took over after the deadline with token %" PRId64 ":%d\n", t3.producer_id,
           t3.producer_epoch);

    /* 5. resign: node-a takes over at once. */
    OK(krabka_leadership_resign(l3, KRABKA_TIMEOUT_DEFAULT, ES));
    CHECK(state_of(l3) == KRABKA_LEADERSHIP_RESIGNED, "resigned state");
    e = dispatch(l3, 5, &res);
    CHECK(e == KRABKA_ERR_NOT_LEADER, "produce after resign gave %s", krabka_err2name(e));
    t0 = now_ms();
    OK(krabka_client_acquire(ca2, role, KRABKA_NTS, "node-a", KRABKA_NTS, 60000, &l4, ES));
    krabka_token_t t4 = token_of(l4);
    CHECK(now_ms() - t0 < 6000, "takeover after resign took %" PRId64 " ms", now_ms() - t0);
    CHECK(krabka_token_supersedes(t4, t3), "t4 supersedes t3");
    describe(cb, "node-a", t4);
    printf("live: 5. after node-b resigned node-a took over in %" PRId64 " ms with token %" PRId64 ":%d\n",
           now_ms() - t0, t4.producer_id, t4.producer_epoch);

    /* 6. a blocked acquire answers CLOSED when its client is destroyed. */
    struct waiter w = {new_client("capi-live-c"), KRABKA_OK, NULL, ""};
    pthread_t th;
    CHECK(pthread_create(&th, NULL, wait_for_role, &w) == 0, "pthread_create");
    sleep_ms(800); /* node-a's lease is live for seconds: node-c is waiting */
    t0 = now_ms();
    OK(krabka_client_destroy(w.client));
    pthread_join(th, NULL);
    CHECK(w.err == KRABKA_ERR_CLOSED && w.l == NULL, "blocked acquire gave %s (%s)", krabka_err2name(w.err),
          w.errstr);
    printf("live: 6. a blocked acquire answered %s %" PRId64 " ms after its client was destroyed\n",
           krabka_err2name(w.err), now_ms() - t0);

    /* 7. destroying the client ends its leadership. */
    OK(krabka_client_destroy(ca2));
    CHECK(state_of(l4) == KRABKA_LEADERSHIP_CLOSED, "state after client destroy %d", state_of(l4));
    e = dispatch(l4, 6, &res);
    CHECK(e == KRABKA_ERR_CLOSED || e == KRABKA_ERR_NOT_LEADER, "produce after client destroy gave %s",
          krabka_err2name(e));

    /* 8. roster hygiene: node-b resigned (it left the roster), node-c's
     * client was destroyed while it waited (krabka.leave.on.close), node-a's
     * client was destroyed while it held the role (it stays); then an
     * operator makes node-a leave. */
    {
        krabka_status_t *st = NULL;
        size_t count = 99;
        int64_t removed = -1;
        krabka_roster_entry_t first;
        OK(krabka_client_describe(cb, role, KRABKA_NTS, 15000, &st, ES));
        OK(krabka_status_roster_count(st, &count));
        OK(krabka_status_removed(st, &removed));
        CHECK(count == 1, "roster after the departures has %zu members", count);
        if (count == 1) {
            OK(krabka_status_roster_entry(st, 0, &first));
            CHECK(strcmp(first.member, "node-a") == 0, "the holder stays registered, not %s", first.member);
        }
        CHECK(removed == 2, "removed %" PRId64 " (node-b resigned, node-c left on close)", removed);
        krabka_status_destroy(st);
        OK(krabka_client_leave(cb, role, KRABKA_NTS, "node-a", KRABKA_NTS, KRABKA_TIMEOUT_DEFAULT, ES));
        OK(krabka_client_describe(cb, role, KRABKA_NTS, 15000, &st, ES));
        OK(krabka_status_roster_count(st, &count));
        OK(krabka_status_removed(st, &removed));
        CHECK(count == 0 && removed == 3, "after leave: %zu members, %" PRId64 " removed", count, removed);
        krabka_status_destroy(st);
        printf("live: 8. departed members are out of the roster; leave removed node-a\n");
    }

    OK(krabka_leadership_destroy(l1));
    OK(krabka_leadership_destroy(l3));
    OK(krabka_leadership_destroy(l4));
    OK(krabka_client_destroy(ca));
    OK(krabka_client_destroy(cb));
    printf("live: %d checks, %d passed, %d failed\n", checks, checks - failures, failures);
    return failures ? 1 : 0;
}
