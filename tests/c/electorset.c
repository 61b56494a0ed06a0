/* Elector sets through the C ABI (krabka_elector_set_*, KRABKA_EVENT_SET_TERM)
 * on $KRABKA_BOOTSTRAP (transaction.version 2) and $KRABKA_BOOTSTRAP_TV1.
 * `make capi-electorset` runs it (both clusters at once). Per cluster, ROLES
 * roles of their own and two sets, A and B, each on a client and a queue of
 * its own (one queue for all roles of a set):
 *   1. A wins every role: one STARTED per role, each tagged with its role
 *      (krabka_event_role), term 1, holder A, a leadership whose token is
 *      the event's; krabka_elector_set_count says ROLES roles, ROLES held;
 *      every role's state is HOLDING. B joins for every role and stands by
 *      (in every roster).
 *   2. Remove at run time moves one role alone: A removes role 0: STOPPED
 *      (RESIGNED), then ELECTOR_STOPPED (OK), both in the queue when remove
 *      returns, for role 0 only; B wins role
 *      0 with a token superseding A's; no other role moves (no other
 *      STOPPED in A, no other STARTED in B); A's state of role 0 is
 *      INVALID_ARG naming it (not in the set); the handle taken from A's
 *      STARTED of role 0 refuses a write (NOT_LEADER or FENCED).
 *   3. The release rule, per role: A's taken leadership of role 1 resigns
 *      (A: STOPPED, RESIGNED; B wins role 1). While A keeps that STOPPED
 *      event, A's role 1 stays out of the roster; B removes role 1; once A
 *      destroys the event, A registers again and wins role 1, term 2.
 *   4. Add at run time: A adds role 0 again: it stands by behind B.
 *   5. A dies (its client destroyed): every role of A ends (ELECTOR_STOPPED,
 *      CLOSED, after a STOPPED for each held term); B takes every role
 *      (count: ROLES held), each STARTED's token superseding A's last.
 *   6. B's set destroyed: a STOPPED (RESIGNED) for every held role and an
 *      ELECTOR_STOPPED (OK) for every role, all on B's queue when destroy
 *      returns.
 *   7. Misuse (tv2 only): NULL, stale and foreign handles; a NULL or invalid
 *      member; unknown flags; a NULL out; a NULL, empty, over-long or
 *      invalid UTF-8 role; a role added twice; a role the client holds
 *      outside the set; remove and state of a role not in the set; the
 *      role accessor on another event type and a small buffer: each
 *      answers its code with an errstr naming the argument or the role.
 * From every role's events: STARTED and STOPPED alternate and carry the same
 * term number, and nothing follows ELECTOR_STOPPED.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "krabka_coord.h"

#define CHECK_NAME "electorset"
#include "check.h"

/* A bound for one wait (not a timing check: failovers take seconds). */
#define WAIT_MS 120000
#define ROLES 20

static void sleep_ms(long ms) {
    struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
    nanosleep(&ts, NULL);
}

static krabka_client_t *new_client(const char *bootstrap, const char *id) {
    krabka_conf_t *conf = krabka_conf_new();
    krabka_client_t *c = NULL;
    OK(krabka_conf_set(conf, "bootstrap.servers", bootstrap, ES));
    OK(krabka_conf_set(conf, "client.id", id, ES));
    OK(krabka_conf_set(conf, "krabka.lease.ms", "3000", ES));
    OK(krabka_conf_set(conf, "krabka.renew.interval.ms", "1000", ES));
    OK(krabka_conf_set(conf, "krabka.challenge.stagger.ms", "500", ES));
    OK(krabka_conf_set(conf, "krabka.poll.interval.ms", "200", ES));
    OK(krabka_conf_set(conf, "request.timeout.ms", "15000", ES));
    OK(krabka_client_new(conf, &c, ES));
    krabka_conf_destroy(conf);
    return c;
}

static char role_name[ROLES][96];

static int role_index(const char *r) {
    for (int i = 0; i < ROLES; i++)
        if (strcmp(role_name[i], r) == 0)
            return i;
    return -1;
}

