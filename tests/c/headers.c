/* Record headers through the C ABI (docs/PROTOCOL.md section 11), on the
 * broker at $KRABKA_BOOTSTRAP: term and member metadata (set before the
 * acquire, read back from describe, the leadership and a watch, changed by a
 * renewal), the 4096-byte limit, a resign to a named successor that takes
 * over while the rank-0 standby waits (a 60 s stagger), guarded writes with
 * headers, and the verifier. Misuse: NULL pointers, a small buffer, reserved
 * header names, stale handles. Per-call acquire options
 * (krabka_acquire_options_t) in every call that takes them: their metadata
 * wins over the client's (krabka_client_set_metadata, which the calls
 * without options still use), and they are copied when the call is made. */
#define CHECK_NAME "headers"
#include <inttypes.h>
#include <poll.h>
#include <pthread.h>
#include <stdint.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "check.h"

static const char *bootstrap, *topic;
static char role[96], coord_topic[96];

static krabka_client_t *new_client(const char *id) {
    krabka_conf_t *conf = krabka_conf_new();
    krabka_client_t *c = NULL;
    OK(krabka_conf_set(conf, "bootstrap.servers", bootstrap, ES));
    OK(krabka_conf_set(conf, "client.id", id, ES));
    OK(krabka_conf_set(conf, "krabka.topic", coord_topic, ES));
    OK(krabka_conf_set(conf, "krabka.topic.partitions", "1", ES));
    OK(krabka_conf_set(conf, "krabka.lease.ms", "60000", ES));
    OK(krabka_conf_set(conf, "krabka.renew.interval.ms", "20000", ES));
    OK(krabka_conf_set(conf, "krabka.challenge.stagger.ms", "60000", ES));
    OK(krabka_conf_set(conf, "krabka.poll.interval.ms", "100", ES));
    OK(krabka_client_new(conf, &c, ES));
    OK(krabka_conf_destroy(conf));
    return c;
}

struct waiter {
    krabka_client_t *c;
    const char *member;
    krabka_leadership_t *l;
    krabka_err_t err;
};

static void *acquire_thread(void *arg) {
    struct waiter *w = arg;
    char es[512];
    w->err = krabka_client_acquire(w->c, role, strlen(role), w->member, strlen(w->member), 120000, &w->l, es, sizeof es);
    return NULL;
}

static int registered(krabka_client_t *c, const char *member) {
    krabka_status_t *st = NULL;
    OK(krabka_client_describe(c, role, strlen(role), 30000, &st, ES));
    size_t n = 0;
    OK(krabka_status_roster_count(st, &n));
    int found = 0;
    for (size_t i = 0; i < n; i++) {
        krabka_roster_entry_t e;
        OK(krabka_status_roster_entry(st, i, &e));
        if (e.member_len == strlen(member) && memcmp(e.member, member, e.member_len) == 0)
            found = 1;
    }
    OK(krabka_status_destroy(st));
    return found;
}

static void wait_registered(krabka_client_t *c, const char *member) {
    for (int i = 0; i < 400 && !registered(c, member); i++) {
        struct timespec ts = {0, 50 * 1000 * 1000};
        nanosleep(&ts, NULL);
    }
    CHECK(registered(c, member), "%s never registered", member);
}

static int meta_is(size_t len, const uint8_t *buf, const char *want) {
    return len == strlen(want) && memcmp(buf, want, len) == 0;
}

/* The next event of type want or also on q (up to 90 s; others are
 * destroyed). */
static krabka_event_t *next_of2(krabka_queue_t *q, krabka_event_type_t want, krabka_event_type_t also) {
    int fd = -1;
    OK(krabka_queue_fd(q, &fd));
    for (int i = 0; i < 450; i++) {
        krabka_event_t *ev = NULL;
        krabka_event_type_t t = KRABKA_EVENT_NONE;
        OK(krabka_queue_poll(q, &ev));
        if (!ev) {
            struct pollfd p = {fd, POLLIN, 0};
            poll(&p, 1, 200);
            continue;
        }
        OK(krabka_event_type(ev, &t));
        if (t == want || t == also)
            return ev;
        OK(krabka_event_destroy(ev));
    }
    CHECK(0, "no event of type %d or %d within 90 s", (int)want, (int)also);
    printf("headers: stopping\n");
    exit(1);
}

