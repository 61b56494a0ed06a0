/* The elector through the C ABI (krabka_elector_*, KRABKA_EVENT_TERM) and
 * the lease events of a plain leadership (krabka_leadership_events_async,
 * KRABKA_EVENT_LEASE), on $KRABKA_BOOTSTRAP (transaction.version 2) and
 * $KRABKA_BOOTSTRAP_TV1. `make capi-elect` runs it. Per cluster, on a role
 * of its own, two electors in one process sharing one queue (tags 1 and 2):
 *   1. A wins (STARTED, term 1: token, holder, deadline, the leadership
 *      taken from the event has the event's token); B stands by; A healthy.
 *   2. Failover by destroy: krabka_elector_destroy(A) resigns; its STOPPED
 *      (RESIGNED) is in the queue when destroy returns; B STARTED; the
 *      handle taken from A's STARTED refuses a renew afterwards.
 *   3. Failover by an abruptly destroyed client: A' (a new elector on A's
 *      client) stands by; B's client is destroyed: B STOPPED (CLOSED), A'
 *      STARTED once the lease ran out.
 *   4. Re-campaign after a loss, and the release rule: A' resigns through
 *      its taken leadership (STOPPED, RESIGNED) and B' (a new client)
 *      takes over; while A's STOPPED event is kept, A' stays out of the
 *      roster (describe); once destroyed, A' registers again and wins term
 *      2 when B' resigns (destroy).
 *   5. Eligibility: set_eligible(0) on the holder: STOPPED (RESIGNED), out
 *      of the roster, the standby STARTED; set_eligible(1): back at the
 *      tail of the roster (after the new holder).
 *   6. A queue destroyed under a running elector: destroy still returns
 *      (the STOPPED that cannot be posted releases its term).
 *   7. AT_RISK on a plain leadership without a fault proxy: no background
 *      renewal, so no renewal succeeds after the lease falls due: AT_RISK
 *      (deadline = the lease's), a renew: RECOVERED (the new deadline), a
 *      resign: ENDED (RESIGNED). The elector always renews in the
 *      background, so its TERM AT_RISK needs a cut link: left to the Go
 *      tests (core/kafka TestElectorFailovers, pause).
 *   8. Misuse: NULL, destroyed and foreign handles, bad flags, a NULL out,
 *      accessors of the wrong event type (errstr names both types), a
 *      holder buffer too small.
 * From the event log of every elector: STARTED and STOPPED alternate,
 * start with STARTED, carry the same term number, and terms count 1, 2, ...
 */
#include <inttypes.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "krabka_coord.h"

#define CHECK_NAME "elect"
#include "check.h"

/* How long a wait for an event may take before the test fails (not a
 * timing check: the events come in seconds). */
#define WAIT_MS 60000

static void sleep_ms(long ms) {
    struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
    nanosleep(&ts, NULL);
}

/* ---- the event log: every TERM event seen, per elector tag ---- */

#define MAXLOG 256
static struct {
    uint64_t tag, term;
    krabka_term_event_kind_t kind;
} elog[MAXLOG];
static int nlog;

static krabka_event_t *stash[64]; /* events taken before they were asked for */
static int nstash;

static uint64_t tag_of(const krabka_event_t *ev) {
    uint64_t t = 0;
    OK(krabka_event_tag(ev, &t));
    return t;
}

static krabka_event_type_t type_of(const krabka_event_t *ev) {
    krabka_event_type_t t = KRABKA_EVENT_NONE;
    OK(krabka_event_type(ev, &t));
    return t;
}

static krabka_term_event_kind_t kind_of(const krabka_event_t *ev) {
    krabka_term_event_kind_t k = 0;
    OK(krabka_event_term_kind(ev, &k, ES));
    return k;
}

static uint64_t term_of(const krabka_event_t *ev) {
    uint64_t n = 0;
    OK(krabka_event_term(ev, &n, ES));
    return n;
}

/* One event off q (waiting on its fd); TERM events are logged. */
static krabka_event_t *next_event(krabka_queue_t *q) {
    int fd = -1;
    OK(krabka_queue_fd(q, &fd));
    for (int waited = 0; waited < WAIT_MS; waited += 100) {
        krabka_event_t *ev = NULL;
        OK(krabka_queue_poll(q, &ev));
        if (ev) {
            if (type_of(ev) == KRABKA_EVENT_TERM && nlog < MAXLOG) {
                elog[nlog].tag = tag_of(ev);
                elog[nlog].kind = kind_of(ev);
                elog[nlog].term = term_of(ev);
                nlog++;
            }
            return ev;
        }
        struct pollfd p = {fd, POLLIN, 0};
        poll(&p, 1, 100);
    }
    return NULL;
}

/* Waits for the next TERM event of tag with kind (NEW_LEADER events are
 * destroyed; other events are stashed for later waits). */
