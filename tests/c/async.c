/*
 * The asynchronous forms of the C API (ABI 2) on real brokers: the
 * transaction.version 2 cluster at $KRABKA_BOOTSTRAP and the
 * transaction.version 1 cluster at $KRABKA_BOOTSTRAP_TV1; the topic
 * $KRABKA_C_TOPIC must exist on both and $KRABKA_KREAD names a built
 * tests/kafka/cmd/kread (`make capi-async` does all of that).
 *
 * On each cluster, every call goes through one queue and each must post
 * exactly one event, of its type, with its tag, its error and its data:
 *   1. watch_async opens a watch (WATCH_OPEN, taken once), describe_async
 *      of a role nobody holds (DESCRIBE: the status is the caller's after
 *      the take and outlives the event).
 *   2. acquire_async wins (ACQUIRE); try_acquire_async of two standbys is
 *      not won (TRY_ACQUIRE: no leadership, retry_at at the lease's
 *      deadline); try_acquire_async of a free role wins.
 *   3. produce_async writes messages with headers (PRODUCE results),
 *      messages of a larger struct size (a later header's) too; a smaller
 *      size, mismatched sizes, an unaligned size and a reserved header name
 *      are refused at once and post nothing. kread reads the records back
 *      with their headers and krabka.token.
 *   4. renew_async (RENEW, a later deadline), set_metadata_async
 *      (SET_METADATA; over 4096 bytes refused at once).
 *   5. watch_next_async delivers the holder change and the metadata
 *      renewal (WATCH events, taken once).
 *   6. resign_async to the rank-1 standby: it wins at once (its pending
 *      acquire_async posts), the rank-0 one keeps waiting (a 60 s stagger)
 *      until its client is destroyed (ACQUIRE with CLOSED); ended_async
 *      posts RESIGNED; describe_async shows the new holder.
 *   7. leave_async removes a registration (LEAVE; describe shows it gone).
 *   8. An event destroyed with its leadership untaken releases it (the
 *      client's stats count one leader less).
 *   9. A queue destroyed while an acquire_async, a describe_async and a
 *      produce_async are pending: nothing is posted, the acquire's win is
 *      released without resigning (the client holds no leadership, its
 *      stats say it ended CLOSED), and another member's acquire succeeds
 *      once that lease has run out.
 * At the end no event is left and no tag was posted twice.
 */
#include <inttypes.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "krabka_coord.h"

#define CHECK_NAME "async"
#include "check.h"

static const char *topic, *kread;

static int64_t now_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static void sleep_ms(long ms) {
    struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
    nanosleep(&ts, NULL);
}

/* ---- events by tag ---- */

#define MAXTAG 4096
static int posted[MAXTAG];             /* events seen per tag */
static int expected[MAXTAG];           /* 1: a call was made with this tag */
static krabka_event_t *stash[64];      /* events taken off the queue before they were asked for */
static int nstash;

static uint64_t ev_tag(const krabka_event_t *ev) {
    uint64_t tag = 0;
    OK(krabka_event_tag(ev, &tag));
    return tag;
}

static int ev_type(const krabka_event_t *ev) {
    krabka_event_type_t t = KRABKA_EVENT_NONE;
    OK(krabka_event_type(ev, &t));
    return (int)t;
}

/* The event's error; its reason into es. */
static krabka_err_t ev_err(const krabka_event_t *ev, char *es, size_t es_size) {
    krabka_err_t code = KRABKA_ERR_INTERNAL;
    OK(krabka_event_error(ev, &code, es, es_size));
    return code;
}

/* Marks tag as used by a call: exactly one event must come for it. */
static uint64_t use(uint64_t tag) {
    CHECK(tag < MAXTAG && !expected[tag], "tag %" PRIu64 " used twice by the test", tag);
    expected[tag] = 1;
    return tag;
}

/* Polls one event off q, counting its tag. */
static krabka_event_t *poll_one(krabka_queue_t *q) {
    krabka_event_t *ev = NULL;
    OK(krabka_queue_poll(q, &ev));
    if (ev) {
        uint64_t tag = ev_tag(ev);
        CHECK(tag < MAXTAG && expected[tag], "an event with tag %" PRIu64 " nobody asked for (type %d)", tag,
              ev_type(ev));
        if (tag < MAXTAG) {
            posted[tag]++;
            CHECK(posted[tag] == 1, "a second event for tag %" PRIu64 " (type %d)", tag, ev_type(ev));
        }
    }
    return ev;
}

/* The event with tag (waiting in poll(2) up to 90 s), of type want. */
static krabka_event_t *wait_tag(krabka_queue_t *q, uint64_t tag, krabka_event_type_t want) {
    for (int i = 0; i < nstash; i++) {
        if (ev_tag(stash[i]) == tag) {
            krabka_event_t *ev = stash[i];
            stash[i] = stash[--nstash];
            CHECK(ev_type(ev) == (int)want, "tag %" PRIu64 ": type %d, want %d", tag, ev_type(ev), (int)want);
            return ev;
        }
    }
    int fd = -1;
    OK(krabka_queue_fd(q, &fd));
    int64_t until = now_ms() + 90000;
    while (now_ms() < until) {
        krabka_event_t *ev = poll_one(q);
        if (!ev) {
            struct pollfd p = {fd, POLLIN, 0};
            poll(&p, 1, 200);
            continue;
        }
        if (ev_tag(ev) == tag) {
            CHECK(ev_type(ev) == (int)want, "tag %" PRIu64 ": type %d, want %d", tag, ev_type(ev), (int)want);
            return ev;
        }
        if (nstash < (int)(sizeof stash / sizeof stash[0]))
            stash[nstash++] = ev;
        else
            OK(krabka_event_destroy(ev));
    }
    CHECK(0, "no event with tag %" PRIu64 " within 90 s", tag);
    printf(CHECK_NAME ": stopping\n");
    exit(1);
}

