/*
 * Leadership events, event queues, logs and statistics through the C API,
 * on a real broker ($KRABKA_BOOTSTRAP; the topic $KRABKA_C_TOPIC must exist,
 * `make capi-events` creates it).
 *
 *   1. node-a holds the role; krabka_leadership_wait times out while it is
 *      ACTIVE; its event fd is not readable.
 *   2. node-b's krabka_client_acquire_async waits on the library's threads;
 *      the host sees its result through the queue fd in poll(2) once node-a's
 *      lease has run out, with a newer token.
 *   3. the host blocks in poll(2) on node-a's event fd; node-a learns that it
 *      was superseded (from its view of the log, or when its next guarded
 *      write is refused): poll wakes, the state is FENCED, the write answers
 *      FENCED, end_error says FENCED, krabka_leadership_wait returns FENCED,
 *      and the krabka_leadership_ended_async event arrives with FENCED.
 *      Both clients follow the same coordination topic, so node-a's view
 *      normally reads node-b's lease first and ends the leadership before
 *      the write is sent (the view's early FENCED); the checks accept the
 *      broker's refusal too. What they prove is how the end is delivered
 *      (fd, state, wait, end_error, ENDED event), not that the broker
 *      refuses the write: blind.c proves that.
 *   4. krabka_leadership_wait returns when another thread resigns.
 *   5. destroying a client while an acquire_async waits posts CLOSED.
 *   6. node-a's log callback received the fenced end (warning) and the role
 *      won (info); a log queue at debug level receives the registration.
 *   7. the statistics JSON of both clients carries the counters that moved.
 *   8. a watch (woken through its event fd in poll(2)) sees a failover in
 *      order: node-a holds, then node-b holds with a newer token, node-a as
 *      the previous holder; krabka_watch_next_async delivers through a queue.
 */
#include <inttypes.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "krabka_coord.h"

#define CHECK_NAME "events"
#include "check.h"

static const char *bootstrap, *topic;
static char role[128], role2[128];

static int64_t now_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static void sleep_ms(long ms) {
    struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
    nanosleep(&ts, NULL);
}

/* Lines received by the log callback (called on a library thread). */
static pthread_mutex_t log_mu = PTHREAD_MUTEX_INITIALIZER;
static char log_text[1 << 16];
static size_t log_used;
static int log_calls;

static void on_log(void *opaque, krabka_log_level_t level, const char *line) {
    pthread_mutex_lock(&log_mu);
    log_calls += opaque == (void *)&log_calls;
    int n = snprintf(log_text + log_used, sizeof log_text - log_used, "%d %s\n", (int)level, line);
    if (n > 0 && log_used + (size_t)n < sizeof log_text)
        log_used += (size_t)n;
    pthread_mutex_unlock(&log_mu);
}

static krabka_conf_t *new_conf(const char *id) {
    krabka_conf_t *conf = krabka_conf_new();
    OK(krabka_conf_set(conf, "bootstrap.servers", bootstrap, ES));
    OK(krabka_conf_set(conf, "client.id", id, ES));
    OK(krabka_conf_set(conf, "krabka.lease.ms", "6000", ES));
    OK(krabka_conf_set(conf, "krabka.renew.interval.ms", "2000", ES));
    OK(krabka_conf_set(conf, "krabka.challenge.stagger.ms", "500", ES));
    OK(krabka_conf_set(conf, "krabka.poll.interval.ms", "200", ES));
    OK(krabka_conf_set(conf, "request.timeout.ms", "15000", ES));
    return conf;
}