static krabka_event_t *wait_term(krabka_queue_t *q, uint64_t tag, krabka_term_event_kind_t kind) {
    for (int i = 0; i < nstash; i++) {
        krabka_event_t *ev = stash[i];
        if (tag_of(ev) == tag && kind_of(ev) == kind) {
            memmove(&stash[i], &stash[i + 1], (size_t)(nstash - i - 1) * sizeof stash[0]);
            nstash--;
            return ev;
        }
    }
    for (;;) {
        krabka_event_t *ev = next_event(q);
        if (!ev) {
            CHECK(0, "no TERM event of tag %" PRIu64 " kind %d within %d ms", tag, (int)kind, WAIT_MS);
            printf(CHECK_NAME ": stopping\n");
            exit(1);
        }
        if (type_of(ev) != KRABKA_EVENT_TERM) {
            CHECK(0, "unexpected event type %d", (int)type_of(ev));
            OK(krabka_event_destroy(ev));
            continue;
        }
        krabka_term_event_kind_t k = kind_of(ev);
        if (tag_of(ev) == tag && k == kind)
            return ev;
        if (k == KRABKA_TERM_NEW_LEADER) {
            OK(krabka_event_destroy(ev));
            continue;
        }
        if (nstash == (int)(sizeof stash / sizeof stash[0])) {
            CHECK(0, "too many events stashed");
            exit(1);
        }
        stash[nstash++] = ev;
    }
}

/* Whether an event of tag and kind is already in the stash or the queue
 * (without waiting). */
static int pending_term(krabka_queue_t *q, uint64_t tag, krabka_term_event_kind_t kind) {
    krabka_event_t *ev = NULL;
    for (;;) {
        OK(krabka_queue_poll(q, &ev));
        if (!ev)
            break;
        if (type_of(ev) == KRABKA_EVENT_TERM) {
            if (nlog < MAXLOG) {
                elog[nlog].tag = tag_of(ev);
                elog[nlog].kind = kind_of(ev);
                elog[nlog].term = term_of(ev);
                nlog++;
            }
            if (kind_of(ev) != KRABKA_TERM_NEW_LEADER && nstash < (int)(sizeof stash / sizeof stash[0])) {
                stash[nstash++] = ev;
                continue;
            }
        }
        OK(krabka_event_destroy(ev));
    }
    for (int i = 0; i < nstash; i++)
        if (tag_of(stash[i]) == tag && kind_of(stash[i]) == kind)
            return 1;
    return 0;
}

static krabka_stop_reason_t reason_of(const krabka_event_t *ev) {
    krabka_stop_reason_t r = KRABKA_STOP_NONE;
    OK(krabka_event_stop_reason(ev, &r, ES));
    return r;
}

static const char *holder_of(const krabka_event_t *ev) {
    static char name[KRABKA_NAME_BUF];
    size_t n = 0;
    OK(krabka_event_holder(ev, name, sizeof name, &n, ES));
    CHECK(n == strlen(name), "holder length %zu for '%s'", n, name);
    return name;
}

/* ---- clients and describe ---- */

static krabka_client_t *new_client(const char *bootstrap, const char *id, int background) {
    krabka_conf_t *conf = krabka_conf_new();
    krabka_client_t *c = NULL;
    OK(krabka_conf_set(conf, "bootstrap.servers", bootstrap, ES));
    OK(krabka_conf_set(conf, "client.id", id, ES));
    OK(krabka_conf_set(conf, "krabka.lease.ms", "2000", ES));
    OK(krabka_conf_set(conf, "krabka.renew.interval.ms", "500", ES));
    OK(krabka_conf_set(conf, "krabka.challenge.stagger.ms", "500", ES));
    OK(krabka_conf_set(conf, "krabka.poll.interval.ms", "200", ES));
    OK(krabka_conf_set(conf, "krabka.renew.background", background ? "true" : "false", ES));
    OK(krabka_conf_set(conf, "request.timeout.ms", "15000", ES));
    OK(krabka_client_new(conf, &c, ES));
    OK(krabka_conf_destroy(conf));
    return c;
}

/* The roster of role as "m1,m2,..." (holder first). */
static const char *roster(krabka_client_t *c, const char *role) {
    static char out[1024];
    krabka_status_t *st = NULL;
    OK(krabka_client_describe(c, role, KRABKA_NTS, 15000, &st, ES));
    size_t n = 0;
    OK(krabka_status_roster_count(st, &n));
    out[0] = '\0';
    for (size_t i = 0; i < n; i++) {
        krabka_roster_entry_t e;
        OK(krabka_status_roster_entry(st, i, &e));
        if (i)
            strncat(out, ",", sizeof out - strlen(out) - 1);
        strncat(out, e.member, sizeof out - strlen(out) - 1);
    }
    OK(krabka_status_destroy(st));
    return out;
}