/* One set: its client, queue, handle, and what its events said per role. */
struct member {
    const char *name;
    krabka_client_t *client;
    krabka_queue_t *queue;
    krabka_elector_set_t *set;
    uint64_t tag;
    int holding[ROLES];               /* a term runs (STARTED, no STOPPED yet) */
    uint64_t term[ROLES];             /* of the last STARTED */
    krabka_token_t token[ROLES];      /* of the last STARTED */
    krabka_leadership_t *lead[ROLES]; /* taken from the last STARTED */
    int started[ROLES], stopped[ROLES], ended[ROLES];
    int live[ROLES];                  /* added, no ELECTOR_STOPPED yet */
    krabka_stop_reason_t reason[ROLES]; /* of the last STOPPED */
    krabka_err_t end_code[ROLES];       /* of ELECTOR_STOPPED */
    int keep_stopped;                   /* a role whose next STOPPED is kept (-1: none) */
    krabka_event_t *kept;               /* that event */
};

static struct member mem[2];

/* Takes every event waiting in m's queue into m. */
static void drain(struct member *m) {
    krabka_event_t *ev = NULL;
    while (krabka_queue_poll(m->queue, &ev) == KRABKA_OK && ev) {
        krabka_event_type_t t = KRABKA_EVENT_NONE;
        uint64_t tag = 0;
        OK(krabka_event_type(ev, &t));
        OK(krabka_event_tag(ev, &tag));
        CHECK(t == KRABKA_EVENT_SET_TERM && tag == m->tag, "%s: event type %d tag %" PRIu64, m->name, (int)t, tag);
        if (t != KRABKA_EVENT_SET_TERM) {
            krabka_event_destroy(ev);
            continue;
        }
        char rbuf[KRABKA_NAME_BUF], holder[KRABKA_NAME_BUF];
        size_t rlen = 0;
        krabka_term_event_kind_t k = 0;
        uint64_t n = 0;
        krabka_token_t tok = {0, 0};
        OK(krabka_event_role(ev, rbuf, sizeof rbuf, &rlen, ES));
        OK(krabka_event_term_kind(ev, &k, ES));
        OK(krabka_event_term(ev, &n, ES));
        OK(krabka_event_token(ev, &tok, ES));
        OK(krabka_event_holder(ev, holder, sizeof holder, NULL, ES));
        int r = role_index(rbuf);
        CHECK(r >= 0 && rlen == strlen(rbuf), "%s: an event of an unknown role %s", m->name, rbuf);
        if (r < 0) {
            krabka_event_destroy(ev);
            continue;
        }
        CHECK(m->live[r], "%s: %s: an event (kind %d) after its ELECTOR_STOPPED", m->name, rbuf, (int)k);
        if (k == KRABKA_TERM_STARTED) {
            krabka_leadership_t *l = NULL;
            krabka_token_t lt = {0, 0};
            CHECK(!m->holding[r], "%s: %s: STARTED twice without a STOPPED", m->name, rbuf);
            CHECK(strcmp(holder, m->name) == 0, "%s: %s: STARTED names holder %s", m->name, rbuf, holder);
            OK(krabka_event_take_leadership(ev, &l, ES));
            CHECK(l != NULL, "%s: %s: STARTED carries no leadership", m->name, rbuf);
            if (l) {
                OK(krabka_leadership_token(l, &lt));
                CHECK(krabka_token_compare(lt, tok) == 0, "%s: %s: the leadership's token differs from the event's",
                      m->name, rbuf);
            }
            if (m->lead[r])
                krabka_leadership_destroy(m->lead[r]);
            m->lead[r] = l;
            m->holding[r] = 1;
            m->term[r] = n;
            m->token[r] = tok;
            m->started[r]++;
        } else if (k == KRABKA_TERM_STOPPED) {
            krabka_stop_reason_t why = KRABKA_STOP_NONE;
            OK(krabka_event_stop_reason(ev, &why, ES));
            CHECK(m->holding[r] && n == m->term[r], "%s: %s: STOPPED of term %" PRIu64 " (holding %d, term %" PRIu64 ")",
                  m->name, rbuf, n, m->holding[r], m->term[r]);
            CHECK(krabka_token_compare(tok, m->token[r]) == 0, "%s: %s: STOPPED names another term's token", m->name, rbuf);
            m->holding[r] = 0;
            m->stopped[r]++;
            m->reason[r] = why;
            if (m->keep_stopped == r) {
                m->keep_stopped = -1;
                m->kept = ev;
                continue;
            }
        } else if (k == KRABKA_TERM_ELECTOR_STOPPED) {
            CHECK(!m->holding[r], "%s: %s: ELECTOR_STOPPED while a term runs", m->name, rbuf);
            OK(krabka_event_error(ev, &m->end_code[r], ES));
            m->ended[r]++;
            m->live[r] = 0;
        }
        krabka_event_destroy(ev);
    }
}

