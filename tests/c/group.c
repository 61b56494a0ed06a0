/* Role groups through the C ABI (krabka_group_*, KRABKA_EVENT_GROUP) on
 * $KRABKA_BOOTSTRAP (transaction.version 2) and $KRABKA_BOOTSTRAP_TV1.
 * `make capi-group` runs it. Per cluster, on a group of its own with
 * SHARDS shards, three members, each on a client and a queue of its own:
 *   1. Balance: A and B (weight 1) and C (weight 2) join; once the group
 *      settled every shard is held by exactly one member and each holds its
 *      weighted share within one (3, 3, 6 of 12). What the events say
 *      (ASSIGNED minus REVOKED) is what krabka_group_held answers; every
 *      ASSIGNED carries a leadership whose token is the event's.
 *   2. Leave moves only the leaver's shards: C leaves (krabka_group_leave):
 *      REVOKED for each of its shards, then GROUP_STOPPED (OK); A and B end
 *      with 6 each and still hold every shard they held before. The handle
 *      taken from a revoked shard's ASSIGNED refuses a write (NOT_LEADER or
 *      FENCED), and the shard's new token supersedes the old one.
 *   3. A dead member's shards are taken after its deadline: B's client is
 *      destroyed without leaving (GROUP_STOPPED: CLOSED); A ends with all
 *      12 shards, those it held before included.
 *   4. Misuse (tv2 only): NULL, stale and foreign handles; a NULL or invalid UTF-8
 *      group; a group too long for its shards' roles; shard counts 0, -1
 *      and KRABKA_GROUP_MAX_SHARDS + 1; weights 0 and -3; unknown flags; a
 *      NULL out; set_weight 0; shard_role out of range; held with a NULL
 *      count; GROUP accessors on another type and TERM accessors on GROUP:
 *      each answers its code with an errstr naming the argument.
 */
#include <inttypes.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "krabka_coord.h"

#define CHECK_NAME "group"
#include "check.h"

/* A bound for one wait (not a timing check: groups settle in seconds). */
#define WAIT_MS 90000
#define SHARDS 12
#define MEMBERS 3

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

/* One member: its client, queue, handle, and what its events said. */
struct member {
    const char *name;
    krabka_client_t *client;
    krabka_queue_t *queue;
    krabka_group_t *group;
    int owned[SHARDS];                   /* from the events */
    krabka_token_t token[SHARDS];        /* of the last ASSIGNED */
    krabka_leadership_t *lead[SHARDS];   /* taken from the last ASSIGNED */
    int assigned, revoked, stopped;      /* counts of events */
    krabka_err_t stop_code;              /* GROUP_STOPPED's */
};

static struct member mem[MEMBERS];