static int in_list(const char *list, const char *member) {
    char buf[1024];
    snprintf(buf, sizeof buf, "%s", list);
    for (char *s = strtok(buf, ","); s; s = strtok(NULL, ","))
        if (strcmp(s, member) == 0)
            return 1;
    return 0;
}

/* Waits (bounded) until member's presence in role's roster is want. */
static const char *wait_roster(krabka_client_t *c, const char *role, const char *member, int want) {
    const char *r = "";
    for (int i = 0; i < WAIT_MS / 100; i++) {
        r = roster(c, role);
        if (in_list(r, member) == want)
            return r;
        sleep_ms(100);
    }
    CHECK(0, "%s %s the roster of %s within %d ms (roster %s)", member, want ? "never joined" : "never left", role, WAIT_MS, r);
    return r;
}

static krabka_elector_t *new_elector(krabka_client_t *c, const char *role, const char *member, int flags,
                                     krabka_queue_t *q, uint64_t tag) {
    krabka_elector_t *e = NULL;
    OK(krabka_elector_new(c, role, KRABKA_NTS, member, KRABKA_NTS, flags, q, tag, &e, ES));
    CHECK(e != NULL, "elector_new gave NULL");
    return e;
}

/* STARTED of tag: its fields checked; the leadership taken (the caller
 * destroys it after the term's STOPPED). */
static krabka_leadership_t *started(krabka_queue_t *q, uint64_t tag, const char *member, uint64_t term,
                                    krabka_event_t **evp) {
    krabka_event_t *ev = wait_term(q, tag, KRABKA_TERM_STARTED);
    krabka_token_t t = {-1, -1};
    int64_t deadline = 0;
    krabka_err_t code = KRABKA_ERR_INTERNAL;
    OK(krabka_event_token(ev, &t, ES));
    OK(krabka_event_deadline(ev, &deadline, ES));
    OK(krabka_event_error(ev, &code, ES));
    CHECK(code == KRABKA_OK, "STARTED carries %s", krabka_err2name(code));
    CHECK(term_of(ev) == term, "%s: term %" PRIu64 ", want %" PRIu64, member, term_of(ev), term);
    CHECK(strcmp(holder_of(ev), member) == 0, "STARTED holder %s, want %s", holder_of(ev), member);
    CHECK(t.producer_id >= 0 && deadline > 0, "STARTED token %lld/%d deadline %lld", (long long)t.producer_id,
          (int)t.producer_epoch, (long long)deadline);
    CHECK(reason_of(ev) == KRABKA_STOP_NONE, "STARTED stop reason %d", (int)reason_of(ev));
    krabka_leadership_t *l = NULL, *again = (krabka_leadership_t *)1;
    OK(krabka_event_take_leadership(ev, &l, ES));
    OK(krabka_event_take_leadership(ev, &again, ES));
    CHECK(l != NULL && again == NULL, "take_leadership %p, again %p", (void *)l, (void *)again);
    krabka_token_t lt = {-2, -2};
    OK(krabka_leadership_token(l, &lt));
    CHECK(krabka_token_compare(lt, t) == 0, "the taken leadership's token differs from the event's");
    if (evp)
        *evp = ev;
    else
        OK(krabka_event_destroy(ev));
    return l;
}

/* STOPPED of tag with reason; the event is returned (destroying it
 * releases the term). */
static krabka_event_t *stopped(krabka_queue_t *q, uint64_t tag, uint64_t term, krabka_stop_reason_t want) {
    krabka_event_t *ev = wait_term(q, tag, KRABKA_TERM_STOPPED);
    krabka_err_t code = KRABKA_OK;
    char why[256];
    OK(krabka_event_error(ev, &code, why, sizeof why));
    CHECK(term_of(ev) == term, "STOPPED term %" PRIu64 ", want %" PRIu64, term_of(ev), term);
    CHECK(reason_of(ev) == want, "STOPPED reason %d, want %d (%s: %s)", (int)reason_of(ev), (int)want,
          krabka_err2name(code), why);
    CHECK(code != KRABKA_OK, "STOPPED without an error (reason %d)", (int)reason_of(ev));
    krabka_leadership_t *l = (krabka_leadership_t *)1;
    OK(krabka_event_take_leadership(ev, &l, ES));
    CHECK(l == NULL, "STOPPED carries a leadership");
    return ev;
}

/* ---- the scenario ---- */