/* The next event of type want on q (up to 90 s; others are destroyed). */
static krabka_event_t *next_of(krabka_queue_t *q, krabka_event_type_t want) { return next_of2(q, want, want); }

/* The term metadata of l, and the member metadata of member in the roster
 * of r, are term and member (NULL: none). */
static void check_meta(krabka_client_t *c, krabka_leadership_t *l, const char *r, const char *member, const char *term,
                       const char *mmeta, const char *what) {
    uint8_t buf[KRABKA_MAX_METADATA_BYTES];
    size_t len = 99, n = 0;
    krabka_status_t *st = NULL;
    int found = 0;
    OK(krabka_leadership_metadata(l, buf, sizeof buf, &len));
    CHECK(term ? meta_is(len, buf, term) : len == 0, "%s: term metadata of %zu bytes, want %s", what, len,
          term ? term : "none");
    OK(krabka_client_describe(c, r, strlen(r), 30000, &st, ES));
    OK(krabka_status_metadata(st, buf, sizeof buf, &len));
    CHECK(term ? meta_is(len, buf, term) : len == 0, "%s: describe's term metadata of %zu bytes", what, len);
    OK(krabka_status_roster_count(st, &n));
    for (size_t i = 0; i < n; i++) {
        krabka_roster_entry_t e;
        OK(krabka_status_roster_entry(st, i, &e));
        if (strcmp(e.member, member) == 0) {
            found = 1;
            OK(krabka_status_roster_metadata(st, i, buf, sizeof buf, &len));
            CHECK(mmeta ? meta_is(len, buf, mmeta) : len == 0, "%s: member metadata of %zu bytes, want %s", what,
                  len, mmeta ? mmeta : "none");
        }
    }
    CHECK(found, "%s: %s is not in the roster", what, member);
    OK(krabka_status_destroy(st));
}