/* Takes every event waiting in m's queue into m. */
static void drain(struct member *m) {
    krabka_event_t *ev = NULL;
    while (krabka_queue_poll(m->queue, &ev) == KRABKA_OK && ev) {
        krabka_event_type_t t = KRABKA_EVENT_NONE;
        OK(krabka_event_type(ev, &t));
        if (t == KRABKA_EVENT_GROUP) {
            krabka_group_event_kind_t k = 0;
            int32_t s = -1;
            krabka_token_t tok = {0, 0};
            OK(krabka_event_group_kind(ev, &k, ES));
            OK(krabka_event_shard(ev, &s, ES));
            OK(krabka_event_token(ev, &tok, ES));
            CHECK(s >= 0 && s < SHARDS, "%s: shard %d out of range", m->name, (int)s);
            if (s < 0 || s >= SHARDS) {
                krabka_event_destroy(ev);
                continue;
            }
            if (k == KRABKA_SHARD_ASSIGNED) {
                krabka_leadership_t *l = NULL;
                krabka_token_t lt = {0, 0};
                CHECK(!m->owned[s], "%s: ASSIGNED shard %d twice without a REVOKED", m->name, (int)s);
                OK(krabka_event_take_leadership(ev, &l, ES));
                CHECK(l != NULL, "%s: ASSIGNED shard %d carries no leadership", m->name, (int)s);
                if (l) {
                    OK(krabka_leadership_token(l, &lt));
                    CHECK(krabka_token_compare(lt, tok) == 0, "%s: shard %d: the leadership's token differs from the event's",
                          m->name, (int)s);
                }
                if (m->lead[s])
                    krabka_leadership_destroy(m->lead[s]);
                m->lead[s] = l;
                m->token[s] = tok;
                m->owned[s] = 1;
                m->assigned++;
            } else if (k == KRABKA_SHARD_REVOKED) {
                krabka_err_t code = KRABKA_OK;
                OK(krabka_event_error(ev, &code, ES));
                CHECK(m->owned[s], "%s: REVOKED shard %d it did not hold", m->name, (int)s);
                CHECK(code != KRABKA_OK, "%s: REVOKED shard %d without a reason", m->name, (int)s);
                CHECK(krabka_token_compare(tok, m->token[s]) == 0, "%s: REVOKED shard %d names another term's token",
                      m->name, (int)s);
                m->owned[s] = 0;
                m->revoked++;
            } else {
                CHECK(0, "%s: unknown group event kind %d", m->name, (int)k);
            }
        } else if (t == KRABKA_EVENT_GROUP_STOPPED) {
            OK(krabka_event_error(ev, &m->stop_code, ES));
            m->stopped++;
        }
        krabka_event_destroy(ev);
    }
}

static int count_owned(const struct member *m) {
    int n = 0;
    for (int s = 0; s < SHARDS; s++)
        n += m->owned[s];
    return n;
}

/* The shards the library says m holds, as a bitmap; its count. */
static int held(struct member *m, int out[SHARDS]) {
    int32_t buf[SHARDS + 1];
    size_t n = 0;
    memset(out, 0, sizeof(int) * SHARDS);
    OK(krabka_group_held(m->group, buf, SHARDS + 1, &n, ES));
    for (size_t i = 0; i < n && i < SHARDS; i++)
        out[buf[i]] = 1;
    return (int)n;
}

/* Waits (bounded) until the live members' event-derived counts are want[]
 * (-1: not a live member) and every shard is owned exactly once. */
static int settle(const int want[MEMBERS], const char *what) {
    int cnt[MEMBERS] = {0};
    for (int waited = 0; waited < WAIT_MS; waited += 100) {
        int ok = 1, total = 0;
        for (int i = 0; i < MEMBERS; i++) {
            if (want[i] < 0)
                continue;
            drain(&mem[i]);
            cnt[i] = count_owned(&mem[i]);
            total += cnt[i];
            if (cnt[i] != want[i])
                ok = 0;
        }
        if (ok && total == SHARDS) {
            /* every shard exactly once */
            for (int s = 0; s < SHARDS; s++) {
                int owners = 0;
                for (int i = 0; i < MEMBERS; i++)
                    if (want[i] >= 0)
                        owners += mem[i].owned[s];
                CHECK(owners == 1, "%s: shard %d has %d owners", what, s, owners);
            }
            /* the events agree with krabka_group_held */
            for (int i = 0; i < MEMBERS; i++) {
                int h[SHARDS];
                if (want[i] < 0)
                    continue;
                held(&mem[i], h);
                for (int s = 0; s < SHARDS; s++)
                    CHECK(h[s] == mem[i].owned[s], "%s: %s: shard %d: events say %d, held says %d", what, mem[i].name, s,
                          mem[i].owned[s], h[s]);
            }
            return 1;
        }
        sleep_ms(100);
    }
    CHECK(0, "%s: never settled within %d ms (counts %d %d %d, want %d %d %d)", what, WAIT_MS, cnt[0], cnt[1], cnt[2],
          want[0], want[1], want[2]);
    return 0;
}