static void run_cluster(const char *tv, const char *bootstrap) {
    char role[64], ma[64], mb[64], idb[64];
    snprintf(role, sizeof role, "c-elect-%s-%ld", tv, (long)getpid());
    snprintf(ma, sizeof ma, "a-%s", tv);
    snprintf(mb, sizeof mb, "b-%s", tv);
    int first_log = nlog;
    krabka_queue_t *q = NULL;
    OK(krabka_queue_new(&q));
    krabka_client_t *ca = new_client(bootstrap, "elect-a", 0), *cb = new_client(bootstrap, "elect-b", 0);

    /* 1. A wins, B stands by. */
    krabka_elector_t *ea = new_elector(ca, role, ma, 0, q, 1);
    krabka_leadership_t *la = started(q, 1, ma, 1, NULL);
    krabka_elector_t *eb = new_elector(cb, role, mb, 0, q, 2);
    wait_roster(ca, role, mb, 1);
    int healthy = -1;
    char reason[256] = "x";
    OK(krabka_elector_healthy(ea, &healthy, reason, sizeof reason));
    CHECK(healthy == 1 && reason[0] == '\0', "%s: holder healthy %d (%s)", tv, healthy, reason);
    OK(krabka_elector_healthy(eb, &healthy, NULL, 0));
    CHECK(healthy == 1, "%s: standby healthy %d", tv, healthy);
    krabka_elector_state_t st = KRABKA_ELECTOR_NOT_STARTED;
    OK(krabka_elector_state(ea, &st));
    CHECK(st == KRABKA_ELECTOR_HOLDING, "%s: the holder's state %d", tv, (int)st);
    OK(krabka_elector_state(eb, &st));
    CHECK(st == KRABKA_ELECTOR_CAMPAIGNING, "%s: the standby's state %d", tv, (int)st);
    OK(krabka_leadership_renew(la, 15000, ES));

    /* 2. Failover by destroy: A resigns. */
    OK(krabka_elector_destroy(ea));
    CHECK(pending_term(q, 1, KRABKA_TERM_STOPPED), "%s: A's STOPPED not queued when destroy returned", tv);
    OK(krabka_event_destroy(stopped(q, 1, 1, KRABKA_STOP_RESIGNED)));
    krabka_leadership_t *lb = started(q, 2, mb, 1, NULL);
    CHECK(krabka_leadership_renew(la, 15000, ES) != KRABKA_OK, "%s: the resigned term's leadership renewed", tv);
    OK(krabka_leadership_destroy(la));
    {
        /* The loop's end is an event: the last of tag 1, OK (destroyed). */
        krabka_event_t *end = wait_term(q, 1, KRABKA_TERM_ELECTOR_STOPPED);
        krabka_err_t code = KRABKA_ERR_INTERNAL;
        OK(krabka_event_error(end, &code, NULL, 0));
        CHECK(code == KRABKA_OK, "%s: ELECTOR_STOPPED after destroy: %s", tv, krabka_err2name(code));
        OK(krabka_event_destroy(end));
    }
    CHECK(krabka_elector_state(ea, &st) == KRABKA_ERR_INVALID_HANDLE, "destroyed elector: state");
    CHECK(krabka_elector_healthy(ea, &healthy, NULL, 0) == KRABKA_ERR_INVALID_HANDLE, "destroyed elector: healthy");
    CHECK(krabka_elector_set_eligible(ea, 1, 0, ES) == KRABKA_ERR_INVALID_HANDLE, "destroyed elector: set_eligible");
    CHECK(krabka_elector_destroy(ea) == KRABKA_ERR_INVALID_HANDLE, "destroyed elector: destroy twice");

    /* 3. A' stands by; B's client destroyed abruptly. */
    ea = new_elector(ca, role, ma, 0, q, 3);
    wait_roster(ca, role, ma, 1);
    OK(krabka_client_destroy(cb));
    OK(krabka_event_destroy(stopped(q, 2, 1, KRABKA_STOP_CLOSED)));
    la = started(q, 3, ma, 1, NULL);
    {
        /* B's loop ended with its client: STOPPED as a state, and the
         * ELECTOR_STOPPED event says why (CLOSED). */
        krabka_event_t *end = wait_term(q, 2, KRABKA_TERM_ELECTOR_STOPPED);
        krabka_err_t code = KRABKA_OK;
        char why[256] = "";
        OK(krabka_event_error(end, &code, why, sizeof why));
        CHECK(code == KRABKA_ERR_CLOSED && why[0], "%s: ELECTOR_STOPPED with the client destroyed: %s (%s)", tv,
              krabka_err2name(code), why);
        OK(krabka_event_destroy(end));
        OK(krabka_elector_state(eb, &st));
        CHECK(st == KRABKA_ELECTOR_STOPPED, "%s: state after the loop ended: %d", tv, (int)st);
        OK(krabka_elector_healthy(eb, &healthy, NULL, 0));
        CHECK(healthy == 0, "%s: an ended elector is healthy", tv);
    }
    OK(krabka_elector_destroy(eb)); /* its loop ended with the client */
    OK(krabka_leadership_destroy(lb));

    /* 4. Re-campaign after a loss; the release rule. */
    snprintf(idb, sizeof idb, "elect-b2-%s", tv);
    cb = new_client(bootstrap, idb, 0);
    eb = new_elector(cb, role, mb, 0, q, 4);
    wait_roster(ca, role, mb, 1);
    OK(krabka_leadership_resign(la, 15000, ES)); /* the owner resigns the term: A' lost it */
    krabka_event_t *kept = stopped(q, 3, 1, KRABKA_STOP_RESIGNED);
    lb = started(q, 4, mb, 1, NULL);
    OK(krabka_leadership_destroy(la)); /* the term is over: the handle may go */
    /* The STOPPED is kept: A' must not campaign (not in the roster). */
    const char *r = roster(ca, role);
    CHECK(!in_list(r, ma), "%s: A' campaigned before its STOPPED was destroyed (roster %s)", tv, r);
    sleep_ms(1000);
    r = roster(ca, role);
    CHECK(!in_list(r, ma), "%s: A' campaigned before its STOPPED was destroyed (roster %s, 1 s later)", tv, r);
    OK(krabka_event_destroy(kept)); /* releases term 1 */
    wait_roster(ca, role, ma, 1);
    OK(krabka_elector_destroy(eb)); /* B' resigns */
    OK(krabka_event_destroy(stopped(q, 4, 1, KRABKA_STOP_RESIGNED)));
    la = started(q, 3, ma, 2, NULL); /* A' again: term 2 */
    OK(krabka_leadership_destroy(lb));

    /* 5. Eligibility: the holder withdraws and comes back at the tail. */
    eb = new_elector(cb, role, mb, 0, q, 5);
    wait_roster(ca, role, mb, 1);
    OK(krabka_elector_set_eligible(ea, 0, KRABKA_TIMEOUT_DEFAULT, ES));
    OK(krabka_event_destroy(stopped(q, 3, 2, KRABKA_STOP_RESIGNED)));
    lb = started(q, 5, mb, 1, NULL);
    r = wait_roster(ca, role, ma, 0);
    CHECK(strncmp(r, mb, strlen(mb)) == 0, "%s: roster after the withdrawal %s", tv, r);
    OK(krabka_elector_healthy(ea, &healthy, NULL, 0));
    CHECK(healthy == 1, "%s: a withdrawn elector is healthy (%d)", tv, healthy);
    OK(krabka_elector_set_eligible(ea, 1, 15000, ES));
    r = wait_roster(ca, role, ma, 1);
    {
        char want[200];
        snprintf(want, sizeof want, "%s,%s", mb, ma);
        CHECK(strcmp(r, want) == 0, "%s: roster after set_eligible(1) %s, want %s (the tail)", tv, r, want);
    }
    OK(krabka_leadership_destroy(la));

    /* 6. The queue destroyed under running electors: destroy returns. */
    OK(krabka_elector_destroy(eb)); /* resigns: ea takes over */
    OK(krabka_event_destroy(stopped(q, 5, 1, KRABKA_STOP_RESIGNED)));
    OK(krabka_leadership_destroy(lb));
    la = started(q, 3, ma, 3, NULL);
    OK(krabka_queue_destroy(q)); /* the STOPPED of ea's term 3 cannot be posted */
    OK(krabka_elector_destroy(ea));
    OK(krabka_leadership_destroy(la));
    for (int i = 0; i < nstash; i++)
        OK(krabka_event_destroy(stash[i]));
    nstash = 0;

    /* 7. AT_RISK / RECOVERED / ENDED on a plain leadership (no background
     * renewal: no renewal succeeds after the lease falls due). */
    OK(krabka_queue_new(&q));
    char prole[80];
    snprintf(prole, sizeof prole, "%s-lease", role);
    krabka_leadership_t *pl = NULL;
    OK(krabka_client_acquire(ca, prole, KRABKA_NTS, ma, KRABKA_NTS, 30000, &pl, ES));
    OK(krabka_leadership_events_async(pl, q, 77, ES));
    krabka_lease_t lease;
    OK(krabka_leadership_lease(pl, &lease));
    const krabka_lease_event_kind_t want[3] = {KRABKA_LEASE_AT_RISK, KRABKA_LEASE_RECOVERED, KRABKA_LEASE_ENDED};
    for (int i = 0; i < 3; i++) {
        krabka_event_t *ev = next_event(q);
        CHECK(ev != NULL, "%s: lease event %d missing", tv, i);
        if (!ev)
            break;
        krabka_lease_event_kind_t k = 0;
        int64_t deadline = 0;
        CHECK(type_of(ev) == KRABKA_EVENT_LEASE && tag_of(ev) == 77, "%s: lease event type %d tag %" PRIu64, tv,
              (int)type_of(ev), tag_of(ev));
        OK(krabka_event_lease_kind(ev, &k, ES));
        OK(krabka_event_deadline(ev, &deadline, ES));
        CHECK(k == want[i], "%s: lease event %d kind %d, want %d", tv, i, (int)k, (int)want[i]);
        if (k == KRABKA_LEASE_AT_RISK) {
            CHECK(deadline == lease.deadline, "%s: AT_RISK deadline %lld, lease %lld", tv, (long long)deadline,
                  (long long)lease.deadline);
            OK(krabka_leadership_renew(pl, 15000, ES));
            OK(krabka_leadership_lease(pl, &lease));
        } else if (k == KRABKA_LEASE_RECOVERED) {
            CHECK(deadline == lease.deadline, "%s: RECOVERED deadline %lld, renewed lease %lld", tv,
                  (long long)deadline, (long long)lease.deadline);
            OK(krabka_leadership_resign(pl, 15000, ES));
        } else if (k == KRABKA_LEASE_ENDED) {
            krabka_leadership_state_t st = KRABKA_LEADERSHIP_ACTIVE;
            krabka_err_t code = KRABKA_OK;
            OK(krabka_event_state(ev, &st, ES));
            OK(krabka_event_error(ev, &code, NULL, 0));
            CHECK(st == KRABKA_LEADERSHIP_RESIGNED, "%s: ENDED state %d", tv, (int)st);
            CHECK(code != KRABKA_OK, "%s: ENDED without an error", tv);
        }
        /* 8 (part): wrong accessors on a LEASE event. */
        krabka_term_event_kind_t tk;
        errstr[0] = '\0';
        CHECK(krabka_event_term_kind(ev, &tk, ES) == KRABKA_ERR_INVALID_ARG &&
                  strstr(errstr, "KRABKA_EVENT_LEASE") && strstr(errstr, "KRABKA_EVENT_TERM"),
              "term_kind of a LEASE event: %s", errstr);
        OK(krabka_event_destroy(ev));
    }
    krabka_event_t *extra = NULL;
    OK(krabka_queue_poll(q, &extra));
    CHECK(extra == NULL, "%s: an event after ENDED", tv);
    if (extra)
        OK(krabka_event_destroy(extra));
    OK(krabka_leadership_destroy(pl));
    OK(krabka_queue_destroy(q));

    OK(krabka_client_destroy(ca));
    OK(krabka_client_destroy(cb));

    /* The event log: per elector tag, STARTED/STOPPED alternate with the
     * same term; terms count up from 1. */
    for (uint64_t tag = 1; tag <= 5; tag++) {
        uint64_t next = 1;
        int open = 0, starts = 0;
        for (int i = first_log; i < nlog; i++) {
            if (elog[i].tag != tag || elog[i].kind == KRABKA_TERM_NEW_LEADER)
                continue;
            if (elog[i].kind == KRABKA_TERM_STARTED) {
                CHECK(!open && elog[i].term == next, "%s: tag %" PRIu64 ": STARTED term %" PRIu64 " (open %d, next %" PRIu64 ")", tv,
                      tag, elog[i].term, open, next);
                open = 1, starts++;
            } else if (elog[i].kind == KRABKA_TERM_STOPPED) {
                CHECK(open && elog[i].term == next, "%s: tag %" PRIu64 ": STOPPED term %" PRIu64 " unpaired", tv, tag, elog[i].term);
                open = 0, next++;
            }
        }
        /* Tag 3's term 3 stopped into a destroyed queue; every other term
         * was seen to stop. */
        CHECK(starts > 0 && (!open || tag == 3), "%s: tag %" PRIu64 ": %d terms, one left open", tv, tag, starts);
    }
    printf("%s: elector checks done (%d TERM events)\n", tv, nlog - first_log);
}