static void per_call_options(void) {
    char r[6][128];
    for (int i = 0; i < 6; i++)
        snprintf(r[i], sizeof r[i], "%s-opts-%d", role, i);
    krabka_client_t *d = new_client("c-headers-d");
    krabka_acquire_options_t *o = NULL;
    krabka_leadership_t *l = NULL;
    krabka_queue_t *q = NULL;
    krabka_event_t *ev = NULL;
    krabka_err_t code = KRABKA_ERR_INTERNAL;
    int64_t retry = 0;
    OK(krabka_queue_new(&q));
    OK(krabka_acquire_options_new(&o));
    OK(krabka_acquire_options_set_metadata(o, (const uint8_t *)"opts-term", 9, ES));
    OK(krabka_acquire_options_set_member_metadata(o, (const uint8_t *)"opts-member", 11, ES));

    /* The options' metadata, not the client's, goes with the _opts call;
     * the call without options still takes the client's. */
    OK(krabka_client_set_metadata(d, r[0], strlen(r[0]), "x", 1, (const uint8_t *)"map-term", 8,
                                  (const uint8_t *)"map-member", 10, ES));
    OK(krabka_client_acquire_opts(d, r[0], KRABKA_NTS, "x", KRABKA_NTS, o, 30000, &l, ES));
    check_meta(d, l, r[0], "x", "opts-term", "opts-member", "acquire_opts");
    OK(krabka_leadership_resign(l, 30000, ES));
    OK(krabka_leadership_destroy(l));
    OK(krabka_client_acquire(d, r[0], KRABKA_NTS, "x", KRABKA_NTS, 30000, &l, ES));
    check_meta(d, l, r[0], "x", "map-term", "map-member", "acquire after acquire_opts (the client's metadata)");
    OK(krabka_leadership_destroy(l));

    /* try_acquire_opts. */
    OK(krabka_client_try_acquire_opts(d, r[1], KRABKA_NTS, "x", KRABKA_NTS, o, 30000, &l, &retry, ES));
    CHECK(l != NULL, "try_acquire_opts of a free role did not win");
    if (l) {
        check_meta(d, l, r[1], "x", "opts-term", "opts-member", "try_acquire_opts");
        OK(krabka_leadership_destroy(l));
    }

    /* The async forms copy the options when called: changed and destroyed
     * right after, the acquire still carries what they held. */
    OK(krabka_client_acquire_opts_async(d, r[2], KRABKA_NTS, "x", KRABKA_NTS, o, 30000, q, 1, ES));
    OK(krabka_client_try_acquire_opts_async(d, r[3], KRABKA_NTS, "x", KRABKA_NTS, o, 30000, q, 2, ES));
    OK(krabka_acquire_options_set_metadata(o, (const uint8_t *)"changed", 7, ES));
    OK(krabka_acquire_options_set_member_metadata(o, NULL, 0, ES));
    /* The two complete in either order. */
    int seen[2] = {0, 0};
    for (int n = 0; n < 2; n++) {
        krabka_event_type_t t = KRABKA_EVENT_NONE;
        ev = next_of2(q, KRABKA_EVENT_ACQUIRE, KRABKA_EVENT_TRY_ACQUIRE);
        OK(krabka_event_type(ev, &t));
        int i = t == KRABKA_EVENT_ACQUIRE ? 0 : 1;
        CHECK(!seen[i], "two events of type %d", (int)t);
        seen[i] = 1;
        OK(krabka_event_error(ev, &code, errstr, sizeof errstr));
        CHECK(code == KRABKA_OK, "%s_opts_async: %s (%s)", i == 0 ? "acquire" : "try_acquire", krabka_err2name(code),
              errstr);
        l = NULL;
        OK(krabka_event_take_leadership(ev, &l, ES));
        CHECK(l != NULL, "%s_opts_async won nothing", i == 0 ? "acquire" : "try_acquire");
        if (l) {
            check_meta(d, l, r[2 + i], "x", "opts-term", "opts-member", i == 0 ? "acquire_opts_async" : "try_acquire_opts_async");
            OK(krabka_leadership_destroy(l));
        }
        OK(krabka_event_destroy(ev));
    }

    /* The elector: every acquire of the loop carries the options as they
     * were at krabka_elector_new_opts (the term metadata "changed" now, no
     * member metadata), also after they were destroyed. */
    krabka_elector_t *el = NULL;
    OK(krabka_elector_new_opts(d, r[4], KRABKA_NTS, "x", KRABKA_NTS, o, 0, q, 3, &el, ES));
    OK(krabka_acquire_options_destroy(o));
    for (;;) {
        krabka_term_event_kind_t kind = 0;
        ev = next_of(q, KRABKA_EVENT_TERM);
        OK(krabka_event_term_kind(ev, &kind, ES));
        if (kind == KRABKA_TERM_STARTED)
            break;
        OK(krabka_event_destroy(ev));
    }
    l = NULL;
    OK(krabka_event_take_leadership(ev, &l, ES));
    CHECK(l != NULL, "the elector's STARTED carries no leadership");
    if (l) {
        check_meta(d, l, r[4], "x", "changed", NULL, "elector_new_opts");
        OK(krabka_leadership_destroy(l));
    }
    OK(krabka_event_destroy(ev));
    OK(krabka_elector_destroy(el));
    OK(krabka_queue_destroy(q));
    OK(krabka_client_destroy(d));
}