static void join(struct member *m, const char *bootstrap, const char *group, const char *name, int weight, uint64_t tag) {
    memset(m, 0, sizeof *m);
    m->name = name;
    m->client = new_client(bootstrap, name);
    OK(krabka_queue_new(&m->queue));
    OK(krabka_group_join(m->client, group, KRABKA_NTS, SHARDS, name, KRABKA_NTS, weight, 0, m->queue, tag, &m->group, ES));
    CHECK(m->group != NULL, "group_join gave NULL");
}

static void cleanup(struct member *m) {
    if (m->group)
        OK(krabka_group_destroy(m->group));
    m->group = NULL;
    drain(m);
    for (int s = 0; s < SHARDS; s++)
        if (m->lead[s])
            krabka_leadership_destroy(m->lead[s]);
    memset(m->lead, 0, sizeof m->lead);
    if (m->client)
        krabka_client_destroy(m->client);
    m->client = NULL;
    if (m->queue)
        krabka_queue_destroy(m->queue);
    m->queue = NULL;
}

static void run_cluster(const char *label, const char *bootstrap) {
    char group[128];
    snprintf(group, sizeof group, "c-group-%s-%ld-%d", label, (long)time(NULL), (int)getpid());
    printf("group: %s on %s (%s)\n", group, label, bootstrap);
    join(&mem[0], bootstrap, group, "a", 1, 1);
    join(&mem[1], bootstrap, group, "b", 1, 2);
    join(&mem[2], bootstrap, group, "c", 2, 3);

    /* 1. balance by weight */
    int want1[MEMBERS] = {3, 3, 6};
    if (!settle(want1, "balance 1:1:2"))
        goto out;
    printf("group: %s: balanced 3/3/6 (assigned a=%d b=%d c=%d)\n", label, mem[0].assigned, mem[1].assigned,
           mem[2].assigned);

    /* 2. C leaves: only its shards move */
    int before[2][SHARDS];
    memcpy(before[0], mem[0].owned, sizeof before[0]);
    memcpy(before[1], mem[1].owned, sizeof before[1]);
    int c_had[SHARDS];
    krabka_token_t c_tok[SHARDS];
    memcpy(c_had, mem[2].owned, sizeof c_had);
    memcpy(c_tok, mem[2].token, sizeof c_tok);
    OK(krabka_group_leave(mem[2].group, 60000, ES));
    for (int waited = 0; mem[2].stopped == 0 && waited < WAIT_MS; waited += 100) {
        drain(&mem[2]);
        if (!mem[2].stopped)
            sleep_ms(100);
    }
    CHECK(mem[2].stopped == 1 && mem[2].stop_code == KRABKA_OK, "c: GROUP_STOPPED %d times, code %s", mem[2].stopped,
          krabka_err2name(mem[2].stop_code));
    CHECK(count_owned(&mem[2]) == 0 && mem[2].revoked == mem[2].assigned, "c left holding %d (assigned %d, revoked %d)",
          count_owned(&mem[2]), mem[2].assigned, mem[2].revoked);
    int want2[MEMBERS] = {6, 6, -1};
    if (!settle(want2, "after c left"))
        goto out;
    for (int i = 0; i < 2; i++)
        for (int s = 0; s < SHARDS; s++)
            CHECK(!before[i][s] || mem[i].owned[s], "%s lost shard %d when c left (only c's shards may move)", mem[i].name, s);
    int probed = 0;
    for (int s = 0; s < SHARDS && !probed; s++) {
        if (!c_had[s] || !mem[2].lead[s])
            continue;
        krabka_message_t msg = KRABKA_MESSAGE_INIT;
        msg.topic = "krabka-c-group-never-written";
        msg.value = (const uint8_t *)"stale";
        msg.value_len = 5;
        krabka_err_t e = krabka_leadership_produce(mem[2].lead[s], &msg, 1, 10000, NULL, ES);
        CHECK(e == KRABKA_ERR_NOT_LEADER || e == KRABKA_ERR_FENCED || e == KRABKA_ERR_LEASE_EXPIRED,
              "a write under c's revoked shard %d: %s (%s), want NOT_LEADER, FENCED or LEASE_EXPIRED", s,
              krabka_err2name(e), errstr);
        printf("group: %s: a write under c's revoked shard %d: %s\n", label, s, krabka_err2name(e));
        int owner = mem[0].owned[s] ? 0 : 1;
        CHECK(krabka_token_compare(mem[owner].token[s], c_tok[s]) > 0, "shard %d: the new owner's token does not supersede c's",
              s);
        probed = 1;
    }
    CHECK(probed, "no leadership of c's shards to probe");
    cleanup(&mem[2]);

    /* 3. B dies (its client destroyed, no leave): A takes its shards after the deadline */
    memcpy(before[0], mem[0].owned, sizeof before[0]);
    OK(krabka_client_destroy(mem[1].client));
    mem[1].client = NULL;
    for (int waited = 0; mem[1].stopped == 0 && waited < WAIT_MS; waited += 100) {
        drain(&mem[1]);
        if (!mem[1].stopped)
            sleep_ms(100);
    }
    CHECK(mem[1].stopped == 1 && mem[1].stop_code == KRABKA_ERR_CLOSED, "b: GROUP_STOPPED %d times, code %s (want CLOSED)",
          mem[1].stopped, krabka_err2name(mem[1].stop_code));
    int want3[MEMBERS] = {SHARDS, -1, -1};
    settle(want3, "after b died");
    for (int s = 0; s < SHARDS; s++)
        CHECK(!before[0][s] || mem[0].owned[s], "a lost shard %d when b died", s);
out:
    for (int i = 0; i < MEMBERS; i++)
        cleanup(&mem[i]);
}