/* ---- misuse without a cluster round trip ---- */

static void misuse(const char *bootstrap) {
    krabka_queue_t *q = NULL;
    krabka_elector_t *e = (krabka_elector_t *)1;
    int h = 0;
    OK(krabka_queue_new(&q));
    krabka_client_t *c = new_client(bootstrap, "elect-misuse", 0);
    CHECK(krabka_elector_new(NULL, "r", 1, "m", 1, 0, q, 0, &e, ES) == KRABKA_ERR_INVALID_HANDLE && e == NULL,
          "NULL client: %s", errstr);
    CHECK(krabka_elector_new(c, "r", 1, "m", 1, 0, NULL, 0, &e, ES) == KRABKA_ERR_INVALID_HANDLE, "NULL queue: %s",
          errstr);
    CHECK(krabka_elector_new(c, "r", 1, "m", 1, 0, (krabka_queue_t *)c, 0, &e, ES) == KRABKA_ERR_INVALID_HANDLE,
          "a client as the queue: %s", errstr);
    CHECK(krabka_elector_new(c, "r", 1, "m", 1, 0, q, 0, NULL, ES) == KRABKA_ERR_INVALID_ARG, "NULL out: %s", errstr);
    errstr[0] = '\0';
    CHECK(krabka_elector_new(c, "r", 1, "m", 1, 64, q, 0, &e, ES) == KRABKA_ERR_INVALID_ARG && strstr(errstr, "flags"),
          "unknown flag: %s", errstr);
    CHECK(krabka_elector_new(c, "", 0, "m", 1, 0, q, 0, &e, ES) != KRABKA_OK, "empty role accepted");
    CHECK(krabka_elector_new(c, "r", 1, "", 0, 0, q, 0, &e, ES) != KRABKA_OK, "empty member accepted");
    CHECK(krabka_elector_set_eligible(NULL, 1, 0, ES) == KRABKA_ERR_INVALID_HANDLE, "set_eligible(NULL)");
    CHECK(krabka_elector_healthy(NULL, &h, NULL, 0) == KRABKA_ERR_INVALID_HANDLE, "healthy(NULL)");
    CHECK(krabka_elector_healthy((krabka_elector_t *)q, &h, NULL, 0) == KRABKA_ERR_INVALID_HANDLE,
          "healthy(a queue)");
    CHECK(krabka_elector_destroy(NULL) == KRABKA_ERR_INVALID_HANDLE, "destroy(NULL)");
    CHECK(krabka_elector_destroy((krabka_elector_t *)c) == KRABKA_ERR_INVALID_HANDLE, "destroy(a client)");
    CHECK(krabka_leadership_events_async(NULL, q, 0, ES) == KRABKA_ERR_INVALID_HANDLE, "events_async(NULL)");

    /* A started elector (ineligible: it never campaigns) and its misuse. */
    e = new_elector(c, "c-elect-misuse", "m", KRABKA_ELECT_INELIGIBLE | KRABKA_ELECT_NO_RECAMPAIGN, q, 9);
    CHECK(krabka_elector_healthy(e, NULL, NULL, 0) == KRABKA_ERR_INVALID_ARG, "healthy NULL out");
    CHECK(krabka_elector_state(e, NULL) == KRABKA_ERR_INVALID_ARG, "state NULL out");
    {
        krabka_elector_state_t st = KRABKA_ELECTOR_NOT_STARTED;
        CHECK(krabka_elector_state(NULL, &st) == KRABKA_ERR_INVALID_HANDLE, "state(NULL)");
        CHECK(krabka_elector_state((krabka_elector_t *)q, &st) == KRABKA_ERR_INVALID_HANDLE, "state(a queue)");
        OK(krabka_elector_state(e, &st));
        CHECK(st == KRABKA_ELECTOR_CAMPAIGNING, "a withdrawn elector's state %d (the loop runs from new on)", (int)st);
    }
    CHECK(krabka_elector_set_eligible(e, 0, -1, ES) == KRABKA_ERR_INVALID_ARG, "negative timeout: %s", errstr);
    OK(krabka_elector_healthy(e, &h, NULL, 0));
    CHECK(h == 1, "ineligible elector healthy %d", h);
    OK(krabka_elector_destroy(e));
    {
        /* The loop's end was posted before destroy returned: OK, no term. */
        krabka_event_t *end = NULL;
        for (;;) { /* skip NEW_LEADER notices */
            OK(krabka_queue_poll(q, &end));
            if (!end || type_of(end) != KRABKA_EVENT_TERM || kind_of(end) != KRABKA_TERM_NEW_LEADER)
                break;
            OK(krabka_event_destroy(end));
        }
        CHECK(end && type_of(end) == KRABKA_EVENT_TERM && kind_of(end) == KRABKA_TERM_ELECTOR_STOPPED && tag_of(end) == 9,
              "ELECTOR_STOPPED queued when destroy returned");
        if (end) {
            krabka_err_t code = KRABKA_ERR_INTERNAL;
            uint64_t n = 99;
            OK(krabka_event_error(end, &code, NULL, 0));
            OK(krabka_event_term(end, &n, ES));
            CHECK(code == KRABKA_OK && n == 0, "ELECTOR_STOPPED of a destroyed elector without terms: %s, term %" PRIu64,
                  krabka_err2name(code), n);
            OK(krabka_event_destroy(end));
        }
    }

    /* Accessors of the TERM type on a DESCRIBE event, and on NULL. */
    OK(krabka_client_describe_async(c, "c-elect-misuse", KRABKA_NTS, 15000, q, 10, ES));
    krabka_event_t *ev = next_event(q);
    CHECK(ev && type_of(ev) == KRABKA_EVENT_DESCRIBE, "describe event");
    if (ev) {
        krabka_term_event_kind_t k;
        uint64_t n;
        krabka_token_t t;
        int64_t d;
        krabka_stop_reason_t sr;
        krabka_lease_event_kind_t lk;
        char buf[8];
        errstr[0] = '\0';
        CHECK(krabka_event_term_kind(ev, &k, ES) == KRABKA_ERR_INVALID_ARG && strstr(errstr, "KRABKA_EVENT_DESCRIBE") &&
                  strstr(errstr, "KRABKA_EVENT_TERM"),
              "term_kind of DESCRIBE: %s", errstr);
        CHECK(krabka_event_term(ev, &n, ES) == KRABKA_ERR_INVALID_ARG, "term of DESCRIBE");
        CHECK(krabka_event_token(ev, &t, ES) == KRABKA_ERR_INVALID_ARG, "token of DESCRIBE");
        CHECK(krabka_event_deadline(ev, &d, ES) == KRABKA_ERR_INVALID_ARG, "deadline of DESCRIBE");
        CHECK(krabka_event_stop_reason(ev, &sr, ES) == KRABKA_ERR_INVALID_ARG, "stop_reason of DESCRIBE");
        CHECK(krabka_event_lease_kind(ev, &lk, ES) == KRABKA_ERR_INVALID_ARG, "lease_kind of DESCRIBE");
        CHECK(krabka_event_holder(ev, buf, sizeof buf, NULL, ES) == KRABKA_ERR_INVALID_ARG, "holder of DESCRIBE");
        CHECK(krabka_event_term_kind(ev, NULL, ES) == KRABKA_ERR_INVALID_ARG, "term_kind NULL out");
        OK(krabka_event_destroy(ev));
        CHECK(krabka_event_term_kind(ev, &k, ES) == KRABKA_ERR_INVALID_HANDLE, "term_kind of a destroyed event");
    }
    {
        krabka_term_event_kind_t k;
        char buf[4];
        CHECK(krabka_event_term_kind(NULL, &k, ES) == KRABKA_ERR_INVALID_HANDLE, "term_kind(NULL)");
        CHECK(krabka_event_holder(NULL, buf, sizeof buf, NULL, ES) == KRABKA_ERR_INVALID_HANDLE, "holder(NULL)");
    }
    OK(krabka_queue_destroy(q));
    OK(krabka_client_destroy(c));
}

