/*
 * The blind holder: the BROKER refuses a deposed holder's writes made through
 * the library's own write path, while the holder still believes it leads.
 * Runs on transaction.version 2 ($KRABKA_BOOTSTRAP) and 1
 * ($KRABKA_BOOTSTRAP_TV1); the command topic $KRABKA_C_TOPIC (one partition)
 * must exist on both and $KRABKA_KREAD names a built tests/kafka/cmd/kread;
 * `make capi-blind` does all of that. A missing variable fails the test.
 *
 * How the successor mints unseen: client A follows coordination topic T1,
 * client B follows a DIFFERENT coordination topic T2 (krabka.topic). The role
 * name is the same, so the transactional.id is the same: B's acquire runs
 * InitProducerId on that id and the transaction coordinator mints a newer
 * epoch, but B's lease goes to T2, which A's live view never reads. A's view
 * of T1 still shows A's own lease, so A's leadership stays ACTIVE and nothing
 * local can answer FENCED: the only thing that stands between A and the
 * command topic is the broker comparing A's (producer id, epoch) with the
 * coordinator's. (With one shared coordination topic A's view would see B's
 * lease and end the leadership itself, the early FENCED that live.c and
 * events.c show; that path never reaches the broker.)
 *
 * For each cluster and each op of A in [produce, batch produce, renew,
 * resign], with a fresh A/B pair and role (after a refusal A's leadership
 * has ended, so a second op would be answered locally):
 *   1. A acquires the role as "old" and writes "old-before-<op>" to C.
 *   2. B acquires it as "new" (a newer token); A is still ACTIVE.
 *      B writes "new-<op>-1".
 *   3. A does op ("old-after-produce"; "old-after-batch-1..3"; renew;
 *      resign): KRABKA_ERR_FENCED, and errstr carries the broker's error
 *      (PRODUCER_FENCED or INVALID_PRODUCER_EPOCH), not the view's message.
 *   4. B writes "new-<op>-2" under an unchanged token.
 *   5. describe on T1: the coordinator's token is B's, the lease there is
 *      still A's acquire lease (the refused renewal or resignation left no
 *      lease and no tombstone), "old" is still registered.
 * krabka_leadership_confirm (and its async form) answers along the way:
 * current 1 for A before B minted; 0 for A after B's mint while A is still
 * ACTIVE (the confirm ends nothing), 1 for B; FENCED with current 0 once the
 * broker refused A.
 * At the end kread reads C back (read_committed): no "old-after-*" value,
 * every "old-before-*" under A's token and every "new-*" under B's token
 * exactly once, in the order they were written.
 */
#include <inttypes.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "krabka_coord.h"

#define CHECK_NAME "blind"
#include "check.h"

enum { OP_PRODUCE, OP_BATCH, OP_RENEW, OP_RESIGN, NOPS };
static const char *op_names[NOPS] = {"produce", "batch", "renew", "resign"};
enum { BATCH = 3 };

/* What one op of one cluster wrote, for the log check. */
struct run {
    const char *tv;
    char role[128];
    krabka_token_t ta, tb; /* A's and B's tokens */
};

static const char *topic, *kread;
static char run_id[64];