static krabka_client_t *client_from(krabka_conf_t *conf) {
    krabka_client_t *c = NULL;
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

static krabka_err_t dispatch(krabka_leadership_t *l, char *es, size_t es_size) {
    krabka_message_t m = KRABKA_MESSAGE_INIT;
    m.topic = topic;
    m.value = (const uint8_t *)"cmd";
    m.value_len = 3;
    return krabka_leadership_produce(l, &m, 1, 10000, NULL, es, es_size);
}

/* Waits in poll(2) on the queue's fd for the next event (at most 60 s;
 * NULL if none came). */
static krabka_event_t *next_event(krabka_queue_t *q) {
    krabka_event_t *ev = NULL;
    int fd = -1;
    OK(krabka_queue_fd(q, &fd));
    for (int i = 0; i < 600; i++) {
        OK(krabka_queue_poll(q, &ev));
        if (ev)
            return ev;
        struct pollfd p = {fd, POLLIN, 0};
        poll(&p, 1, 100);
    }
    return NULL;
}

/* An event's type, tag and error (its reason into es); -1 / 0 / INVALID_HANDLE for a NULL event. */
static int ev_type(const krabka_event_t *ev) {
    krabka_event_type_t t;
    return krabka_event_type(ev, &t) == KRABKA_OK ? (int)t : -1;
}

static uint64_t ev_tag(const krabka_event_t *ev) {
    uint64_t tag = 0;
    return krabka_event_tag(ev, &tag) == KRABKA_OK ? tag : 0;
}

static krabka_err_t ev_err(const krabka_event_t *ev, char *es, size_t es_size) {
    krabka_err_t code = KRABKA_ERR_INVALID_HANDLE;
    if (es_size)
        es[0] = '\0';
    krabka_event_error(ev, &code, es, es_size);
    return code;
}

static krabka_leadership_state_t ev_state(const krabka_event_t *ev) {
    krabka_leadership_state_t st = (krabka_leadership_state_t)-1;
    krabka_event_state(ev, &st, NULL, 0);
    return st;
}

static krabka_leadership_t *ev_leadership(krabka_event_t *ev) {
    krabka_leadership_t *l = NULL;
    krabka_event_take_leadership(ev, &l, NULL, 0);
    return l;
}

/* The holder (or "") and the kind of a watch event. */
static const char *we_holder(const krabka_watch_event_t *we, int *has) {
    static char name[KRABKA_NAME_BUF];
    size_t n = 0;
    *has = -1;
    name[0] = '\0';
    OK(krabka_watch_event_holder(we, has, name, sizeof name, &n));
    return name;
}

static const char *we_prev_holder(const krabka_watch_event_t *we, int *has) {
    static char name[KRABKA_NAME_BUF];
    size_t n = 0;
    *has = -1;
    name[0] = '\0';
    OK(krabka_watch_event_prev_holder(we, has, name, sizeof name, &n));
    return name;
}

static krabka_watch_event_kind_t we_kind(const krabka_watch_event_t *we) {
    krabka_watch_event_kind_t k = (krabka_watch_event_kind_t)-1;
    OK(krabka_watch_event_kind(we, &k));
    return k;
}

static int readable(int fd) {
    struct pollfd p = {fd, POLLIN, 0};
    return poll(&p, 1, 0) == 1 && (p.revents & POLLIN);
}

struct writer {
    krabka_leadership_t *l;
    krabka_err_t err;
    char errstr[512];
};

static void *late_write(void *arg) {
    struct writer *w = arg;
    sleep_ms(200);
    w->err = dispatch(w->l, w->errstr, sizeof w->errstr);
    return NULL;
}

static void *late_resign(void *arg) {
    struct writer *w = arg;
    sleep_ms(200);
    w->err = krabka_leadership_resign(w->l, 10000, w->errstr, sizeof w->errstr);
    return NULL;
}

/* The JSON has balanced braces and brackets outside strings. */
static int json_balanced(const char *s) {
    int depth = 0, in_str = 0;
    for (; *s; s++) {
        if (in_str) {
            if (*s == '\\' && s[1])
                s++;
            else if (*s == '"')
                in_str = 0;
        } else if (*s == '"') {
            in_str = 1;
        } else if (*s == '{' || *s == '[') {
            depth++;
        } else if (*s == '}' || *s == ']') {
            if (--depth < 0)
                return 0;
        }
    }
    return depth == 0 && !in_str;
}

int main(void) {
    bootstrap = getenv("KRABKA_BOOTSTRAP");
    topic = getenv("KRABKA_C_TOPIC");
    if (!bootstrap || !*bootstrap || !topic || !*topic) {
        fprintf(stderr, "events: set KRABKA_BOOTSTRAP and KRABKA_C_TOPIC; `make capi-events` does both\n");
        return 2;
    }
    snprintf(role, sizeof role, "capi-events-%" PRId64, now_ms());
    snprintf(role2, sizeof role2, "capi-events-2-%" PRId64, now_ms());

    krabka_conf_t *confa = new_conf("events-a");
    /* info, so that the win (an info line) is logged too: the default level
     * is warn (a test of that default is in core/coord/stats_test.go). */
    OK(krabka_conf_set(confa, "krabka.log.level", "info", ES));
    OK(krabka_conf_set_log_cb(confa, on_log, &log_calls));
    krabka_client_t *ca = client_from(confa), *cb = client_from(new_conf("events-b"));
    krabka_queue_t *q = NULL;
    OK(krabka_queue_new(&q));
    int qfd = -1, fa = -1, fa2 = -1;
    OK(krabka_queue_fd(q, &qfd));
    CHECK(!readable(qfd), "empty queue's fd is readable");

    /* 1. */
    krabka_leadership_t *la = NULL;
    OK(krabka_client_acquire(ca, role, KRABKA_NTS, "node-a", KRABKA_NTS, 30000, &la, ES));
    krabka_token_t ta = token_of(la);
    krabka_leadership_state_t st = (krabka_leadership_state_t)-1;
    CHECK(krabka_leadership_wait(la, 100, &st) == KRABKA_ERR_TIMEOUT && st == KRABKA_LEADERSHIP_ACTIVE,
          "wait on an active leadership: state %d", st);
    OK(krabka_leadership_event_fd(la, &fa));
    OK(krabka_leadership_event_fd(la, &fa2));
    CHECK(fa >= 0 && fa == fa2, "event fd %d then %d", fa, fa2);
    CHECK(!readable(fa), "event fd readable while ACTIVE");
    krabka_err_t code = KRABKA_ERR_INTERNAL;
    OK(krabka_leadership_end_error(la, &code, errstr, sizeof errstr));
    CHECK(code == KRABKA_OK, "end_error while active: %s", krabka_err2name(code));
    OK(krabka_leadership_ended_async(la, q, 7));

    /* 2. */
    int64_t t0 = now_ms();
    OK(krabka_client_acquire_async(cb, role, KRABKA_NTS, "node-b", KRABKA_NTS, 60000, q, 1, ES));
    /* node-a's ENDED (tag 7) may come first: its view of the log can show
     * node-b's lease before node-b's acquire returns. */
    krabka_event_t *ev = next_event(q), *ended = NULL;
    char ended_errstr[512] = "", ev_errstr[512];
    if (ev_type(ev) == KRABKA_EVENT_ENDED) {
        ended = ev;
        ev = next_event(q);
    }
    krabka_err_t ev_code = ev_err(ev, ev_errstr, sizeof ev_errstr);
    krabka_leadership_t *lb = ev_leadership(ev);
    CHECK(ev_type(ev) == KRABKA_EVENT_ACQUIRE && ev_tag(ev) == 1 && ev_code == KRABKA_OK && lb != NULL,
          "acquire event type %d tag %" PRIu64 " err %s (%s)", ev_type(ev), ev_tag(ev), krabka_err2name(ev_code),
          ev_errstr);
    CHECK(now_ms() - t0 >= 3000, "node-b won after %" PRId64 " ms, before node-a's lease ran out", now_ms() - t0);
    OK(krabka_event_destroy(ev));
    if (!lb)
        return 1;
    krabka_token_t tb = token_of(lb);
    CHECK(krabka_token_supersedes(tb, ta), "node-b's token supersedes node-a's");

    /* 3. The FENCED checks below accept either origin: the live view's
     * ("the log shows a lease of node-b with token ..., which supersedes
     * this leadership's token ...", the usual one: node-a's view follows the
     * partition node-b wrote its lease to, and may have ended the leadership
     * already, see the ENDED event above) or the broker's refusal of the
     * late write (PRODUCER_FENCED or INVALID_PRODUCER_EPOCH). Both contain
     * "fenced". */
    pthread_t th;
    struct writer w = {la, KRABKA_OK, {0}};
    pthread_create(&th, NULL, late_write, &w);
    struct pollfd p = {fa, POLLIN, 0};
    int n = poll(&p, 1, 60000);
    CHECK(n == 1 && (p.revents & POLLIN), "poll on node-a's event fd: %d revents %d", n, p.revents);
    pthread_join(th, NULL);
    CHECK(w.err == KRABKA_ERR_FENCED, "node-a's write: %s (%s)", krabka_err2name(w.err), w.errstr);
    CHECK(state_of(la) == KRABKA_LEADERSHIP_FENCED, "state after the wake-up %d", state_of(la));
    OK(krabka_leadership_end_error(la, &code, errstr, sizeof errstr));
    CHECK(code == KRABKA_ERR_FENCED && strstr(errstr, "fenced") != NULL, "end_error %s: %s", krabka_err2name(code), errstr);
    CHECK(krabka_leadership_wait(la, KRABKA_TIMEOUT_DEFAULT, &st) == KRABKA_OK && st == KRABKA_LEADERSHIP_FENCED,
          "wait on a fenced leadership: state %d", st);
    uint64_t v = 0;
    CHECK(read(fa, &v, sizeof v) == (ssize_t)sizeof v && v >= 1, "reading the event fd resets it");
    CHECK(!readable(fa), "event fd still readable after the read");
    if (ended == NULL)
        ended = next_event(q);
    krabka_err_t ended_code = ev_err(ended, ended_errstr, sizeof ended_errstr);
    CHECK(ev_type(ended) == KRABKA_EVENT_ENDED && ev_tag(ended) == 7 && ev_state(ended) == KRABKA_LEADERSHIP_FENCED &&
              ended_code == KRABKA_ERR_FENCED && strstr(ended_errstr, "fenced") != NULL,
          "ended event type %d tag %" PRIu64 " state %d err %s", ev_type(ended), ev_tag(ended), ev_state(ended),
          krabka_err2name(ended_code));
    OK(krabka_event_destroy(ended));
    OK(krabka_queue_poll(q, &ev));
    CHECK(ev == NULL && !readable(qfd), "queue empty and its fd clear: type %d", ev_type(ev));

    /* 4. */
    struct writer r = {lb, KRABKA_OK, {0}};
    pthread_create(&th, NULL, late_resign, &r);
    CHECK(krabka_leadership_wait(lb, KRABKA_TIMEOUT_DEFAULT, &st) == KRABKA_OK && st == KRABKA_LEADERSHIP_RESIGNED,
          "wait across a resign: state %d", st);
    pthread_join(th, NULL);
    CHECK(r.err == KRABKA_OK, "resign: %s (%s)", krabka_err2name(r.err), r.errstr);

    /* 5. */
    krabka_leadership_t *l2 = NULL;
    OK(krabka_client_acquire(cb, role2, KRABKA_NTS, "node-b", KRABKA_NTS, 30000, &l2, ES));
    krabka_client_t *cc = client_from(new_conf("events-c"));
    OK(krabka_client_acquire_async(cc, role2, KRABKA_NTS, "node-c", KRABKA_NTS, KRABKA_TIMEOUT_DEFAULT, q, 2, ES));
    sleep_ms(300);
    OK(krabka_queue_poll(q, &ev));
    CHECK(ev == NULL, "node-c's acquire completed while the role is held: type %d", ev_type(ev));
    OK(krabka_client_destroy(cc));
    ev = next_event(q);
    ev_code = ev_err(ev, ev_errstr, sizeof ev_errstr);
    CHECK(ev_type(ev) == KRABKA_EVENT_ACQUIRE && ev_tag(ev) == 2 && ev_code == KRABKA_ERR_CLOSED && ev_leadership(ev) == NULL,
          "acquire after destroy: type %d err %s", ev_type(ev), krabka_err2name(ev_code));
    OK(krabka_event_destroy(ev));

    /* 7. (before destroying the clients) */
    char *json = NULL;
    size_t len = 0;
    OK(krabka_client_stats_json(ca, &json, &len));
    CHECK(json && strlen(json) == len && json_balanced(json), "stats json %s", json ? json : "(null)");
    CHECK(json && strstr(json, "\"acquisitions\":1") && strstr(json, "\"ends_fenced\":1") &&
              strstr(json, "\"client_id\":\"events-a\"") &&
              strstr(json, role) && strstr(json, "\"is_leader\":false"),
          "node-a's stats %s", json ? json : "(null)");
    krabka_free(json);
    OK(krabka_client_stats_json(cb, &json, NULL));
    CHECK(json && json_balanced(json) && strstr(json, "\"acquisitions\":2") && strstr(json, "\"handoffs\":1") &&
              strstr(json, "\"ends_resigned\":1") && strstr(json, "\"leaders\":1"),
          "node-b's stats %s", json ? json : "(null)");
    krabka_free(json);
    krabka_free(NULL);

    /* 6. Lines are delivered by then: destroy returns after the last call. */
    OK(krabka_leadership_destroy(la));
    OK(krabka_client_destroy(ca));
    pthread_mutex_lock(&log_mu);
    int calls = log_calls;
    int fenced = strstr(log_text, "4 krabka: leadership ended client=events-a") != NULL && strstr(log_text, "state=FENCED") != NULL;
    int won = strstr(log_text, "6 krabka: role won client=events-a") != NULL;
    pthread_mutex_unlock(&log_mu);
    CHECK(calls >= 2 && fenced && won, "log callback: %d calls, fenced %d, won %d:\n%s", calls, fenced, won, log_text);
    sleep_ms(50);
    CHECK(log_calls == calls, "the log callback ran after krabka_client_destroy returned");

    krabka_queue_t *lq = NULL;
    OK(krabka_queue_new(&lq));
    krabka_conf_t *confd = new_conf("events-d");
    OK(krabka_conf_set(confd, "krabka.log.level", "debug", ES));
    OK(krabka_conf_set_log_queue(confd, lq, 99));
    krabka_client_t *cd = client_from(confd);
    krabka_leadership_t *ld = NULL;
    char role3[160];
    snprintf(role3, sizeof role3, "%s-d", role);
    OK(krabka_client_acquire(cd, role3, KRABKA_NTS, "node-d", KRABKA_NTS, 30000, &ld, ES));
    int registered = 0, won_d = 0;
    for (;;) {
        OK(krabka_queue_poll(lq, &ev));
        if (ev == NULL)
            break;
        krabka_log_level_t level = (krabka_log_level_t)0;
        const char *line = NULL;
        OK(krabka_event_log(ev, &level, &line, ES));
        CHECK(ev_type(ev) == KRABKA_EVENT_LOG && ev_tag(ev) == 99 && line != NULL, "log queue event type %d tag %" PRIu64,
              ev_type(ev), ev_tag(ev));
        if (level == KRABKA_LOG_DEBUG && strstr(line, "krabka: registered") == line)
            registered = 1;
        if (level == KRABKA_LOG_INFO && strstr(line, "krabka: role won") == line)
            won_d = 1;
        OK(krabka_event_destroy(ev));
    }
    CHECK(registered && won_d, "log queue: registered %d, won %d", registered, won_d);
    OK(krabka_leadership_destroy(ld));
    OK(krabka_client_destroy(cd));
    OK(krabka_queue_destroy(lq));

    /* 8. */
    char role4[160];
    snprintf(role4, sizeof role4, "%s-watch", role);
    krabka_client_t *cw = client_from(new_conf("events-w")), *c1 = client_from(new_conf("events-1")),
                    *c2 = client_from(new_conf("events-2"));
    krabka_watch_t *wt = NULL;
    OK(krabka_client_watch(cw, role4, KRABKA_NTS, 0, 15000, &wt, ES));
    int wfd = -1;
    OK(krabka_watch_event_fd(wt, &wfd));
    krabka_watch_event_t *we = (krabka_watch_event_t *)&wfd;
    CHECK(krabka_watch_next(wt, 200, &we, ES) == KRABKA_ERR_TIMEOUT && we == NULL, "an event on a role nobody touched");
    krabka_leadership_t *w1 = NULL, *w2 = NULL;
    OK(krabka_client_acquire(c1, role4, KRABKA_NTS, "node-a", KRABKA_NTS, 30000, &w1, ES));
    krabka_token_t wt1 = token_of(w1);
    OK(krabka_leadership_destroy(w1)); /* no resign: node-b waits out the lease */
    OK(krabka_client_acquire_async(c2, role4, KRABKA_NTS, "node-b", KRABKA_NTS, 60000, q, 3, ES));
    int holders = 0, order_ok = 1, frees = 0;
    krabka_token_t wt2 = {-1, -1};
    for (int i = 0; i < 600 && holders < 2; i++) {
        struct pollfd wp = {wfd, POLLIN, 0};
        if (poll(&wp, 1, 100) != 1)
            continue;
        while (krabka_watch_next(wt, 1, &we, ES) == KRABKA_OK) {
            krabka_watch_event_kind_t kind = we_kind(we);
            int has = -1, has_prev = -1, has_lease = -1;
            krabka_token_t tok, prev;
            krabka_lease_t lease;
            int64_t off = -2, at = 0;
            size_t count = 0;
            OK(krabka_watch_event_token(we, &tok));
            OK(krabka_watch_event_prev_token(we, &prev));
            OK(krabka_watch_event_lease(we, &has_lease, &lease));
            OK(krabka_watch_event_roster_count(we, &count));
            OK(krabka_watch_event_offset(we, &off));
            OK(krabka_watch_event_at(we, &at));
            if (kind == KRABKA_WATCH_ROLE_FREE)
                frees++;
            if (kind == KRABKA_WATCH_HOLDER_CHANGED) {
                holders++;
                const char *holder = we_holder(we, &has);
                int is_a = strcmp(holder, "node-a") == 0, is_b = strcmp(holder, "node-b") == 0;
                const char *prev_holder = we_prev_holder(we, &has_prev);
                if (holders == 1)
                    order_ok &= has == 1 && is_a && has_prev == 0 && prev_holder[0] == '\0' &&
                                krabka_token_compare(tok, wt1) == 0 && off >= 0 && at > 0;
                if (holders == 2) {
                    krabka_roster_entry_t last;
                    memset(&last, 0, sizeof last);
                    if (count >= 1)
                        OK(krabka_watch_event_roster_entry(we, count - 1, &last));
                    order_ok &= has == 1 && is_b && has_prev == 1 && strcmp(prev_holder, "node-a") == 0 &&
                                krabka_token_compare(prev, wt1) == 0 && krabka_token_supersedes(tok, wt1) &&
                                has_lease == 1 && krabka_token_compare(lease.token, tok) == 0 && count >= 1 &&
                                strcmp(last.member, "node-b") == 0 &&
                                krabka_watch_event_roster_entry(we, count, &last) == KRABKA_ERR_INVALID_ARG;
                    wt2 = tok;
                }
            }
            OK(krabka_watch_event_destroy(we));
        }
    }
    CHECK(holders == 2 && order_ok && frees >= 1, "watch: %d holder changes, order ok %d, %d role-free", holders, order_ok,
          frees);
    ev = next_event(q);
    ev_code = ev_err(ev, ev_errstr, sizeof ev_errstr);
    CHECK(ev_type(ev) == KRABKA_EVENT_ACQUIRE && ev_tag(ev) == 3 && ev_code == KRABKA_OK, "node-b's acquire: %s",
          krabka_err2name(ev_code));
    w2 = ev_leadership(ev);
    OK(krabka_event_destroy(ev));
    CHECK(w2 && krabka_token_compare(token_of(w2), wt2) == 0, "the watch saw node-b's token");
    OK(krabka_watch_next_async(wt, 30000, q, 4)); /* resign: the next change comes through the queue */
    OK(krabka_leadership_resign(w2, 10000, ES));
    ev = next_event(q);
    ev_code = ev_err(ev, ev_errstr, sizeof ev_errstr);
    we = NULL;
    OK(krabka_event_take_watch_event(ev, &we, ES));
    CHECK(ev_type(ev) == KRABKA_EVENT_WATCH && ev_tag(ev) == 4 && ev_code == KRABKA_OK && we != NULL,
          "watch event through the queue: type %d err %s", ev_type(ev), krabka_err2name(ev_code));
    OK(krabka_event_destroy(ev));
    OK(krabka_watch_event_destroy(we));
    OK(krabka_leadership_destroy(w2));
    OK(krabka_client_destroy(c1));
    OK(krabka_client_destroy(c2));
    OK(krabka_client_destroy(cw)); /* ends the watch: CLOSED once drained */
    while (krabka_watch_next(wt, 1000, &we, ES) == KRABKA_OK)
        OK(krabka_watch_event_destroy(we));
    CHECK(krabka_watch_next(wt, 1000, &we, ES) == KRABKA_ERR_CLOSED, "watch after its client was destroyed");
    OK(krabka_watch_destroy(wt));
    CHECK(krabka_watch_destroy(wt) == KRABKA_ERR_INVALID_HANDLE, "double destroy");

    OK(krabka_leadership_destroy(lb));
    OK(krabka_leadership_destroy(l2));
    OK(krabka_client_destroy(cb));
    OK(krabka_queue_destroy(q));
    printf("events: %d checks, %d failures\n", checks, failures);
    return failures ? 1 : 0;
}