/* A TERM event's holder with a buffer too small, and TERM accessors that
 * must refuse the LEASE-only kind (needs one STARTED). */
static void term_accessors(const char *bootstrap) {
    krabka_queue_t *q = NULL;
    OK(krabka_queue_new(&q));
    krabka_client_t *c = new_client(bootstrap, "elect-acc", 0);
    char role[64];
    snprintf(role, sizeof role, "c-elect-acc-%ld", (long)getpid());
    krabka_elector_t *e = new_elector(c, role, "holder-with-a-long-name", KRABKA_ELECT_NO_RECAMPAIGN, q, 20);
    krabka_event_t *ev = wait_term(q, 20, KRABKA_TERM_STARTED);
    char small[4];
    size_t n = 0;
    CHECK(krabka_event_holder(ev, small, sizeof small, &n, ES) == KRABKA_ERR_BUFFER_TOO_SMALL &&
              n == strlen("holder-with-a-long-name"),
          "holder into 4 bytes: n %zu: %s", n, errstr);
    CHECK(krabka_event_holder(ev, NULL, 5, &n, ES) == KRABKA_ERR_INVALID_ARG, "holder NULL buf, size 5");
    krabka_lease_event_kind_t lk;
    krabka_leadership_state_t st;
    CHECK(krabka_event_lease_kind(ev, &lk, ES) == KRABKA_ERR_INVALID_ARG, "lease_kind of TERM");
    CHECK(krabka_event_state(ev, &st, ES) == KRABKA_ERR_INVALID_ARG, "state of TERM");
    OK(krabka_event_destroy(ev)); /* untaken: the leadership stays the elector's */
    int h = 0;
    OK(krabka_elector_healthy(e, &h, NULL, 0));
    CHECK(h == 1, "the holder is healthy after its STARTED event was destroyed untaken (%d)", h);
    OK(krabka_elector_destroy(e));
    OK(krabka_event_destroy(stopped(q, 20, 1, KRABKA_STOP_RESIGNED)));
    OK(krabka_queue_destroy(q));
    OK(krabka_client_destroy(c));
}

int main(void) {
    const char *tv2 = getenv("KRABKA_BOOTSTRAP"), *tv1 = getenv("KRABKA_BOOTSTRAP_TV1");
    if (!tv2 || !*tv2 || !tv1 || !*tv1) {
        fprintf(stderr, "elect: set KRABKA_BOOTSTRAP and KRABKA_BOOTSTRAP_TV1; `make capi-elect` does\n");
        return 2;
    }
    misuse(tv2);
    term_accessors(tv2);
    run_cluster("tv2", tv2);
    run_cluster("tv1", tv1);
    printf("elect: %d checks, %d failures\n", checks, failures);
    return failures ? 1 : 0;
}