static int64_t now_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static krabka_client_t *new_client(const char *bootstrap, const char *coord_topic, const char *id) {
    krabka_conf_t *conf = krabka_conf_new();
    krabka_client_t *c = NULL;
    OK(krabka_conf_set(conf, "bootstrap.servers", bootstrap, ES));
    OK(krabka_conf_set(conf, "client.id", id, ES));
    OK(krabka_conf_set(conf, "krabka.topic", coord_topic, ES));
    OK(krabka_conf_set(conf, "krabka.topic.partitions", "1", ES));
    /* No background renewal (the default, said here because it matters): a
     * renewal of A's on its own would meet the broker's refusal before the
     * op under test does. The lease outlives one op by far. */
    OK(krabka_conf_set(conf, "krabka.renew.background", "false", ES));
    OK(krabka_conf_set(conf, "krabka.lease.ms", "60000", ES));
    OK(krabka_conf_set(conf, "krabka.renew.interval.ms", "20000", ES));
    OK(krabka_conf_set(conf, "krabka.challenge.stagger.ms", "500", ES));
    OK(krabka_conf_set(conf, "krabka.poll.interval.ms", "200", ES));
    OK(krabka_conf_set(conf, "request.timeout.ms", "30000", ES));
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

static krabka_message_t command(const struct run *r, const char *value) {
    krabka_message_t m = {sizeof(krabka_message_t), topic, 0, (const uint8_t *)r->role, strlen(r->role), (const uint8_t *)value,
                          strlen(value), NULL, 0};
    return m;
}

/* A guarded write of one command (partition 0 of C, keyed by the role). */
static krabka_err_t write1(krabka_leadership_t *l, const struct run *r, const char *value) {
    krabka_message_t m = command(r, value);
    krabka_produce_result_t res = {-1, -1};
    errstr[0] = '\0';
    krabka_err_t e = krabka_leadership_produce(l, &m, 1, 30000, &res, ES);
    if (e == KRABKA_OK)
        CHECK(res.partition == 0 && res.offset >= 0, "%s landed at %d/%" PRId64, value, res.partition, res.offset);
    return e;
}

/* The refusal is the broker's: its error code is in the text, and it is
 * neither of the library's local FENCED messages (core/coord: the live view's
 * "the log shows a lease of ... which supersedes this leadership's token",
 * and "acquired again by this client" for a second acquire on one client). */
static int broker_refusal(const char *s) {
    return (strstr(s, "PRODUCER_FENCED") != NULL || strstr(s, "INVALID_PRODUCER_EPOCH") != NULL) &&
           strstr(s, "the log shows a lease") == NULL && strstr(s, "supersedes this leadership") == NULL &&
           strstr(s, "acquired again") == NULL;
}

static void check_describe(krabka_client_t *c, const struct run *r, const char *holder, krabka_token_t lease_token,
                           const krabka_lease_t *want_lease, int want_current, const char *where) {
    krabka_status_t *st = NULL;
    krabka_token_t cur_token = {-2, -2};
    int has = 0, cur = -1, has_lease = 0;
    char name[KRABKA_NAME_BUF] = "";
    size_t len = 0, count = 0;
    int64_t removed = -1;
    krabka_lease_t lease;
    krabka_roster_entry_t e;
    memset(&lease, 0, sizeof lease);
    OK(krabka_client_describe(c, r->role, KRABKA_NTS, 30000, &st, ES));
    OK(krabka_status_holder(st, &has, name, sizeof name, &len));
    OK(krabka_status_token(st, &cur_token));
    OK(krabka_status_current(st, &cur));
    OK(krabka_status_lease(st, &has_lease, &lease));
    OK(krabka_status_roster_count(st, &count));
    OK(krabka_status_removed(st, &removed));
    CHECK(has && strcmp(name, holder) == 0, "%s %s: holder %s, want %s", r->tv, where, has ? name : "(none)", holder);
    CHECK(krabka_token_compare(cur_token, r->tb) == 0,
          "%s %s: the coordinator's token %" PRId64 ":%d, want B's %" PRId64 ":%d", r->tv, where,
          cur_token.producer_id, cur_token.producer_epoch, r->tb.producer_id, r->tb.producer_epoch);
    CHECK(cur == want_current, "%s %s: current %d, want %d", r->tv, where, cur, want_current);
    CHECK(has_lease && krabka_token_compare(lease.token, lease_token) == 0, "%s %s: lease token %" PRId64 ":%d",
          r->tv, where, lease.token.producer_id, lease.token.producer_epoch);
    if (want_lease)
        CHECK(has_lease && lease.granted_at == want_lease->granted_at && lease.deadline == want_lease->deadline &&
                  lease.deadline > lease.granted_at,
              "%s %s: the lease was granted at %" PRId64 " until %" PRId64 ", want A's acquire lease %" PRId64
              " until %" PRId64,
              r->tv, where, lease.granted_at, lease.deadline, want_lease->granted_at, want_lease->deadline);
    CHECK(count == 1 && removed == 0, "%s %s: %zu members, %" PRId64 " removed", r->tv, where, count, removed);
    if (count == 1) {
        OK(krabka_status_roster_entry(st, 0, &e));
        CHECK(strcmp(e.member, holder) == 0, "%s %s: registered %s, want %s", r->tv, where, e.member, holder);
    }
    OK(krabka_status_destroy(st));
}

/* krabka_leadership_confirm of l: checks the code and *current against
 * want_code and want_current, then the same through
 * krabka_leadership_confirm_async (a KRABKA_EVENT_CONFIRM on a queue of its
 * own, read with krabka_event_confirmed). */
static void check_confirm(krabka_leadership_t *l, krabka_err_t want_code, int want_current, const char *tv,
                          const char *name, const char *who) {
    int current = -1;
    errstr[0] = '\0';
    krabka_err_t e = krabka_leadership_confirm(l, 30000, &current, ES);
    CHECK(e == want_code && current == want_current, "%s %s: confirm of %s: %s (%s), current %d; want %s, %d", tv,
          name, who, krabka_err2name(e), errstr, current, krabka_err2name(want_code), want_current);

    krabka_queue_t *q = NULL;
    krabka_event_t *ev = NULL;
    krabka_event_type_t type = KRABKA_EVENT_NONE;
    krabka_err_t code = KRABKA_ERR_INTERNAL;
    int fd = -1;
    OK(krabka_queue_new(&q));
    OK(krabka_queue_fd(q, &fd));
    OK(krabka_leadership_confirm_async(l, 30000, q, 77, ES));
    for (int i = 0; i < 450 && !ev; i++) { /* up to 90 s */
        OK(krabka_queue_poll(q, &ev));
        if (!ev) {
            struct pollfd p = {fd, POLLIN, 0};
            poll(&p, 1, 200);
        }
    }
    CHECK(ev != NULL, "%s %s: no CONFIRM event for %s within 90 s", tv, name, who);
    if (ev) {
        uint64_t tag = 0;
        current = -1;
        OK(krabka_event_type(ev, &type));
        OK(krabka_event_tag(ev, &tag));
        OK(krabka_event_error(ev, &code, NULL, 0));
        OK(krabka_event_confirmed(ev, &current, ES));
        CHECK(type == KRABKA_EVENT_CONFIRM && tag == 77 && code == want_code && current == want_current,
              "%s %s: confirm_async of %s: type %d tag %" PRIu64 " %s, current %d; want %s, %d", tv, name, who,
              (int)type, tag, krabka_err2name(code), current, krabka_err2name(want_code), want_current);
        OK(krabka_event_destroy(ev));
    }
    OK(krabka_queue_destroy(q));
}

static void blind_op(const char *tv, const char *bootstrap, int op, struct run *r) {
    char t1[160], t2[160], value[64];
    const char *name = op_names[op];
    r->tv = tv;
    snprintf(r->role, sizeof r->role, "capi-blind-%s-%s-%s", run_id, tv, name);
    snprintf(t1, sizeof t1, "krabka-capi-blind-%s-t1", run_id);
    snprintf(t2, sizeof t2, "krabka-capi-blind-%s-t2", run_id);

    krabka_client_t *ca = new_client(bootstrap, t1, "capi-blind-a"), *cb = NULL;
    krabka_leadership_t *la = NULL, *lb = NULL;
    krabka_lease_t lease_a;
    krabka_err_t code = KRABKA_ERR_INTERNAL;

    /* 1. */
    OK(krabka_client_acquire(ca, r->role, KRABKA_NTS, "old", KRABKA_NTS, 60000, &la, ES));
    r->ta = token_of(la);
    snprintf(value, sizeof value, "old-before-%s", name);
    OK(write1(la, r, value));
    OK(krabka_leadership_lease(la, &lease_a));
    check_confirm(la, KRABKA_OK, 1, tv, name, "A before B minted");

    /* 2. */
    cb = new_client(bootstrap, t2, "capi-blind-b");
    OK(krabka_client_acquire(cb, r->role, KRABKA_NTS, "new", KRABKA_NTS, 60000, &lb, ES));
    r->tb = token_of(lb);
    CHECK(krabka_token_supersedes(r->tb, r->ta), "%s %s: B's token %" PRId64 ":%d does not supersede A's %" PRId64 ":%d",
          tv, name, r->tb.producer_id, r->tb.producer_epoch, r->ta.producer_id, r->ta.producer_epoch);
    CHECK(state_of(la) == KRABKA_LEADERSHIP_ACTIVE, "%s %s: A learned of B before writing (state %d): the test "
          "would not reach the broker", tv, name, state_of(la));
    OK(krabka_leadership_end_error(la, &code, NULL, 0));
    CHECK(code == KRABKA_OK, "%s %s: A's end_error before the op: %s", tv, name, krabka_err2name(code));
    snprintf(value, sizeof value, "new-%s-1", name);
    OK(write1(lb, r, value));
    check_confirm(la, KRABKA_OK, 0, tv, name, "A after B's mint");
    check_confirm(lb, KRABKA_OK, 1, tv, name, "B");
    CHECK(state_of(la) == KRABKA_LEADERSHIP_ACTIVE, "%s %s: A's state after a false confirm %d, want ACTIVE", tv,
          name, state_of(la));

    /* 3. */
    krabka_err_t e = KRABKA_OK;
    errstr[0] = '\0';
    switch (op) {
    case OP_PRODUCE:
        e = write1(la, r, "old-after-produce");
        break;
    case OP_BATCH: {
        char vals[BATCH][32];
        krabka_message_t ms[BATCH];
        krabka_produce_result_t res[BATCH];
        for (int i = 0; i < BATCH; i++) {
            snprintf(vals[i], sizeof vals[i], "old-after-batch-%d", i + 1);
            ms[i] = command(r, vals[i]);
        }
        e = krabka_leadership_produce(la, ms, BATCH, 30000, res, ES);
        break;
    }
    case OP_RENEW:
        e = krabka_leadership_renew(la, 30000, ES);
        break;
    case OP_RESIGN:
        e = krabka_leadership_resign(la, 30000, ES);
        break;
    }
    CHECK(e == KRABKA_ERR_FENCED, "%s %s: A's %s gave %s (%s)", tv, name, name, krabka_err2name(e), errstr);
    CHECK(broker_refusal(errstr), "%s %s: A's %s was not refused by the broker: %s", tv, name, name, errstr);
    printf("blind: %s %s: A (token %" PRId64 ":%d, B holds %" PRId64 ":%d): %s: %s\n", tv, name,
           r->ta.producer_id, r->ta.producer_epoch, r->tb.producer_id, r->tb.producer_epoch, krabka_err2name(e),
           errstr);
    /* A refused resign ends the leadership FENCED too, with the broker's
     * error: the resignation never happened. */
    CHECK(state_of(la) == KRABKA_LEADERSHIP_FENCED, "%s %s: A's state after the refusal %d, want FENCED", tv, name,
          state_of(la));
    {
        char reason[512] = "";
        OK(krabka_leadership_end_error(la, &code, reason, sizeof reason));
        CHECK(code == KRABKA_ERR_FENCED && broker_refusal(reason), "%s %s: A's end_error %s: %s", tv, name,
              krabka_err2name(code), reason);
    }

    check_confirm(la, KRABKA_ERR_FENCED, 0, tv, name, "A after the refusal");

    /* 4. */
    snprintf(value, sizeof value, "new-%s-2", name);
    OK(write1(lb, r, value));
    krabka_token_t tb2 = token_of(lb);
    CHECK(krabka_token_compare(tb2, r->tb) == 0, "%s %s: B's token moved to %" PRId64 ":%d", tv, name,
          tb2.producer_id, tb2.producer_epoch);

    /* 5. T1 still holds A's acquire lease, now stale at the coordinator;
     * T2 holds B's, current. */
    check_describe(ca, r, "old", r->ta, &lease_a, 0, "describe of T1");
    check_describe(cb, r, "new", r->tb, NULL, 1, "describe of T2");

    OK(krabka_leadership_destroy(la));
    OK(krabka_leadership_destroy(lb));
    OK(krabka_client_destroy(ca));
    OK(krabka_client_destroy(cb));
}

/* A minimal reader of one kread line, a flat JSON object whose values are
 * strings, integers or the object "headers" (skipped). */
struct record {
    char key[256], value[256];
    long long partition, offset, producer_id, producer_epoch;
};

static const char *json_string(const char *p, char *out, size_t size) {
    size_t n = 0;
    if (*p != '"')
        return NULL;
    for (p++; *p && *p != '"'; p++) {
        if (*p == '\\' && p[1])
            p++; /* our keys and values have no escapes; keep the char after a backslash */
        if (out && n + 1 < size)
            out[n++] = *p;
    }
    if (out && size)
        out[n] = '\0';
    return *p == '"' ? p + 1 : NULL;
}

static int parse_record(const char *p, struct record *rec) {
    memset(rec, 0, sizeof *rec);
    rec->partition = rec->offset = rec->producer_id = rec->producer_epoch = -99;
    if (*p++ != '{')
        return 0;
    while (*p && *p != '}') {
        char field[32];
        if (!(p = json_string(p, field, sizeof field)) || *p++ != ':')
            return 0;
        if (*p == '"') {
            char *dst = strcmp(field, "key") == 0 ? rec->key : strcmp(field, "value") == 0 ? rec->value : NULL;
            if (!(p = json_string(p, dst, sizeof rec->key)))
                return 0;
        } else if (*p == '{') {
            int depth = 0;
            for (; *p; p++) {
                if (*p == '"') {
                    if (!(p = json_string(p, NULL, 0)))
                        return 0;
                    p--;
                } else if (*p == '{') {
                    depth++;
                } else if (*p == '}' && --depth == 0) {
                    p++;
                    break;
                }
            }
        } else {
            char *end;
            long long v = strtoll(p, &end, 10);
            if (end == p)
                return 0;
            p = end;
            if (strcmp(field, "partition") == 0)
                rec->partition = v;
            else if (strcmp(field, "offset") == 0)
                rec->offset = v;
            else if (strcmp(field, "producer_id") == 0)
                rec->producer_id = v;
            else if (strcmp(field, "producer_epoch") == 0)
                rec->producer_epoch = v;
        }
        if (*p == ',')
            p++;
    }
    return *p == '}';
}

/* Reads C back from one cluster and checks the records of its runs. */
static void check_log(const char *tv, const char *bootstrap, struct run *runs) {
    char cmd[1024], line[8192];
    /* expected values per op: old-before, new-1, new-2 */
    int seen[NOPS][3] = {{0}};
    long long offs[NOPS][3];
    int lines = 0, ours = 0;
    snprintf(cmd, sizeof cmd, "'%s' '%s' '%s'", kread, bootstrap, topic);
    FILE *f = popen(cmd, "r");
    CHECK(f != NULL, "%s: popen %s", tv, cmd);
    if (!f)
        return;
    while (fgets(line, sizeof line, f)) {
        struct record rec;
        lines++;
        CHECK(strchr(line, '\n') != NULL, "%s: kread line %d longer than %zu bytes", tv, lines, sizeof line);
        CHECK(parse_record(line, &rec), "%s: kread line does not parse: %s", tv, line);
        int op = -1;
        for (int i = 0; i < NOPS; i++)
            if (strcmp(rec.key, runs[i].role) == 0)
                op = i;
        if (op < 0)
            continue; /* another run's record */
        ours++;
        const struct run *r = &runs[op];
        const char *name = op_names[op];
        char want[3][64];
        snprintf(want[0], sizeof want[0], "old-before-%s", name);
        snprintf(want[1], sizeof want[1], "new-%s-1", name);
        snprintf(want[2], sizeof want[2], "new-%s-2", name);
        CHECK(strncmp(rec.value, "old-after-", 10) != 0,
              "%s %s: the deposed holder's write %s is in the log at offset %lld (producer %lld:%lld)", tv, name,
              rec.value, rec.offset, rec.producer_id, rec.producer_epoch);
        int k = -1;
        for (int i = 0; i < 3; i++)
            if (strcmp(rec.value, want[i]) == 0)
                k = i;
        CHECK(k >= 0 || strncmp(rec.value, "old-after-", 10) == 0, "%s %s: unexpected value %s in the log", tv,
              name, rec.value);
        if (k < 0)
            continue;
        krabka_token_t t = k == 0 ? r->ta : r->tb;
        CHECK(rec.producer_id == t.producer_id && rec.producer_epoch == t.producer_epoch,
              "%s %s: %s carries %lld:%lld, want %s's token %" PRId64 ":%d", tv, name, rec.value, rec.producer_id,
              rec.producer_epoch, k == 0 ? "A" : "B", t.producer_id, t.producer_epoch);
        CHECK(rec.partition == 0, "%s %s: %s in partition %lld", tv, name, rec.value, rec.partition);
        seen[op][k]++;
        offs[op][k] = rec.offset;
    }
    int rc = pclose(f);
    CHECK(rc == 0, "%s: %s exited with status %d", tv, cmd, rc);
    for (int op = 0; op < NOPS; op++) {
        for (int k = 0; k < 3; k++)
            CHECK(seen[op][k] == 1, "%s %s: expected value %d of the op seen %d times", tv, op_names[op], k,
                  seen[op][k]);
        if (seen[op][0] == 1 && seen[op][1] == 1 && seen[op][2] == 1)
            CHECK(offs[op][0] < offs[op][1] && offs[op][1] < offs[op][2],
                  "%s %s: offsets %lld, %lld, %lld out of order", tv, op_names[op], offs[op][0], offs[op][1],
                  offs[op][2]);
    }
    printf("blind: %s: kread read %d committed records of %s, %d of this run: no old-after-*, every "
           "old-before-* under A's token and new-* under B's\n",
           tv, lines, topic, ours);
}

int main(void) {
    const char *tv2 = getenv("KRABKA_BOOTSTRAP"), *tv1 = getenv("KRABKA_BOOTSTRAP_TV1");
    topic = getenv("KRABKA_C_TOPIC");
    kread = getenv("KRABKA_KREAD");
    if (!tv2 || !*tv2 || !tv1 || !*tv1 || !topic || !*topic || !kread || !*kread) {
        fprintf(stderr, "blind: set KRABKA_BOOTSTRAP (transaction.version 2) and KRABKA_BOOTSTRAP_TV1 "
                        "(transaction.version 1), running brokers (see tests/kafka), KRABKA_C_TOPIC (a topic of "
                        "one partition on both) and KRABKA_KREAD (a built tests/kafka/cmd/kread); "
                        "`make capi-blind` does the last two. Missing:%s%s%s%s\n",
                (!tv2 || !*tv2) ? " KRABKA_BOOTSTRAP" : "", (!tv1 || !*tv1) ? " KRABKA_BOOTSTRAP_TV1" : "",
                (!topic || !*topic) ? " KRABKA_C_TOPIC" : "", (!kread || !*kread) ? " KRABKA_KREAD" : "");
        return 2;
    }
    snprintf(run_id, sizeof run_id, "%" PRId64 "-%ld", now_ms(), (long)getpid());

    const char *tvs[2] = {"tv2", "tv1"}, *boots[2] = {tv2, tv1};
    static struct run runs[2][NOPS];
    for (int c = 0; c < 2; c++)
        for (int op = 0; op < NOPS; op++)
            blind_op(tvs[c], boots[c], op, &runs[c][op]);
    for (int c = 0; c < 2; c++)
        check_log(tvs[c], boots[c], runs[c]);

    printf("blind: %d checks, %d passed, %d failed\n", checks, checks - failures, failures);
    return failures ? 1 : 0;
}