int main(void) {
    bootstrap = getenv("KRABKA_BOOTSTRAP");
    topic = getenv("KRABKA_C_TOPIC");
    if (!bootstrap || !*bootstrap || !topic || !*topic) {
        printf("headers: KRABKA_BOOTSTRAP and KRABKA_C_TOPIC must be set (make capi-headers-live)\n");
        return 2;
    }
    snprintf(role, sizeof role, "c-headers-%ld-%ld", (long)getpid(), (long)time(NULL));
    snprintf(coord_topic, sizeof coord_topic, "krabka-c-headers-%ld-%ld", (long)getpid(), (long)time(NULL));
    krabka_client_t *ca = new_client("c-headers-a"), *cb = new_client("c-headers-b"), *cc = new_client("c-headers-c");
    uint8_t big[KRABKA_MAX_METADATA_BYTES + 1];
    memset(big, 'x', sizeof big);
    uint8_t buf[KRABKA_MAX_METADATA_BYTES];
    size_t len = 99;

    /* Metadata set before the acquire; misuse first. */
    CHECK(krabka_client_set_metadata(ca, role, strlen(role), "a", 1, big, sizeof big, NULL, 0, ES) ==
              KRABKA_ERR_INVALID_ARG && strstr(errstr, "4096") != NULL,
          "4097 bytes of term metadata: %s", errstr);
    CHECK(krabka_client_set_metadata(ca, role, strlen(role), "a", 1, NULL, 3, NULL, 0, ES) == KRABKA_ERR_INVALID_ARG,
          "NULL with length 3: %s", errstr);
    CHECK(krabka_client_set_metadata(NULL, role, strlen(role), "a", 1, NULL, 0, NULL, 0, ES) ==
              KRABKA_ERR_INVALID_HANDLE, "NULL client: %s", errstr);
    OK(krabka_client_set_metadata(ca, role, strlen(role), "a", 1, (const uint8_t *)"term-a", 6,
                                  (const uint8_t *)"member-a", 8, ES));
    krabka_watch_t *w = NULL;
    OK(krabka_client_watch(cc, role, strlen(role), 0, 30000, &w, ES));
    krabka_leadership_t *a = NULL;
    OK(krabka_client_acquire(ca, role, strlen(role), "a", 1, 30000, &a, ES));
    OK(krabka_leadership_metadata(a, buf, sizeof buf, &len));
    CHECK(meta_is(len, buf, "term-a"), "leadership metadata %zu bytes", len);
    CHECK(krabka_leadership_metadata(a, buf, 2, &len) == KRABKA_ERR_INVALID_ARG && len == 6, "small buffer: %zu", len);
    CHECK(krabka_leadership_metadata(a, buf, sizeof buf, NULL) == KRABKA_ERR_INVALID_ARG, "NULL len");

    krabka_status_t *st = NULL;
    OK(krabka_client_describe(cc, role, strlen(role), 30000, &st, ES));
    OK(krabka_status_metadata(st, buf, sizeof buf, &len));
    CHECK(meta_is(len, buf, "term-a"), "describe: term metadata of %zu bytes", len);
    OK(krabka_status_roster_metadata(st, 0, buf, sizeof buf, &len));
    CHECK(meta_is(len, buf, "member-a"), "describe: member metadata of %zu bytes", len);
    CHECK(krabka_status_roster_metadata(st, 5, buf, sizeof buf, &len) == KRABKA_ERR_INVALID_ARG, "index 5");
    OK(krabka_status_destroy(st));
    CHECK(krabka_status_metadata(st, buf, sizeof buf, &len) == KRABKA_ERR_INVALID_HANDLE, "destroyed status");

    /* The watch's first event is the holder change, with the metadata. */
    krabka_watch_event_t *ev = NULL;
    krabka_watch_event_kind_t kind;
    int saw = 0;
    for (int i = 0; i < 10 && !saw; i++) {
        OK(krabka_watch_next(w, 10000, &ev, ES));
        OK(krabka_watch_event_kind(ev, &kind));
        if (kind == KRABKA_WATCH_HOLDER_CHANGED) {
            OK(krabka_watch_event_metadata(ev, buf, sizeof buf, &len));
            CHECK(meta_is(len, buf, "term-a"), "watch: holder change with %zu bytes of metadata", len);
            CHECK(krabka_watch_event_metadata(ev, buf, 2, &len) == KRABKA_ERR_INVALID_ARG && len == 6,
                  "watch event metadata into 2 bytes: %zu", len);
            CHECK(krabka_watch_event_metadata(ev, buf, sizeof buf, NULL) == KRABKA_ERR_INVALID_ARG, "NULL len");
            saw = 1;
        }
        OK(krabka_watch_event_destroy(ev));
    }
    CHECK(saw, "no holder change seen");
    CHECK(krabka_watch_event_metadata(ev, buf, sizeof buf, &len) == KRABKA_ERR_INVALID_HANDLE, "destroyed watch event");

    /* A change of the term's metadata is a renewal, delivered to the watch. */
    CHECK(krabka_leadership_set_metadata(a, big, sizeof big, 10000, ES) == KRABKA_ERR_INVALID_ARG,
          "set 4097 bytes: %s", errstr);
    OK(krabka_leadership_set_metadata(a, (const uint8_t *)"term-a:2", 8, 30000, ES));
    OK(krabka_leadership_metadata(a, buf, sizeof buf, &len));
    CHECK(meta_is(len, buf, "term-a:2"), "after set: %zu bytes", len);
    saw = 0;
    for (int i = 0; i < 10 && !saw; i++) {
        OK(krabka_watch_next(w, 10000, &ev, ES));
        OK(krabka_watch_event_kind(ev, &kind));
        if (kind == KRABKA_WATCH_LEASE_RENEWED) {
            OK(krabka_watch_event_metadata(ev, buf, sizeof buf, &len));
            CHECK(meta_is(len, buf, "term-a:2"), "watch: renewal with %zu bytes of metadata", len);
            saw = 1;
        }
        OK(krabka_watch_event_destroy(ev));
    }
    CHECK(saw, "the metadata change was not delivered");

    /* Guarded writes with headers (in the messages); reserved names and NULL
     * arrays refused. */
    krabka_header_t hs[3] = {
        {"trace", (const uint8_t *)"t-1", 3}, {"source", (const uint8_t *)"c", 1}, {"trace", NULL, 0}};
    krabka_message_t msgs[2] = {
        {sizeof(krabka_message_t), topic, 0, (const uint8_t *)"k", 1, (const uint8_t *)"v1", 2, hs, 2},
        {sizeof(krabka_message_t), topic, 0, (const uint8_t *)"k", 1, (const uint8_t *)"v2", 2, hs + 2, 1},
    };
    krabka_produce_result_t res[2];
    OK(krabka_leadership_produce(a, msgs, 2, 30000, res, ES));
    CHECK(res[0].offset >= 0 && res[1].offset > res[0].offset, "offsets %" PRId64 " %" PRId64, res[0].offset,
          res[1].offset);
    krabka_message_t plain = msgs[0];
    plain.headers = NULL;
    plain.header_count = 0;
    OK(krabka_leadership_produce(a, &plain, 1, 30000, res, ES));
    krabka_header_t reserved = {"krabka.token", (const uint8_t *)"1:1", 3};
    krabka_message_t bad = msgs[0];
    bad.headers = &reserved;
    bad.header_count = 1;
    CHECK(krabka_leadership_produce(a, &bad, 1, 30000, res, ES) == KRABKA_ERR_INVALID_ARG &&
              strstr(errstr, "reserved") != NULL,
          "a krabka.* header: %s", errstr);
    bad.headers = NULL;
    CHECK(krabka_leadership_produce(a, &bad, 1, 30000, res, ES) == KRABKA_ERR_INVALID_ARG &&
              strstr(errstr, "messages[0].headers is NULL") != NULL,
          "headers NULL with a count: %s", errstr);
    krabka_header_t nokey = {NULL, NULL, 0};
    bad.headers = &nokey;
    CHECK(krabka_leadership_produce(a, &bad, 1, 30000, res, ES) == KRABKA_ERR_INVALID_ARG &&
              strstr(errstr, "messages[0].headers[0].key is NULL") != NULL,
          "a NULL header key: %s", errstr);
    krabka_header_t nullval = {"x", NULL, 3};
    bad.headers = &nullval;
    CHECK(krabka_leadership_produce(a, &bad, 1, 30000, res, ES) == KRABKA_ERR_INVALID_ARG &&
              strstr(errstr, "messages[0].headers[0].value") != NULL,
          "a NULL header value with a length: %s", errstr);

    /* Resign to the rank-1 standby: it wins at once, the rank-0 one waits. */
    struct waiter wb = {cb, "b", NULL, KRABKA_OK}, wc = {cc, "c", NULL, KRABKA_OK};
    pthread_t tb, tc;
    pthread_create(&tb, NULL, acquire_thread, &wb);
    wait_registered(ca, "b");
    pthread_create(&tc, NULL, acquire_thread, &wc);
    wait_registered(ca, "c");
    CHECK(krabka_leadership_resign_to(a, NULL, 0, 10000, ES) != KRABKA_OK, "resign to NULL: %s", errstr);
    OK(krabka_leadership_resign_to(a, "c", 1, 30000, ES));
    pthread_join(tc, NULL);
    CHECK(wc.err == KRABKA_OK && wc.l != NULL, "the named successor: %s", krabka_err2name(wc.err));
    krabka_token_t ta, tcok;
    OK(krabka_leadership_token(a, &ta));
    if (wc.l) {
        OK(krabka_leadership_token(wc.l, &tcok));
        CHECK(krabka_token_supersedes(tcok, ta), "c's token does not supersede a's");
    }
    krabka_leadership_state_t bs;
    CHECK(wb.l == NULL, "the rank-0 standby won although c was named");
    OK(krabka_client_describe(ca, role, strlen(role), 30000, &st, ES));
    size_t n = 0;
    OK(krabka_status_roster_count(st, &n));
    CHECK(n == 2, "roster of %zu after the hand-over (b must stay)", n);
    OK(krabka_status_destroy(st));
    (void)bs;

    /* The verifier (pure). */
    krabka_verifier_t *v = NULL;
    OK(krabka_verifier_new(&v));
    krabka_token_t t1 = {7, 1}, t2 = {7, 2};
    krabka_verdict_t verdict;
    OK(krabka_verifier_judge(v, "r", 1, (const uint8_t *)"7:1", 3, t1, &verdict));
    CHECK(verdict == KRABKA_VERDICT_OK, "first: %d", verdict);
    OK(krabka_verifier_judge(v, "r", 1, (const uint8_t *)"7:2", 3, t2, &verdict));
    CHECK(verdict == KRABKA_VERDICT_OK, "newer: %d", verdict);
    OK(krabka_verifier_judge(v, "r", 1, (const uint8_t *)"7:1", 3, t1, &verdict));
    CHECK(verdict == KRABKA_VERDICT_STALE, "older: %d", verdict);
    OK(krabka_verifier_judge(v, "r", 1, (const uint8_t *)"7:2", 3, t1, &verdict));
    CHECK(verdict == KRABKA_VERDICT_MISMATCH, "copied header: %d", verdict);
    OK(krabka_verifier_judge(v, "r", 1, NULL, 0, t2, &verdict));
    CHECK(verdict == KRABKA_VERDICT_UNSTAMPED, "no header: %d", verdict);
    int has = 0;
    krabka_token_t hi;
    OK(krabka_verifier_highest(v, "r", 1, &has, &hi));
    CHECK(has && krabka_token_compare(hi, t2) == 0, "highest");
    OK(krabka_verifier_highest(v, "none", 4, &has, &hi));
    CHECK(!has, "a scope never seen");
    CHECK(krabka_verifier_judge(v, "r", 1, NULL, 0, t2, NULL) == KRABKA_ERR_INVALID_ARG, "NULL out");
    CHECK(krabka_verifier_judge((krabka_verifier_t *)w, "r", 1, NULL, 0, t2, &verdict) == KRABKA_ERR_INVALID_HANDLE,
          "a watch handle as a verifier");
    OK(krabka_verifier_destroy(v));
    CHECK(krabka_verifier_judge(v, "r", 1, NULL, 0, t2, &verdict) == KRABKA_ERR_INVALID_HANDLE, "destroyed verifier");

    per_call_options();

    if (wc.l)
        krabka_leadership_destroy(wc.l);
    krabka_leadership_destroy(a);
    krabka_watch_destroy(w);
    krabka_client_destroy(ca);
    krabka_client_destroy(cc);
    krabka_client_destroy(cb); /* ends b's acquire with CLOSED */
    pthread_join(tb, NULL);
    CHECK(wb.err == KRABKA_ERR_CLOSED, "b's acquire ended with %s", krabka_err2name(wb.err));
    printf("headers: %d checks, %d passed, %d failed\n", checks, checks - failures, failures);
    return failures ? 1 : 0;
}