/* Nothing waits in q (after a grace of ms for a stray post). */
static void expect_quiet(krabka_queue_t *q, int ms, const char *what) {
    int fd = -1;
    OK(krabka_queue_fd(q, &fd));
    struct pollfd p = {fd, POLLIN, 0};
    int n = poll(&p, 1, ms);
    krabka_event_t *ev = poll_one(q);
    CHECK(n == 0 && ev == NULL, "%s: something was posted (type %d tag %" PRIu64 ")", what, ev ? ev_type(ev) : -1,
          ev ? ev_tag(ev) : 0);
    if (ev)
        OK(krabka_event_destroy(ev));
}

/* ---- helpers ---- */

static krabka_client_t *new_client(const char *bootstrap, const char *id) {
    krabka_conf_t *conf = krabka_conf_new();
    krabka_client_t *c = NULL;
    OK(krabka_conf_set(conf, "bootstrap.servers", bootstrap, ES));
    OK(krabka_conf_set(conf, "client.id", id, ES));
    OK(krabka_conf_set(conf, "krabka.lease.ms", "6000", ES));
    OK(krabka_conf_set(conf, "krabka.renew.interval.ms", "2000", ES));
    /* A standby waits one stagger per rank: a named successor's hand-over
     * must not be mistaken for ordinary succession. */
    OK(krabka_conf_set(conf, "krabka.challenge.stagger.ms", "60000", ES));
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

static krabka_lease_t lease_of(const krabka_leadership_t *l) {
    krabka_lease_t lease;
    memset(&lease, 0, sizeof lease);
    OK(krabka_leadership_lease(l, &lease));
    return lease;
}

/* An integer field of a client's statistics (its first occurrence: the
 * client-wide one). -1 when missing. */
static long long stat_of(krabka_client_t *c, const char *key) {
    char *json = NULL, pat[64];
    long long v = -1;
    OK(krabka_client_stats_json(c, &json, NULL));
    snprintf(pat, sizeof pat, "\"%s\":", key);
    const char *p = strstr(json, pat);
    if (p)
        v = strtoll(p + strlen(pat), NULL, 10);
    krabka_free(json);
    return v;
}

/* Whether member is in role's roster, and the holder (copied into holder). */
static int in_roster(krabka_status_t *st, const char *member) {
    size_t n = 0;
    OK(krabka_status_roster_count(st, &n));
    for (size_t i = 0; i < n; i++) {
        krabka_roster_entry_t e;
        OK(krabka_status_roster_entry(st, i, &e));
        if (strcmp(e.member, member) == 0)
            return 1;
    }
    return 0;
}

/* describe_async of role: the status, taken from its event. */
static krabka_status_t *describe(krabka_client_t *c, krabka_queue_t *q, const char *role, uint64_t tag) {
    OK(krabka_client_describe_async(c, role, KRABKA_NTS, 15000, q, use(tag), ES));
    krabka_event_t *ev = wait_tag(q, tag, KRABKA_EVENT_DESCRIBE);
    krabka_status_t *st = NULL, *again = (krabka_status_t *)0x1;
    CHECK(ev_err(ev, ES) == KRABKA_OK, "describe: %s", errstr);
    OK(krabka_event_take_status(ev, &st, ES));
    OK(krabka_event_take_status(ev, &again, ES));
    CHECK(st != NULL && again == NULL, "describe: status %p, a second take %p", (void *)st, (void *)again);
    OK(krabka_event_destroy(ev)); /* the status is ours: it outlives the event */
    if (!st)
        exit(1);
    return st;
}

static const char *holder_of(krabka_status_t *st) {
    static char name[KRABKA_NAME_BUF];
    int has = 0;
    size_t n = 0;
    name[0] = '\0';
    OK(krabka_status_holder(st, &has, name, sizeof name, &n));
    return has ? name : "";
}

/* Waits for the next WATCH event of kind on w (through watch_next_async),
 * destroying the others; the watch event is the caller's. */
static krabka_watch_event_t *watch_until(krabka_watch_t *w, krabka_queue_t *q, uint64_t *tag,
                                         krabka_watch_event_kind_t kind) {
    for (int i = 0; i < 20; i++) {
        uint64_t t = (*tag)++;
        OK(krabka_watch_next_async(w, 20000, q, use(t)));
        krabka_event_t *ev = wait_tag(q, t, KRABKA_EVENT_WATCH);
        krabka_watch_event_t *we = NULL, *again = (krabka_watch_event_t *)0x1;
        krabka_err_t code = ev_err(ev, ES);
        CHECK(code == KRABKA_OK, "watch_next_async: %s: %s", krabka_err2name(code), errstr);
        OK(krabka_event_take_watch_event(ev, &we, ES));
        OK(krabka_event_take_watch_event(ev, &again, ES));
        CHECK(again == NULL, "a second take of a watch event");
        OK(krabka_event_destroy(ev));
        if (!we)
            return NULL;
        krabka_watch_event_kind_t k;
        OK(krabka_watch_event_kind(we, &k));
        if (k == kind)
            return we;
        OK(krabka_watch_event_destroy(we));
    }
    CHECK(0, "no watch event of kind %d", (int)kind);
    return NULL;
}

/* The records of the command topic (kread) whose value is value: count
 * returned, the first line copied into line. */
static int read_back(const char *bootstrap, const char *value, char *line, size_t size) {
    char cmd[1024], buf[8192], pat[300];
    int found = 0;
    snprintf(cmd, sizeof cmd, "'%s' '%s' '%s'", kread, bootstrap, topic);
    snprintf(pat, sizeof pat, "\"value\":\"%s\"", value);
    FILE *f = popen(cmd, "r");
    CHECK(f != NULL, "popen %s", cmd);
    if (!f)
        return 0;
    while (fgets(buf, sizeof buf, f)) {
        if (strstr(buf, pat)) {
            if (!found)
                snprintf(line, size, "%s", buf);
            found++;
        }
    }
    CHECK(pclose(f) == 0, "kread failed");
    return found;
}

/* A message struct of a later header: ABI 2's fields and more after them. */
struct later_message {
    krabka_message_t m;
    uint64_t future[3]; /* fields this library does not know: ignored */
};

static void run_cluster(const char *tv, const char *bootstrap, uint64_t base) {
    char role[128], role2[160], role3[160], role4[160], id[64];
    int64_t stamp = now_ms();
    snprintf(role, sizeof role, "capi-async-%s-%" PRId64, tv, stamp);
    snprintf(role2, sizeof role2, "%s-gone", role);
    snprintf(role3, sizeof role3, "%s-try", role);
    snprintf(role4, sizeof role4, "%s-untaken", role);
    snprintf(id, sizeof id, "async-%s-a", tv);
    krabka_client_t *ca = new_client(bootstrap, id);
    snprintf(id, sizeof id, "async-%s-b", tv);
    krabka_client_t *cb = new_client(bootstrap, id);
    snprintf(id, sizeof id, "async-%s-c", tv);
    krabka_client_t *cc = new_client(bootstrap, id);
    snprintf(id, sizeof id, "async-%s-w", tv);
    krabka_client_t *cw = new_client(bootstrap, id);
    krabka_queue_t *q = NULL;
    OK(krabka_queue_new(&q));
    krabka_event_t *ev;
    uint64_t wtag = base + 500;

    /* 1. A watch through the queue; a describe of a role nobody took. */
    OK(krabka_client_watch_async(cw, role, KRABKA_NTS, KRABKA_WATCH_RENEWALS, 15000, q, use(base + 1), ES));
    ev = wait_tag(q, base + 1, KRABKA_EVENT_WATCH_OPEN);
    krabka_watch_t *w = NULL, *w2 = (krabka_watch_t *)0x1;
    CHECK(ev_err(ev, ES) == KRABKA_OK && errstr[0] == '\0', "watch_async: %s", errstr);
    {
        krabka_status_t *st = (krabka_status_t *)0x1;
        CHECK(krabka_event_take_status(ev, &st, ES) == KRABKA_ERR_INVALID_ARG &&
                  strstr(errstr, "KRABKA_EVENT_WATCH_OPEN") && strstr(errstr, "KRABKA_EVENT_DESCRIBE"),
              "take_status of a WATCH_OPEN event: %s", errstr);
    }
    OK(krabka_event_take_watch(ev, &w, ES));
    OK(krabka_event_take_watch(ev, &w2, ES));
    CHECK(w != NULL && w2 == NULL, "watch %p, second take %p", (void *)w, (void *)w2);
    OK(krabka_event_destroy(ev));
    if (!w)
        exit(1);
    krabka_status_t *st = describe(ca, q, role, base + 2);
    krabka_token_t cur;
    OK(krabka_status_token(st, &cur));
    CHECK(cur.producer_id == -1 && holder_of(st)[0] == '\0', "a role nobody took: token %" PRId64 ", holder %s",
          cur.producer_id, holder_of(st));
    OK(krabka_status_destroy(st));

    /* 2. acquire_async wins; two standbys' try_acquire_async are not won
     * (c registers first: rank 0, then b: rank 1). */
    OK(krabka_client_set_metadata(ca, role, KRABKA_NTS, "a", 1, (const uint8_t *)"meta-1", 6, NULL, 0, ES));
    OK(krabka_client_acquire_async(ca, role, KRABKA_NTS, "a", 1, 30000, q, use(base + 3), ES));
    ev = wait_tag(q, base + 3, KRABKA_EVENT_ACQUIRE);
    krabka_leadership_t *la = NULL, *again = (krabka_leadership_t *)0x1;
    CHECK(ev_err(ev, ES) == KRABKA_OK, "acquire_async: %s", errstr);
    OK(krabka_event_take_leadership(ev, &la, ES));
    OK(krabka_event_take_leadership(ev, &again, ES));
    CHECK(la != NULL && again == NULL, "leadership %p, second take %p", (void *)la, (void *)again);
    {
        int64_t r = 1;
        CHECK(krabka_event_retry_at(ev, &r, ES) == KRABKA_ERR_INVALID_ARG && strstr(errstr, "KRABKA_EVENT_ACQUIRE") &&
                  strstr(errstr, "KRABKA_EVENT_TRY_ACQUIRE"),
              "retry_at of an ACQUIRE event: %s", errstr);
    }
    OK(krabka_event_destroy(ev)); /* the leadership was taken: it stays */
    if (!la)
        exit(1);
    krabka_token_t ta = token_of(la);
    krabka_lease_t lease_a = lease_of(la);
    CHECK(ta.producer_id >= 0 && lease_a.deadline > now_ms() - 1000, "a's token %" PRId64 ":%d", ta.producer_id,
          ta.producer_epoch);
    const char *standby[2] = {"c", "b"};
    krabka_client_t *standby_client[2] = {cc, cb};
    for (int i = 0; i < 2; i++) {
        uint64_t tag = base + 4 + (uint64_t)i;
        OK(krabka_client_try_acquire_async(standby_client[i], role, KRABKA_NTS, standby[i], 1, 15000, q, use(tag), ES));
        ev = wait_tag(q, tag, KRABKA_EVENT_TRY_ACQUIRE);
        krabka_leadership_t *l = (krabka_leadership_t *)0x1;
        int64_t retry_at = 0;
        CHECK(ev_err(ev, ES) == KRABKA_OK, "try_acquire_async %s: %s", standby[i], errstr);
        OK(krabka_event_take_leadership(ev, &l, ES));
        OK(krabka_event_retry_at(ev, &retry_at, ES));
        CHECK(l == NULL, "%s won a held role", standby[i]);
        /* Not won: the answer can change at a's lease deadline at the
         * earliest (rank 0), a stagger later for rank 1. */
        CHECK(retry_at >= lease_a.deadline, "%s: retry_at %" PRId64 " before a's deadline %" PRId64, standby[i],
              retry_at, lease_a.deadline);
        OK(krabka_event_destroy(ev));
    }
    /* try_acquire_async of a free role: won, retry_at 0. */
    OK(krabka_client_try_acquire_async(cb, role3, KRABKA_NTS, "t", 1, 15000, q, use(base + 6), ES));
    ev = wait_tag(q, base + 6, KRABKA_EVENT_TRY_ACQUIRE);
    krabka_leadership_t *lt = NULL;
    int64_t retry_t = -1;
    CHECK(ev_err(ev, ES) == KRABKA_OK, "try_acquire_async of a free role: %s", errstr);
    OK(krabka_event_take_leadership(ev, &lt, ES));
    OK(krabka_event_retry_at(ev, &retry_t, ES));
    CHECK(lt != NULL && retry_t == 0, "free role: leadership %p, retry_at %" PRId64, (void *)lt, retry_t);
    OK(krabka_event_destroy(ev));

    /* 3. produce_async: three messages with headers, then three of a later
     * header's struct size, then the refusals. */
    char tok[KRABKA_TOKEN_TEXT_MAX], values[6][200], traces[6][16];
    krabka_token_format(ta, tok, sizeof tok);
    krabka_header_t hs[6][2];
    krabka_message_t msgs[3];
    struct later_message later[3];
    for (int i = 0; i < 6; i++) {
        snprintf(values[i], sizeof values[i], "%s-cmd-%d", role, i);
        snprintf(traces[i], sizeof traces[i], "t-%d", i);
        hs[i][0].key = "trace";
        hs[i][0].value = (const uint8_t *)traces[i];
        hs[i][0].value_len = strlen(traces[i]);
        hs[i][1].key = "empty";
        hs[i][1].value = NULL;
        hs[i][1].value_len = 0;
        krabka_message_t m = KRABKA_MESSAGE_INIT;
        m.topic = topic;
        m.key = (const uint8_t *)role;
        m.key_len = strlen(role);
        m.value = (const uint8_t *)values[i];
        m.value_len = strlen(values[i]);
        m.headers = hs[i];
        m.header_count = 2;
        if (i < 3) {
            msgs[i] = m;
        } else {
            memset(&later[i - 3], 0xab, sizeof later[i - 3]); /* the unknown fields hold garbage */
            later[i - 3].m = m;
            later[i - 3].m.size = sizeof(struct later_message);
        }
    }
    OK(krabka_leadership_produce_async(la, msgs, 3, 30000, q, use(base + 7), ES));
    OK(krabka_leadership_produce_async(la, &later[0].m, 3, 30000, q, use(base + 8), ES));
    /* The messages were copied: changing them now changes nothing. */
    msgs[0].value = (const uint8_t *)"changed";
    msgs[0].value_len = 7;
    later[0].m.topic = NULL;
    krabka_produce_result_t res[2][3];
    for (int k = 0; k < 2; k++) {
        ev = wait_tag(q, base + 7 + (uint64_t)k, KRABKA_EVENT_PRODUCE);
        size_t count = 0;
        CHECK(ev_err(ev, ES) == KRABKA_OK, "produce_async %d: %s", k, errstr);
        memset(res[k], 0x7f, sizeof res[k]);
        OK(krabka_event_results(ev, res[k], 3, &count, ES));
        CHECK(count == 3, "produce_async %d: %zu results", k, count);
        for (int i = 0; i < 3; i++)
            CHECK(res[k][i].partition >= 0 && res[k][i].offset >= 0, "produce_async %d result %d: %d/%" PRId64, k, i,
                  res[k][i].partition, res[k][i].offset);
        /* cap below the count: *count is still 3, only out[0] is written. */
        krabka_produce_result_t one[2], untouched;
        memset(one, 0x5a, sizeof one);
        memset(&untouched, 0x5a, sizeof untouched);
        OK(krabka_event_results(ev, one, 1, &count, ES));
        CHECK(count == 3 && one[0].offset == res[k][0].offset && one[0].partition == res[k][0].partition &&
                  memcmp(&one[1], &untouched, sizeof untouched) == 0,
              "cap 1: count %zu", count);
        OK(krabka_event_results(ev, NULL, 0, &count, ES));
        CHECK(count == 3, "cap 0: count %zu", count);
        OK(krabka_event_destroy(ev));
    }
    /* Refused at once, posting nothing. */
    krabka_message_t small = msgs[1];
    small.size = sizeof(krabka_message_t) - sizeof(size_t);
    CHECK(krabka_leadership_produce_async(la, &small, 1, 30000, q, 9999, ES) == KRABKA_ERR_INVALID_ARG &&
              strstr(errstr, "messages[0].size") != NULL,
          "a size below ABI 2's: %s", errstr);
    small.size = 0;
    CHECK(krabka_leadership_produce_async(la, &small, 1, 30000, q, 9999, ES) == KRABKA_ERR_INVALID_ARG,
          "size 0: %s", errstr);
    small.size = sizeof(krabka_message_t) + 1;
    CHECK(krabka_leadership_produce_async(la, &small, 1, 30000, q, 9999, ES) == KRABKA_ERR_INVALID_ARG &&
              strstr(errstr, "messages[0].size") != NULL,
          "an unaligned size: %s", errstr);
    krabka_message_t mixed[3] = {msgs[1], msgs[1], msgs[1]};
    mixed[2].size = sizeof(struct later_message);
    CHECK(krabka_leadership_produce_async(la, mixed, 3, 30000, q, 9999, ES) == KRABKA_ERR_INVALID_ARG &&
              strstr(errstr, "messages[2].size") != NULL,
          "mismatched sizes: %s", errstr);
    CHECK(krabka_leadership_produce(la, mixed, 3, 30000, NULL, ES) == KRABKA_ERR_INVALID_ARG &&
              strstr(errstr, "messages[2].size") != NULL,
          "mismatched sizes, blocking: %s", errstr);
    krabka_header_t reserved = {"krabka.token", (const uint8_t *)"1:1", 3};
    krabka_message_t bad = msgs[1];
    bad.headers = &reserved;
    bad.header_count = 1;
    CHECK(krabka_leadership_produce_async(la, &bad, 1, 30000, q, 9999, ES) == KRABKA_ERR_INVALID_ARG &&
              strstr(errstr, "reserved") != NULL,
          "a krabka.* header: %s", errstr);
    bad.headers = NULL;
    CHECK(krabka_leadership_produce_async(la, &bad, 1, 30000, q, 9999, ES) == KRABKA_ERR_INVALID_ARG &&
              strstr(errstr, "messages[0].headers") != NULL,
          "headers NULL with a count: %s", errstr);
    bad = msgs[1];
    bad.topic = "";
    CHECK(krabka_leadership_produce_async(la, &bad, 1, 30000, q, 9999, ES) == KRABKA_ERR_INVALID_ARG &&
              strstr(errstr, "topic") != NULL,
          "topic \"\": %s", errstr);
    CHECK(krabka_leadership_produce_async(la, msgs, 1, -1, q, 9999, ES) == KRABKA_ERR_INVALID_ARG, "timeout -1");
    CHECK(krabka_leadership_produce_async(la, msgs, 1, 1000, NULL, 9999, ES) == KRABKA_ERR_INVALID_HANDLE,
          "NULL queue");
    /* The blocking produce takes the later struct size too. */
    later[0].m.topic = topic;
    {
        krabka_produce_result_t r1 = {-1, -1};
        struct later_message one = later[0];
        char v[220];
        snprintf(v, sizeof v, "%s-blocking", role);
        one.m.value = (const uint8_t *)v;
        one.m.value_len = strlen(v);
        OK(krabka_leadership_produce(la, &one.m, 1, 30000, &r1, ES));
        CHECK(r1.offset >= 0, "blocking produce of a later struct: offset %" PRId64, r1.offset);
    }
    expect_quiet(q, 300, "refused produce_async calls");
    /* Read back: each value once, with its headers and a's token. */
    for (int i = 0; i < 6; i++) {
        char line[8192] = "", want_trace[160], want_tok[96];
        int n = read_back(bootstrap, values[i], line, sizeof line);
        snprintf(want_trace, sizeof want_trace, "\"trace\":\"%s\"", traces[i]);
        snprintf(want_tok, sizeof want_tok, "\"krabka.token\":\"%s\"", tok);
        CHECK(n == 1 && strstr(line, want_trace) && strstr(line, "\"empty\":\"\"") && strstr(line, want_tok),
              "%s: %s read back %d times: %s", tv, values[i], n, line);
    }

    /* 4. renew_async, set_metadata_async. */
    sleep_ms(20); /* a renewal granted in the same millisecond would not move the deadline */
    OK(krabka_leadership_renew_async(la, 15000, q, use(base + 9), ES));
    ev = wait_tag(q, base + 9, KRABKA_EVENT_RENEW);
    CHECK(ev_err(ev, ES) == KRABKA_OK && errstr[0] == '\0', "renew_async: %s", errstr);
    OK(krabka_event_destroy(ev));
    CHECK(lease_of(la).deadline > lease_a.deadline, "renew_async did not move the deadline");
    uint8_t big[KRABKA_MAX_METADATA_BYTES + 1];
    memset(big, 'x', sizeof big);
    CHECK(krabka_leadership_set_metadata_async(la, big, sizeof big, 15000, q, 9999, ES) == KRABKA_ERR_INVALID_ARG &&
              strstr(errstr, "4096") != NULL,
          "set_metadata_async of 4097 bytes: %s", errstr);
    CHECK(krabka_leadership_set_metadata_async(la, NULL, 3, 15000, q, 9999, ES) == KRABKA_ERR_INVALID_ARG,
          "NULL data with length 3: %s", errstr);
    OK(krabka_leadership_set_metadata_async(la, (const uint8_t *)"meta-2", 6, 15000, q, use(base + 10), ES));
    ev = wait_tag(q, base + 10, KRABKA_EVENT_SET_METADATA);
    CHECK(ev_err(ev, ES) == KRABKA_OK, "set_metadata_async: %s", errstr);
    OK(krabka_event_destroy(ev));
    {
        uint8_t buf[16];
        size_t len = 0;
        OK(krabka_leadership_metadata(la, buf, sizeof buf, &len));
        CHECK(len == 6 && memcmp(buf, "meta-2", 6) == 0, "metadata after set_metadata_async: %zu bytes", len);
    }

    /* 5. The watch saw a take the role (with meta-1) and the metadata
     * change (a renewal with meta-2). */
    krabka_watch_event_t *we = watch_until(w, q, &wtag, KRABKA_WATCH_HOLDER_CHANGED);
    if (we) {
        char name[KRABKA_NAME_BUF];
        uint8_t buf[16];
        size_t len = 0;
        int has = 0;
        krabka_token_t t;
        OK(krabka_watch_event_role(we, name, sizeof name, &len));
        CHECK(strcmp(name, role) == 0 && len == strlen(role), "watch event role %s", name);
        CHECK(krabka_watch_event_role(we, name, 4, &len) == KRABKA_ERR_BUFFER_TOO_SMALL && len == strlen(role),
              "role into 4 bytes: len %zu", len);
        OK(krabka_watch_event_holder(we, &has, name, sizeof name, &len));
        OK(krabka_watch_event_token(we, &t));
        CHECK(has && strcmp(name, "a") == 0 && krabka_token_compare(t, ta) == 0, "holder %s", name);
        OK(krabka_watch_event_metadata(we, buf, sizeof buf, &len));
        CHECK(len == 6 && memcmp(buf, "meta-1", 6) == 0, "holder change metadata: %zu bytes", len);
        OK(krabka_watch_event_destroy(we));
        CHECK(krabka_watch_event_destroy(we) == KRABKA_ERR_INVALID_HANDLE, "a watch event destroyed twice");
    }
    int meta2 = 0;
    for (int i = 0; i < 5 && !meta2; i++) {
        we = watch_until(w, q, &wtag, KRABKA_WATCH_LEASE_RENEWED);
        if (!we)
            break;
        uint8_t buf[16];
        size_t len = 0;
        OK(krabka_watch_event_metadata(we, buf, sizeof buf, &len));
        meta2 = len == 6 && memcmp(buf, "meta-2", 6) == 0;
        OK(krabka_watch_event_destroy(we));
    }
    CHECK(meta2, "no renewal with meta-2 on the watch");

    /* 6. Resign to b (rank 1): b's pending acquire wins at once, c (rank 0)
     * keeps waiting until its client is destroyed. */
    OK(krabka_leadership_ended_async(la, q, use(base + 11)));
    OK(krabka_client_acquire_async(cc, role, KRABKA_NTS, "c", 1, 120000, q, use(base + 12), ES));
    OK(krabka_client_acquire_async(cb, role, KRABKA_NTS, "b", 1, 120000, q, use(base + 13), ES));
    CHECK(krabka_leadership_resign_async(la, NULL, 4, 15000, q, 9999, ES) == KRABKA_ERR_INVALID_ARG,
          "NULL successor with length 4: %s", errstr);
    CHECK(krabka_leadership_resign_async(la, "", 0, 15000, q, 9999, ES) == KRABKA_ERR_EMPTY_MEMBER,
          "empty successor: %s", errstr);
    sleep_ms(500); /* both acquires wait (registered already) */
    OK(krabka_leadership_resign_async(la, "b", 1, 15000, q, use(base + 14), ES));
    ev = wait_tag(q, base + 14, KRABKA_EVENT_RESIGN);
    CHECK(ev_err(ev, ES) == KRABKA_OK, "resign_async to b: %s", errstr);
    OK(krabka_event_destroy(ev));
    ev = wait_tag(q, base + 11, KRABKA_EVENT_ENDED);
    {
        krabka_leadership_state_t s = KRABKA_LEADERSHIP_ACTIVE;
        krabka_err_t code = ev_err(ev, ES);
        OK(krabka_event_state(ev, &s, ES));
        CHECK(s == KRABKA_LEADERSHIP_RESIGNED && code == KRABKA_ERR_NOT_LEADER, "ENDED: state %d, %s", (int)s,
              krabka_err2name(code));
    }
    OK(krabka_event_destroy(ev));
    ev = wait_tag(q, base + 13, KRABKA_EVENT_ACQUIRE);
    krabka_leadership_t *lb = NULL;
    CHECK(ev_err(ev, ES) == KRABKA_OK, "b's acquire_async: %s", errstr);
    OK(krabka_event_take_leadership(ev, &lb, ES));
    OK(krabka_event_destroy(ev));
    CHECK(lb && krabka_token_supersedes(token_of(lb), ta), "b took over with a newer token");
    st = describe(ca, q, role, base + 15);
    CHECK(strcmp(holder_of(st), "b") == 0 && in_roster(st, "c"), "after the hand-over: holder %s, c registered %d",
          holder_of(st), in_roster(st, "c"));
    OK(krabka_status_destroy(st));
    {
        krabka_event_t *none = poll_one(q); /* c is still waiting: its acquire has not posted */
        CHECK(none == NULL || ev_tag(none) != base + 12, "c's acquire posted while b holds the role");
        if (none && nstash < (int)(sizeof stash / sizeof stash[0]))
            stash[nstash++] = none;
        else if (none)
            OK(krabka_event_destroy(none));
    }

    /* 7. leave_async of a registered member. */
    OK(krabka_client_try_acquire_async(ca, role, KRABKA_NTS, "d", 1, 15000, q, use(base + 16), ES));
    ev = wait_tag(q, base + 16, KRABKA_EVENT_TRY_ACQUIRE);
    CHECK(ev_err(ev, ES) == KRABKA_OK, "d's try_acquire_async: %s", errstr);
    OK(krabka_event_destroy(ev)); /* not won: nothing to dispose of */
    st = describe(ca, q, role, base + 17);
    CHECK(in_roster(st, "d"), "d is not registered");
    OK(krabka_status_destroy(st));
    OK(krabka_client_leave_async(ca, role, KRABKA_NTS, "d", 1, 15000, q, use(base + 18), ES));
    ev = wait_tag(q, base + 18, KRABKA_EVENT_LEAVE);
    CHECK(ev_err(ev, ES) == KRABKA_OK, "leave_async: %s", errstr);
    OK(krabka_event_destroy(ev));
    st = describe(ca, q, role, base + 19);
    CHECK(!in_roster(st, "d") && in_roster(st, "c"), "after leave_async: d %d, c %d", in_roster(st, "d"),
          in_roster(st, "c"));
    OK(krabka_status_destroy(st));

    /* c's acquire ends when its client is destroyed. */
    OK(krabka_client_destroy(cc));
    ev = wait_tag(q, base + 12, KRABKA_EVENT_ACQUIRE);
    {
        krabka_leadership_t *none = (krabka_leadership_t *)0x1;
        krabka_err_t code = ev_err(ev, ES);
        OK(krabka_event_take_leadership(ev, &none, ES));
        CHECK(code == KRABKA_ERR_CLOSED && none == NULL, "c's acquire after its client's destroy: %s",
              krabka_err2name(code));
    }
    OK(krabka_event_destroy(ev));

    /* b resigns plainly (resign_async without a successor). */
    OK(krabka_leadership_resign_async(lb, NULL, 0, 15000, q, use(base + 20), ES));
    ev = wait_tag(q, base + 20, KRABKA_EVENT_RESIGN);
    CHECK(ev_err(ev, ES) == KRABKA_OK, "b's resign_async: %s", errstr);
    OK(krabka_event_destroy(ev));
    {
        krabka_leadership_state_t s;
        OK(krabka_leadership_state(lb, &s));
        CHECK(s == KRABKA_LEADERSHIP_RESIGNED, "b's state %d", (int)s);
    }

    /* 8. An event destroyed with its leadership: released. */
    long long leaders = stat_of(cb, "leaders"), closed = stat_of(cb, "ends_closed");
    OK(krabka_client_acquire_async(cb, role4, KRABKA_NTS, "u", 1, 30000, q, use(base + 21), ES));
    ev = wait_tag(q, base + 21, KRABKA_EVENT_ACQUIRE);
    CHECK(ev_err(ev, ES) == KRABKA_OK, "u's acquire_async: %s", errstr);
    CHECK(stat_of(cb, "leaders") == leaders + 1, "leaders %lld before the destroy", stat_of(cb, "leaders"));
    OK(krabka_event_destroy(ev));
    CHECK(stat_of(cb, "leaders") == leaders && stat_of(cb, "ends_closed") == closed + 1,
          "after destroying the event: leaders %lld (was %lld), ends_closed %lld (was %lld)", stat_of(cb, "leaders"),
          leaders, stat_of(cb, "ends_closed"), closed);

    /* 9. A queue destroyed with calls pending. x holds role2; y's acquire,
     * a describe and a produce post to q2, which is destroyed at once. */
    krabka_leadership_t *lx = NULL;
    OK(krabka_client_acquire(ca, role2, KRABKA_NTS, "x", 1, 30000, &lx, ES));
    krabka_queue_t *q2 = NULL;
    OK(krabka_queue_new(&q2));
    int q2fd = -1;
    OK(krabka_queue_fd(q2, &q2fd));
    leaders = stat_of(cb, "leaders");
    closed = stat_of(cb, "ends_closed");
    long long won = stat_of(cb, "acquisitions");
    OK(krabka_client_acquire_async(cb, role2, KRABKA_NTS, "y", 1, 60000, q2, 1, ES));
    OK(krabka_client_describe_async(ca, role2, KRABKA_NTS, 15000, q2, 2, ES));
    OK(krabka_leadership_produce_async(lx, msgs + 1, 1, 30000, q2, 3, ES));
    OK(krabka_queue_destroy(q2));
    OK(krabka_leadership_destroy(lx)); /* without resigning: y waits out x's lease */
    /* y wins once x's lease has run out; the win goes nowhere. */
    int64_t until = now_ms() + 60000;
    while (stat_of(cb, "acquisitions") == won && now_ms() < until)
        sleep_ms(100);
    CHECK(stat_of(cb, "acquisitions") == won + 1, "y never won role2");
    until = now_ms() + 10000;
    while (stat_of(cb, "ends_closed") == closed && now_ms() < until)
        sleep_ms(20);
    CHECK(stat_of(cb, "leaders") == leaders && stat_of(cb, "ends_closed") == closed + 1,
          "y's leadership after its queue died: leaders %lld (was %lld), ends_closed %lld (was %lld)",
          stat_of(cb, "leaders"), leaders, stat_of(cb, "ends_closed"), closed);
    st = describe(ca, q, role2, base + 22);
    int has_lease = 0;
    krabka_lease_t ly;
    memset(&ly, 0, sizeof ly);
    OK(krabka_status_lease(st, &has_lease, &ly));
    CHECK(has_lease && strcmp(ly.member, "y") == 0, "role2's lease names %s", ly.member);
    OK(krabka_status_destroy(st));
    /* Nobody renews y's lease: z takes role2 after its deadline. */
    snprintf(id, sizeof id, "async-%s-z", tv);
    krabka_client_t *cz = new_client(bootstrap, id);
    krabka_leadership_t *lz = NULL;
    OK(krabka_client_acquire(cz, role2, KRABKA_NTS, "z", 1, 60000, &lz, ES));
    CHECK(now_ms() >= ly.deadline && krabka_token_supersedes(token_of(lz), ly.token),
          "z won role2 at %" PRId64 ", y's lease ran until %" PRId64, now_ms(), ly.deadline);
    OK(krabka_leadership_resign(lz, 15000, ES));
    OK(krabka_leadership_destroy(lz));
    OK(krabka_client_destroy(cz));

    /* The end: every call posted exactly one event, nothing else waits. */
    OK(krabka_leadership_resign(lt, 15000, ES));
    OK(krabka_leadership_destroy(lt));
    OK(krabka_leadership_destroy(lb));
    OK(krabka_leadership_destroy(la));
    OK(krabka_watch_destroy(w));
    while (nstash > 0)
        OK(krabka_event_destroy(stash[--nstash]));
    expect_quiet(q, 200, "the end");
    for (uint64_t t = base; t < base + 1000 && t < MAXTAG; t++)
        CHECK(posted[t] == expected[t], "tag %" PRIu64 ": %d events, %d expected", t, posted[t], expected[t]);
    OK(krabka_queue_destroy(q));
    OK(krabka_client_destroy(ca));
    OK(krabka_client_destroy(cb));
    OK(krabka_client_destroy(cw));
    printf("async: %s: every async form posted one event (%d checks so far, %d failures)\n", tv, checks, failures);
}

int main(void) {
    const char *tv2 = getenv("KRABKA_BOOTSTRAP"), *tv1 = getenv("KRABKA_BOOTSTRAP_TV1");
    topic = getenv("KRABKA_C_TOPIC");
    kread = getenv("KRABKA_KREAD");
    if (!tv2 || !*tv2 || !tv1 || !*tv1 || !topic || !*topic || !kread || !*kread) {
        fprintf(stderr, "async: set KRABKA_BOOTSTRAP, KRABKA_BOOTSTRAP_TV1, KRABKA_C_TOPIC and KRABKA_KREAD; "
                        "`make capi-async` does\n");
        return 2;
    }
    run_cluster("tv2", tv2, 0);
    run_cluster("tv1", tv1, 1000);
    printf("async: %d checks, %d failures\n", checks, failures);
    return failures ? 1 : 0;
}