/* errstr contains want (case-sensitive). */
#define NAMES(want) CHECK(strstr(errstr, want) != NULL, "errstr \"%s\" does not name %s", errstr, want)

static void misuse(const char *bootstrap) {
    krabka_client_t *c = new_client(bootstrap, "misuse");
    krabka_queue_t *q = NULL;
    krabka_group_t *g = (krabka_group_t *)&g;
    OK(krabka_queue_new(&q));

    CHECK(krabka_group_join(NULL, "g", 1, 4, "m", 1, 1, 0, q, 0, &g, ES) == KRABKA_ERR_INVALID_HANDLE && g == NULL,
          "NULL client: %s", errstr);
    NAMES("krabka_client_t");
    CHECK(krabka_group_join(c, "g", 1, 4, "m", 1, 1, 0, NULL, 0, &g, ES) == KRABKA_ERR_INVALID_HANDLE, "NULL queue: %s",
          errstr);
    NAMES("krabka_queue_t");
    CHECK(krabka_group_join(c, "g", 1, 4, "m", 1, 1, 0, (krabka_queue_t *)c, 0, &g, ES) == KRABKA_ERR_INVALID_HANDLE,
          "a client as the queue: %s", errstr);
    CHECK(krabka_group_join(c, NULL, 1, 4, "m", 1, 1, 0, q, 0, &g, ES) == KRABKA_ERR_INVALID_ARG, "NULL group: %s", errstr);
    NAMES("group");
    CHECK(krabka_group_join(c, "g\xff", 2, 4, "m", 1, 1, 0, q, 0, &g, ES) == KRABKA_ERR_INVALID_ARG, "invalid UTF-8: %s",
          errstr);
    NAMES("UTF-8");
    CHECK(krabka_group_join(c, "", 0, 4, "m", 1, 1, 0, q, 0, &g, ES) != KRABKA_OK, "empty group accepted");
    NAMES("group");
    char longname[KRABKA_NAME_MAX + 1];
    memset(longname, 'g', KRABKA_NAME_MAX - 4);
    longname[KRABKA_NAME_MAX - 4] = '\0';
    krabka_err_t e = krabka_group_join(c, longname, KRABKA_NTS, 4, "m", 1, 1, 0, q, 0, &g, ES);
    CHECK(e != KRABKA_OK && g == NULL, "a group too long for its shards' roles: %s", krabka_err2name(e));
    NAMES("too long");
    CHECK(krabka_group_join(c, "g", 1, 4, NULL, 1, 1, 0, q, 0, &g, ES) == KRABKA_ERR_INVALID_ARG, "NULL member: %s", errstr);
    NAMES("member");
    const int32_t bad_counts[] = {0, -1, KRABKA_GROUP_MAX_SHARDS + 1};
    for (size_t i = 0; i < sizeof bad_counts / sizeof bad_counts[0]; i++) {
        e = krabka_group_join(c, "g", 1, bad_counts[i], "m", 1, 1, 0, q, 0, &g, ES);
        CHECK(e == KRABKA_ERR_INVALID_ARG && g == NULL, "shards %d: %s (%s)", (int)bad_counts[i], krabka_err2name(e), errstr);
        NAMES("count");
        e = krabka_semaphore_join(c, "s", 1, bad_counts[i], "m", 1, 1, 0, q, 0, &g, ES);
        CHECK(e == KRABKA_ERR_INVALID_ARG && g == NULL, "slots %d: %s (%s)", (int)bad_counts[i], krabka_err2name(e), errstr);
        NAMES("slots");
    }
    const int32_t bad_weights[] = {0, -3};
    for (size_t i = 0; i < 2; i++) {
        e = krabka_group_join(c, "g", 1, 4, "m", 1, bad_weights[i], 0, q, 0, &g, ES);
        CHECK(e == KRABKA_ERR_INVALID_ARG && g == NULL, "weight %d: %s (%s)", (int)bad_weights[i], krabka_err2name(e), errstr);
        NAMES("weight");
    }
    CHECK(krabka_group_join(c, "g", 1, 4, "m", 1, 1, 0x40, q, 0, &g, ES) == KRABKA_ERR_INVALID_ARG, "bad flags: %s", errstr);
    NAMES("flags");
    CHECK(krabka_group_join(c, "g", 1, 4, "m", 1, 1, 0, q, 0, NULL, ES) == KRABKA_ERR_INVALID_ARG, "NULL out: %s", errstr);
    NAMES("out");

    /* a live member (ineligible: it takes no shard) */
    char gname[64];
    snprintf(gname, sizeof gname, "c-group-misuse-%d", (int)getpid());
    OK(krabka_group_join(c, gname, KRABKA_NTS, 4, "m", 1, 1, KRABKA_GROUP_INELIGIBLE, q, 9, &g, ES));
    CHECK(krabka_group_set_weight(g, 0, ES) == KRABKA_ERR_INVALID_ARG, "set_weight 0: %s", errstr);
    NAMES("weight");
    OK(krabka_group_set_weight(g, 3, ES));
    OK(krabka_group_set_eligible(g, 0, ES));
    char role[KRABKA_NAME_BUF];
    size_t rn = 0;
    OK(krabka_group_shard_role(g, 3, role, sizeof role, &rn, ES));
    CHECK(rn == strlen(role) && strstr(role, gname) == role && strstr(role, "/shard/3") != NULL, "shard 3's role: %s", role);
    CHECK(krabka_group_shard_role(g, 4, role, sizeof role, &rn, ES) == KRABKA_ERR_INVALID_ARG, "shard 4 of 4: %s", errstr);
    NAMES("shard 4");
    CHECK(krabka_group_shard_role(g, -1, role, sizeof role, &rn, ES) == KRABKA_ERR_INVALID_ARG, "shard -1: %s", errstr);
    CHECK(krabka_group_shard_role(g, 0, role, 3, &rn, ES) == KRABKA_ERR_BUFFER_TOO_SMALL, "a small buffer: %s", errstr);
    size_t n = 99;
    CHECK(krabka_group_held(g, NULL, 0, &n, ES) == KRABKA_OK && n == 0, "held of an ineligible member: %zu", n);
    CHECK(krabka_group_held(g, NULL, 0, NULL, ES) == KRABKA_ERR_INVALID_ARG, "held with a NULL count: %s", errstr);
    NAMES("count");
    CHECK(krabka_group_held(g, NULL, 2, &n, ES) == KRABKA_ERR_INVALID_ARG, "held NULL shards with cap 2: %s", errstr);
    CHECK(krabka_group_set_eligible((krabka_group_t *)c, 1, ES) == KRABKA_ERR_INVALID_HANDLE, "a client as a group: %s",
          errstr);
    NAMES("krabka_group_t");
    OK(krabka_group_destroy(g));
    CHECK(krabka_group_destroy(g) == KRABKA_ERR_INVALID_HANDLE, "destroyed twice");
    CHECK(krabka_group_leave(g, 0, ES) == KRABKA_ERR_INVALID_HANDLE, "leave of a destroyed group: %s", errstr);
    NAMES("destroyed");
    CHECK(krabka_group_destroy(NULL) == KRABKA_ERR_INVALID_HANDLE, "destroy(NULL)");

    /* the last event: GROUP_STOPPED (OK), and the accessors' type checks */
    krabka_event_t *ev = NULL;
    for (int waited = 0; waited < WAIT_MS && !ev; waited += 50) {
        OK(krabka_queue_poll(q, &ev));
        if (!ev)
            sleep_ms(50);
    }
    CHECK(ev != NULL, "no GROUP_STOPPED after destroy");
    if (ev) {
        krabka_event_type_t t = 0;
        krabka_err_t code = KRABKA_ERR_INTERNAL;
        OK(krabka_event_type(ev, &t));
        OK(krabka_event_error(ev, &code, ES));
        CHECK(t == KRABKA_EVENT_GROUP_STOPPED && code == KRABKA_OK, "the last event: type %d, code %s", (int)t,
              krabka_err2name(code));
        krabka_group_event_kind_t k;
        int32_t s;
        CHECK(krabka_event_group_kind(ev, &k, ES) == KRABKA_ERR_INVALID_ARG, "group_kind of GROUP_STOPPED: %s", errstr);
        NAMES("KRABKA_EVENT_GROUP_STOPPED");
        CHECK(krabka_event_shard(ev, &s, ES) == KRABKA_ERR_INVALID_ARG, "shard of GROUP_STOPPED: %s", errstr);
        NAMES("shard");
        CHECK(krabka_event_shard(ev, NULL, ES) == KRABKA_ERR_INVALID_ARG, "shard with NULL out: %s", errstr);
        krabka_event_destroy(ev);
    }
    krabka_queue_destroy(q);
    krabka_client_destroy(c);
}

/* argv[1]: tv2 (misuse and the scenario on $KRABKA_BOOTSTRAP) or tv1 (the
 * scenario on $KRABKA_BOOTSTRAP_TV1); make runs both at once. */
int main(int argc, char **argv) {
    const char *which = argc > 1 ? argv[1] : "";
    const char *env = strcmp(which, "tv1") == 0 ? "KRABKA_BOOTSTRAP_TV1" : "KRABKA_BOOTSTRAP";
    const char *bootstrap = getenv(env);
    if (strcmp(which, "tv1") != 0 && strcmp(which, "tv2") != 0) {
        printf("usage: group tv2|tv1\n");
        return 2;
    }
    if (!bootstrap || !*bootstrap) {
        printf("group: FAIL: %s is not set (run via make test)\n", env);
        return 1;
    }
    if (strcmp(which, "tv2") == 0)
        misuse(bootstrap);
    run_cluster(which, bootstrap);
    printf("group: %d checks, %d failures\n", checks, failures);
    return failures ? 1 : 0;
}