static int count_holding(const struct member *m) {
    int n = 0;
    for (int r = 0; r < ROLES; r++)
        n += m->holding[r];
    return n;
}

/* Waits (bounded) until cond(m, arg) holds, draining both sets meanwhile. */
static int wait_until(int (*cond)(int), int arg, const char *what) {
    for (int waited = 0; waited < WAIT_MS; waited += 100) {
        for (int i = 0; i < 2; i++)
            if (mem[i].queue)
                drain(&mem[i]);
        if (cond(arg))
            return 1;
        sleep_ms(100);
    }
    CHECK(0, "%s: not within %d ms (A holds %d, B holds %d)", what, WAIT_MS, count_holding(&mem[0]),
          count_holding(&mem[1]));
    return 0;
}

static int a_holds_all(int unused) {
    (void)unused;
    return count_holding(&mem[0]) == ROLES;
}
static int b_holds_all(int unused) {
    (void)unused;
    return count_holding(&mem[1]) == ROLES;
}
static int b_holds(int r) { return mem[1].holding[r]; }
static int a_holds(int r) { return mem[0].holding[r]; }
static int a_ended(int r) { return mem[0].ended[r] > 0; }
static int a_all_ended(int unused) {
    (void)unused;
    for (int r = 0; r < ROLES; r++)
        if (!mem[0].ended[r])
            return 0;
    return 1;
}
static int a_kept(int unused) {
    (void)unused;
    return mem[0].kept != NULL;
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
static int wait_roster(krabka_client_t *c, const char *role, const char *member, int want) {
    const char *r = "";
    for (int waited = 0; waited < WAIT_MS; waited += 100) {
        for (int i = 0; i < 2; i++)
            if (mem[i].queue)
                drain(&mem[i]);
        r = roster(c, role);
        if (in_list(r, member) == want)
            return 1;
        sleep_ms(100);
    }
    CHECK(0, "%s %s the roster of %s within %d ms (roster %s)", member, want ? "never joined" : "never left", role, WAIT_MS,
          r);
    return 0;
}

static void add(struct member *m, int r) {
    OK(krabka_elector_set_add(m->set, role_name[r], KRABKA_NTS, ES));
    m->live[r] = 1;
}

static void start(struct member *m, const char *bootstrap, const char *name, const char *id, uint64_t tag) {
    memset(m, 0, sizeof *m);
    m->name = name;
    m->tag = tag;
    m->keep_stopped = -1;
    m->client = new_client(bootstrap, id);
    OK(krabka_queue_new(&m->queue));
    OK(krabka_elector_set_new(m->client, name, KRABKA_NTS, 0, m->queue, tag, &m->set, ES));
    CHECK(m->set != NULL, "elector_set_new gave NULL");
    for (int r = 0; r < ROLES; r++)
        add(m, r);
}

static void cleanup(struct member *m) {
    if (m->set)
        OK(krabka_elector_set_destroy(m->set));
    m->set = NULL;
    if (m->queue)
        drain(m);
    if (m->kept)
        krabka_event_destroy(m->kept);
    m->kept = NULL;
    for (int r = 0; r < ROLES; r++)
        if (m->lead[r])
            krabka_leadership_destroy(m->lead[r]);
    memset(m->lead, 0, sizeof m->lead);
    if (m->client)
        krabka_client_destroy(m->client);
    m->client = NULL;
    if (m->queue)
        krabka_queue_destroy(m->queue);
    m->queue = NULL;
}

static void run_cluster(const char *tv, const char *bootstrap) {
    char ida[64], idb[64];
    struct member *a = &mem[0], *b = &mem[1];
    for (int r = 0; r < ROLES; r++)
        snprintf(role_name[r], sizeof role_name[r], "c-set-%s-%ld-%d/%02d", tv, (long)time(NULL), (int)getpid(), r);
    snprintf(ida, sizeof ida, "set-a-%s", tv);
    snprintf(idb, sizeof idb, "set-b-%s", tv);
    printf("electorset: %s: %d roles %s..%s on %s\n", tv, ROLES, role_name[0], role_name[ROLES - 1], bootstrap);

    /* 1. A wins every role; B stands by for every one. */
    start(a, bootstrap, "a", ida, 1);
    if (!wait_until(a_holds_all, 0, "A holds every role"))
        goto out;
    size_t nroles = 0, nheld = 0;
    OK(krabka_elector_set_count(a->set, &nroles, &nheld, ES));
    CHECK(nroles == ROLES && nheld == ROLES, "%s: A's count: %zu roles, %zu held", tv, nroles, nheld);
    for (int r = 0; r < ROLES; r++) {
        krabka_elector_state_t st = 0;
        OK(krabka_elector_set_state(a->set, role_name[r], KRABKA_NTS, &st, ES));
        CHECK(a->term[r] == 1 && a->started[r] == 1, "%s: A's %s: term %" PRIu64 ", %d STARTED", tv, role_name[r],
              a->term[r], a->started[r]);
        CHECK(st == KRABKA_ELECTOR_HOLDING || st == KRABKA_ELECTOR_AT_RISK, "%s: A's state of %s: %d", tv, role_name[r],
              (int)st);
    }
    start(b, bootstrap, "b", idb, 2);
    for (int r = 0; r < ROLES; r++)
        if (!wait_roster(a->client, role_name[r], "b", 1))
            goto out;
    CHECK(count_holding(b) == 0, "%s: B holds %d roles while A holds them all", tv, count_holding(b));
    printf("electorset: %s: A holds all %d roles, B stands by for each\n", tv, ROLES);

    /* 2. A removes role 0: it alone moves to B. */
    krabka_token_t a_tok0 = a->token[0];
    OK(krabka_elector_set_remove(a->set, role_name[0], KRABKA_NTS, KRABKA_TIMEOUT_DEFAULT, ES));
    drain(a); /* remove returns once the role's last event is in the queue */
    CHECK(a->stopped[0] == 1 && a->ended[0] == 1, "%s: when remove returned: %d STOPPED, %d ELECTOR_STOPPED in the queue", tv,
          a->stopped[0], a->ended[0]);
    if (!wait_until(a_ended, 0, "A's role 0 ends") || !wait_until(b_holds, 0, "B wins role 0"))
        goto out;
    CHECK(a->stopped[0] == 1 && a->reason[0] == KRABKA_STOP_RESIGNED && a->end_code[0] == KRABKA_OK,
          "%s: A's removed role: %d STOPPED (reason %d), ELECTOR_STOPPED %s", tv, a->stopped[0], (int)a->reason[0],
          krabka_err2name(a->end_code[0]));
    CHECK(krabka_token_compare(b->token[0], a_tok0) > 0, "%s: B's token of role 0 does not supersede A's", tv);
    for (int r = 1; r < ROLES; r++) {
        CHECK(a->stopped[r] == 0 && a->holding[r], "%s: A's %s moved when role 0 was removed", tv, role_name[r]);
        CHECK(b->started[r] == 0, "%s: B started %s when only role 0 moved", tv, role_name[r]);
    }
    krabka_elector_state_t st = 0;
    CHECK(krabka_elector_set_state(a->set, role_name[0], KRABKA_NTS, &st, ES) == KRABKA_ERR_INVALID_ARG &&
              strstr(errstr, role_name[0]) != NULL,
          "%s: the state of a removed role: %s", tv, errstr);
    OK(krabka_elector_set_count(a->set, &nroles, &nheld, ES));
    CHECK(nroles == ROLES - 1 && nheld == ROLES - 1, "%s: A's count after remove: %zu roles, %zu held", tv, nroles, nheld);
    {
        krabka_message_t msg = KRABKA_MESSAGE_INIT;
        msg.topic = "krabka-c-set-never-written";
        msg.value = (const uint8_t *)"stale";
        msg.value_len = 5;
        krabka_err_t e = krabka_leadership_produce(a->lead[0], &msg, 1, 10000, NULL, ES);
        CHECK(e == KRABKA_ERR_NOT_LEADER || e == KRABKA_ERR_FENCED, "%s: a write under A's removed role: %s (%s)", tv,
              krabka_err2name(e), errstr);
        printf("electorset: %s: role 0 moved alone; a write under A's old term: %s\n", tv, krabka_err2name(e));
    }

    /* 3. The release rule, per role. */
    a->keep_stopped = 1;
    OK(krabka_leadership_resign(a->lead[1], 15000, ES));
    if (!wait_until(a_kept, 0, "A's STOPPED of role 1") || !wait_until(b_holds, 1, "B wins role 1"))
        goto out;
    CHECK(a->reason[1] == KRABKA_STOP_RESIGNED, "%s: A's role 1 stopped with reason %d", tv, (int)a->reason[1]);
    const char *ro = roster(a->client, role_name[1]);
    CHECK(!in_list(ro, "a"), "%s: A's role 1 campaigned before its STOPPED was destroyed (roster %s)", tv, ro);
    OK(krabka_elector_set_remove(b->set, role_name[1], KRABKA_NTS, KRABKA_TIMEOUT_DEFAULT, ES));
    drain(b);
    CHECK(b->ended[1] == 1 && !b->holding[1], "%s: B's role 1 when remove returned: %d ELECTOR_STOPPED, holding %d", tv,
          b->ended[1], b->holding[1]);
    ro = roster(a->client, role_name[1]);
    CHECK(!in_list(ro, "a"), "%s: A's role 1 campaigned before its STOPPED was destroyed (roster %s, B gone)", tv, ro);
    CHECK(!a->holding[1], "%s: A holds role 1 again before its STOPPED was destroyed", tv);
    OK(krabka_event_destroy(a->kept)); /* releases A's term 1 of role 1 */
    a->kept = NULL;
    if (!wait_until(a_holds, 1, "A wins role 1 again"))
        goto out;
    CHECK(a->term[1] == 2, "%s: A's role 1 is in term %" PRIu64 ", want 2", tv, a->term[1]);
    printf("electorset: %s: role 1 campaigned again only after its STOPPED was destroyed (term 2)\n", tv);

    /* 4. A adds role 0 again: it stands by behind B. */
    add(a, 0);
    if (!wait_roster(a->client, role_name[0], "a", 1))
        goto out;
    OK(krabka_elector_set_state(a->set, role_name[0], KRABKA_NTS, &st, ES));
    CHECK(st == KRABKA_ELECTOR_CAMPAIGNING, "%s: A's re-added role 0 is in state %d", tv, (int)st);
    add(b, 1); /* B stands by again for role 1 */

    /* 5. A dies: B takes every role. */
    krabka_token_t a_last[ROLES];
    memcpy(a_last, a->token, sizeof a_last);
    a_last[0] = b->token[0];
    OK(krabka_client_destroy(a->client));
    a->client = NULL;
    if (!wait_until(a_all_ended, 0, "every role of A ends") || !wait_until(b_holds_all, 0, "B holds every role"))
        goto out;
    for (int r = 0; r < ROLES; r++) {
        CHECK(a->end_code[r] == KRABKA_ERR_CLOSED && a->stopped[r] == a->started[r],
              "%s: A's %s ended with %s (want CLOSED), %d STARTED, %d STOPPED", tv, role_name[r],
              krabka_err2name(a->end_code[r]), a->started[r], a->stopped[r]);
        CHECK(krabka_token_compare(b->token[r], a_last[r]) >= 0 && (r == 0 || krabka_token_compare(b->token[r], a_last[r]) > 0),
              "%s: B's token of %s does not supersede A's last", tv, role_name[r]);
    }
    OK(krabka_elector_set_count(b->set, &nroles, &nheld, ES));
    CHECK(nroles == ROLES && nheld == ROLES, "%s: B's count: %zu roles, %zu held", tv, nroles, nheld);
    printf("electorset: %s: A's client destroyed; B holds all %d roles\n", tv, ROLES);

    /* 6. B's set destroyed: every role resigned and ended. */
    int b_stopped_before[ROLES];
    for (int r = 0; r < ROLES; r++)
        b_stopped_before[r] = b->stopped[r];
    OK(krabka_elector_set_destroy(b->set));
    b->set = NULL;
    drain(b);
    for (int r = 0; r < ROLES; r++) {
        CHECK(b->stopped[r] == b_stopped_before[r] + 1 && b->reason[r] == KRABKA_STOP_RESIGNED,
              "%s: B's %s at destroy: %d STOPPED (reason %d)", tv, role_name[r], b->stopped[r] - b_stopped_before[r],
              (int)b->reason[r]);
        CHECK(b->end_code[r] == KRABKA_OK && b->ended[r] >= 1, "%s: B's %s: ELECTOR_STOPPED %d times, %s", tv, role_name[r],
              b->ended[r], krabka_err2name(b->end_code[r]));
    }
out:
    for (int i = 0; i < 2; i++)
        cleanup(&mem[i]);
}

/* errstr contains want (case-sensitive). */
#define NAMES(want) CHECK(strstr(errstr, want) != NULL, "errstr \"%s\" does not name %s", errstr, want)

static void misuse(const char *bootstrap) {
    krabka_client_t *c = new_client(bootstrap, "set-misuse");
    krabka_queue_t *q = NULL;
    krabka_elector_set_t *s = (krabka_elector_set_t *)&s;
    OK(krabka_queue_new(&q));

    CHECK(krabka_elector_set_new(NULL, "m", 1, 0, q, 0, &s, ES) == KRABKA_ERR_INVALID_HANDLE && s == NULL,
          "NULL client: %s", errstr);
    NAMES("krabka_client_t");
    CHECK(krabka_elector_set_new((krabka_client_t *)q, "m", 1, 0, q, 0, &s, ES) == KRABKA_ERR_INVALID_HANDLE,
          "a queue as the client: %s", errstr);
    NAMES("krabka_client_t");
    CHECK(krabka_elector_set_new(c, "m", 1, 0, NULL, 0, &s, ES) == KRABKA_ERR_INVALID_HANDLE, "NULL queue: %s", errstr);
    NAMES("krabka_queue_t");
    CHECK(krabka_elector_set_new(c, "m", 1, 0, (krabka_queue_t *)c, 0, &s, ES) == KRABKA_ERR_INVALID_HANDLE,
          "a client as the queue: %s", errstr);
    CHECK(krabka_elector_set_new(c, NULL, 1, 0, q, 0, &s, ES) == KRABKA_ERR_INVALID_ARG, "NULL member: %s", errstr);
    NAMES("member");
    CHECK(krabka_elector_set_new(c, "", 0, 0, q, 0, &s, ES) != KRABKA_OK, "empty member accepted");
    NAMES("member");
    CHECK(krabka_elector_set_new(c, "m\xff", 2, 0, q, 0, &s, ES) != KRABKA_OK, "invalid UTF-8 member accepted");
    NAMES("UTF-8");
    CHECK(krabka_elector_set_new(c, "m", 1, KRABKA_ELECT_INELIGIBLE, q, 0, &s, ES) == KRABKA_ERR_INVALID_ARG,
          "INELIGIBLE flag: %s", errstr);
    NAMES("flags");
    CHECK(krabka_elector_set_new(c, "m", 1, 0x40, q, 0, &s, ES) == KRABKA_ERR_INVALID_ARG, "bad flags: %s", errstr);
    NAMES("flags");
    CHECK(krabka_elector_set_new(c, "m", 1, 0, q, 0, NULL, ES) == KRABKA_ERR_INVALID_ARG, "NULL out: %s", errstr);
    NAMES("out");

    /* a live set */
    char r0[64], held[64], over[KRABKA_NAME_MAX + 2];
    snprintf(r0, sizeof r0, "c-set-misuse-%d/0", (int)getpid());
    snprintf(held, sizeof held, "c-set-misuse-%d/held", (int)getpid());
    memset(over, 'o', KRABKA_NAME_MAX + 1);
    over[KRABKA_NAME_MAX + 1] = '\0';
    OK(krabka_elector_set_new(c, "m", KRABKA_NTS, 0, q, 7, &s, ES));
    OK(krabka_elector_set_add(s, r0, KRABKA_NTS, ES));
    CHECK(krabka_elector_set_add(s, r0, KRABKA_NTS, ES) == KRABKA_ERR_INVALID_ARG, "a role added twice: %s", errstr);
    NAMES(r0);
    NAMES("already in the set");
    CHECK(krabka_elector_set_add(s, NULL, 3, ES) == KRABKA_ERR_INVALID_ARG, "NULL role: %s", errstr);
    NAMES("role");
    CHECK(krabka_elector_set_add(s, "", 0, ES) != KRABKA_OK, "empty role accepted");
    NAMES("role");
    krabka_err_t e = krabka_elector_set_add(s, over, KRABKA_NTS, ES);
    CHECK(e == KRABKA_ERR_ROLE_TOO_LONG, "an over-long role: %s (%s)", krabka_err2name(e), errstr);
    NAMES("\"oooooooooooooooo");
    NAMES("250 bytes");
    e = krabka_elector_set_add(s, "r\xff", 2, ES);
    CHECK(e == KRABKA_ERR_INVALID_UTF8, "an invalid UTF-8 role: %s (%s)", krabka_err2name(e), errstr);
    NAMES("\"r\\xff\"");
    krabka_leadership_t *l = NULL;
    OK(krabka_client_acquire(c, held, KRABKA_NTS, "m", KRABKA_NTS, 30000, &l, ES));
    CHECK(krabka_elector_set_add(s, held, KRABKA_NTS, ES) == KRABKA_ERR_INVALID_ARG, "a role held outside the set: %s",
          errstr);
    NAMES(held);
    NAMES("already holds");
    OK(krabka_leadership_resign(l, 15000, ES));
    OK(krabka_leadership_destroy(l));
    CHECK(krabka_elector_set_remove(s, held, KRABKA_NTS, 1000, ES) == KRABKA_ERR_INVALID_ARG,
          "remove of a role not in the set: %s", errstr);
    NAMES(held);
    NAMES("not in the set");
    krabka_elector_state_t st;
    CHECK(krabka_elector_set_state(s, held, KRABKA_NTS, &st, ES) == KRABKA_ERR_INVALID_ARG,
          "state of a role not in the set: %s", errstr);
    NAMES(held);
    CHECK(krabka_elector_set_state(s, r0, KRABKA_NTS, NULL, ES) == KRABKA_ERR_INVALID_ARG, "state, NULL out: %s",
          errstr);
    NAMES("out");
    OK(krabka_elector_set_count(s, NULL, NULL, ES));
    CHECK(krabka_elector_set_add((krabka_elector_set_t *)c, r0, KRABKA_NTS, ES) == KRABKA_ERR_INVALID_HANDLE,
          "a client as a set: %s", errstr);
    NAMES("krabka_elector_set_t");
    CHECK(krabka_elector_set_add(NULL, r0, KRABKA_NTS, ES) == KRABKA_ERR_INVALID_HANDLE, "NULL set: %s", errstr);
    NAMES("krabka_elector_set_t");

    /* the STARTED of r0: the role accessor, and the other types' accessors */
    krabka_event_t *ev = NULL;
    for (int waited = 0; waited < WAIT_MS && !ev; waited += 50) {
        krabka_term_event_kind_t k = 0;
        OK(krabka_queue_poll(q, &ev));
        if (!ev) {
            sleep_ms(50);
            continue;
        }
        OK(krabka_event_term_kind(ev, &k, ES)); /* NEW_LEADER may come first */
        if (k != KRABKA_TERM_STARTED) {
            krabka_event_destroy(ev);
            ev = NULL;
        }
    }
    CHECK(ev != NULL, "no STARTED of the misuse set's role");
    if (ev) {
        krabka_event_type_t t = 0;
        krabka_term_event_kind_t k = 0;
        char small[4], buf[KRABKA_NAME_BUF];
        size_t n = 0;
        OK(krabka_event_type(ev, &t));
        OK(krabka_event_term_kind(ev, &k, ES));
        CHECK(t == KRABKA_EVENT_SET_TERM && k == KRABKA_TERM_STARTED, "the first event: type %d kind %d", (int)t, (int)k);
        CHECK(krabka_event_role(ev, small, sizeof small, &n, ES) == KRABKA_ERR_BUFFER_TOO_SMALL && n == strlen(r0),
              "a small role buffer: %s, len %zu", errstr, n);
        OK(krabka_event_role(ev, buf, sizeof buf, NULL, ES));
        CHECK(strcmp(buf, r0) == 0, "the event's role %s, want %s", buf, r0);
        CHECK(krabka_event_role(ev, NULL, 9, &n, ES) == KRABKA_ERR_INVALID_ARG, "role into NULL with size 9: %s", errstr);
        krabka_group_event_kind_t gk;
        CHECK(krabka_event_group_kind(ev, &gk, ES) == KRABKA_ERR_INVALID_ARG, "group_kind of SET_TERM: %s", errstr);
        NAMES("KRABKA_EVENT_SET_TERM");
        krabka_event_destroy(ev);
    }
    OK(krabka_client_describe_async(c, r0, KRABKA_NTS, 15000, q, 8, ES));
    ev = NULL;
    for (int waited = 0; waited < WAIT_MS; waited += 50) {
        krabka_event_type_t t = 0;
        OK(krabka_queue_poll(q, &ev));
        if (ev) {
            OK(krabka_event_type(ev, &t));
            if (t == KRABKA_EVENT_DESCRIBE)
                break;
            krabka_event_destroy(ev);
            ev = NULL;
            continue;
        }
        sleep_ms(50);
    }
    CHECK(ev != NULL, "no DESCRIBE event");
    if (ev) {
        char buf[KRABKA_NAME_BUF];
        CHECK(krabka_event_role(ev, buf, sizeof buf, NULL, ES) == KRABKA_ERR_INVALID_ARG, "role of DESCRIBE: %s", errstr);
        NAMES("KRABKA_EVENT_DESCRIBE");
        NAMES("KRABKA_EVENT_SET_TERM");
        krabka_event_destroy(ev);
    }

    OK(krabka_elector_set_destroy(s));
    CHECK(krabka_elector_set_destroy(s) == KRABKA_ERR_INVALID_HANDLE, "destroyed twice");
    CHECK(krabka_elector_set_add(s, r0, KRABKA_NTS, ES) == KRABKA_ERR_INVALID_HANDLE, "add to a destroyed set: %s", errstr);
    NAMES("destroyed");
    CHECK(krabka_elector_set_remove(s, r0, KRABKA_NTS, 0, ES) == KRABKA_ERR_INVALID_HANDLE,
          "remove from a destroyed set: %s", errstr);
    NAMES("destroyed");
    size_t nr = 0;
    CHECK(krabka_elector_set_count(s, &nr, NULL, ES) == KRABKA_ERR_INVALID_HANDLE, "count of a destroyed set: %s", errstr);
    CHECK(krabka_elector_set_destroy(NULL) == KRABKA_ERR_INVALID_HANDLE, "destroy(NULL)");
    krabka_queue_destroy(q);
    krabka_client_destroy(c);
}

/* argv[1]: tv2 (misuse and the scenario on $KRABKA_BOOTSTRAP), tv1 (the
 * scenario on $KRABKA_BOOTSTRAP_TV1; make runs both at once) or misuse (the
 * misuse checks alone, on $KRABKA_BOOTSTRAP: one role, short enough to run
 * under valgrind, where 20 roles on 3 s leases lose terms to the slowdown). */
int main(int argc, char **argv) {
    const char *which = argc > 1 ? argv[1] : "";
    const char *env = strcmp(which, "tv1") == 0 ? "KRABKA_BOOTSTRAP_TV1" : "KRABKA_BOOTSTRAP";
    const char *bootstrap = getenv(env);
    if (strcmp(which, "tv1") != 0 && strcmp(which, "tv2") != 0 && strcmp(which, "misuse") != 0) {
        printf("usage: electorset tv2|tv1|misuse\n");
        return 2;
    }
    if (!bootstrap || !*bootstrap) {
        printf("electorset: FAIL: %s is not set (run via make test)\n", env);
        return 1;
    }
    if (strcmp(which, "tv1") != 0)
        misuse(bootstrap);
    if (strcmp(which, "misuse") != 0)
        run_cluster(which, bootstrap);
    printf("electorset: %d checks, %d failures\n", checks, failures);
    return failures ? 1 : 0;
}
