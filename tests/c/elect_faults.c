/* The elector through the C ABI under forced failovers and a cut link, on
 * $KRABKA_BOOTSTRAP (transaction.version 2). `make capi-elect-faults` runs
 * it. Two parts:
 *
 *   1. Failovers: three candidates for one role, A and B (electors in this
 *      process, tags 1 and 2, one queue) and C (an elector in a child
 *      process: this program re-executed as `elect_faults child ...`, which
 *      reports its term events as lines on a pipe and takes "eligible N"
 *      lines; it is a candidate only in the rounds that kill or pause it).
 *      Rounds until 20 holder changes were seen, cycling through: the
 *      holder's client destroyed without a resign (its lease runs out), the
 *      holder's elector destroyed (it resigns) and made again, the holder
 *      withdraws
 *      (set_eligible 0, then 1 again), C killed (SIGKILL) while it holds, C
 *      paused (SIGSTOP) past its lease while it holds: A or B takes over,
 *      and C, continued, reports its term STOPPED (FENCED, EXPIRED or
 *      LOST_AT_RISK) and campaigns again (it shows up in the roster).
 *      Checked: every STARTED carries a token that supersedes every token
 *      seen before it (no double mint), and per elector (each child process
 *      counts as one) STARTED and STOPPED alternate with the same term
 *      number, terms counting 1, 2, ...; only a killed child may leave its
 *      last term without a STOPPED.
 *   2. A cut link: an elector whose client reaches the broker only through
 *      a fault proxy (build/kproxy on $KRABKA_BOOTSTRAP_X1, the broker's
 *      extra listener) wins a term; the link is cut; the term's AT_RISK
 *      must come before its STOPPED (EXPIRED or LOST_AT_RISK), and before
 *      the lease deadline the event carries. The lead (deadline minus the
 *      instant AT_RISK was read) is printed, not checked against a number.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "krabka_coord.h"

#define CHECK_NAME "elect_faults"
#include "check.h"

extern char **environ;

#define WAIT_MS 60000 /* the bound of every wait (not a timing check) */
#define FAILOVERS 20
#define LEASE_MS "2000"

static int64_t now_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static void sleep_ms(long ms) {
    struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
    nanosleep(&ts, NULL);
}

static krabka_client_t *new_client(const char *bootstrap, const char *id, const char *lease_ms) {
    krabka_conf_t *conf = krabka_conf_new();
    krabka_client_t *c = NULL;
    char renew[32];
    snprintf(renew, sizeof renew, "%ld", atol(lease_ms) / 4);
    OK(krabka_conf_set(conf, "bootstrap.servers", bootstrap, ES));
    OK(krabka_conf_set(conf, "client.id", id, ES));
    OK(krabka_conf_set(conf, "krabka.lease.ms", lease_ms, ES));
    OK(krabka_conf_set(conf, "krabka.renew.interval.ms", renew, ES));
    OK(krabka_conf_set(conf, "krabka.challenge.stagger.ms", "500", ES));
    OK(krabka_conf_set(conf, "krabka.poll.interval.ms", "200", ES));
    OK(krabka_conf_set(conf, "request.timeout.ms", "5000", ES));
    OK(krabka_client_new(conf, &c, ES));
    OK(krabka_conf_destroy(conf));
    return c;
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

static krabka_stop_reason_t reason_of(const krabka_event_t *ev) {
    krabka_stop_reason_t r = KRABKA_STOP_NONE;
    OK(krabka_event_stop_reason(ev, &r, ES));
    return r;
}

/* The next event of q, NULL when it is empty. */
static krabka_event_t *poll_one(krabka_queue_t *q) {
    krabka_event_t *ev = NULL;
    OK(krabka_queue_poll(q, &ev));
    return ev;
}

/* ---- the child: one elector, its events as lines on stdout ---- */

static int child(const char *bootstrap, const char *role, const char *member) {
    krabka_client_t *c = new_client(bootstrap, member, LEASE_MS);
    krabka_queue_t *q = NULL;
    krabka_elector_t *e = NULL;
    int fd = -1;
    OK(krabka_queue_new(&q));
    OK(krabka_queue_fd(q, &fd));
    OK(krabka_elector_new(c, role, KRABKA_NTS, member, KRABKA_NTS, KRABKA_ELECT_INELIGIBLE, q, 1, &e, ES));
    printf("READY\n");
    fflush(stdout);
    char cmd[256];
    size_t clen = 0;
    for (;;) {
        struct pollfd p[2] = {{fd, POLLIN, 0}, {0, POLLIN, 0}};
        poll(p, 2, 1000);
        if (p[1].revents & (POLLIN | POLLHUP)) { /* "eligible N" lines; closed: the parent is done */
            ssize_t r = read(0, cmd + clen, sizeof cmd - clen - 1);
            if (r <= 0)
                break;
            clen += (size_t)r;
            char *nl;
            while ((nl = memchr(cmd, '\n', clen)) != NULL) {
                int on = -1;
                *nl = '\0';
                if (sscanf(cmd, "eligible %d", &on) == 1) {
                    OK(krabka_elector_set_eligible(e, on, KRABKA_TIMEOUT_DEFAULT, ES));
                    printf("ELIGIBLE %d\n", on);
                    fflush(stdout);
                }
                clen -= (size_t)(nl + 1 - cmd);
                memmove(cmd, nl + 1, clen);
            }
        }
        krabka_event_t *ev = NULL;
        for (ev = poll_one(q); ev; ev = poll_one(q)) {
            krabka_token_t t = {0, 0};
            krabka_term_event_kind_t k = kind_of(ev);
            if (k == KRABKA_TERM_STARTED || k == KRABKA_TERM_STOPPED) {
                OK(krabka_event_token(ev, &t, ES));
                printf("%s %" PRIu64 " %" PRId64 " %d %d\n", k == KRABKA_TERM_STARTED ? "STARTED" : "STOPPED",
                       term_of(ev), t.producer_id, (int)t.producer_epoch, (int)reason_of(ev));
                fflush(stdout);
            }
            OK(krabka_event_destroy(ev));
        }
    }
    OK(krabka_elector_destroy(e));
    OK(krabka_queue_destroy(q));
    OK(krabka_client_destroy(c));
    return 0;
}

/* ---- processes the parent starts ---- */

typedef struct {
    pid_t pid;
    int in, out; /* our ends: its stdin, its stdout */
    char buf[4096];
    size_t len;
    int eof; /* its stdout reached end of file */
} proc_t;

static void spawn(proc_t *p, char *const argv[]) {
    int in[2], out[2];
    CHECK(pipe(in) == 0 && pipe(out) == 0, "pipe: %s", strerror(errno));
    posix_spawn_file_actions_t fa;
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_adddup2(&fa, in[0], 0);
    posix_spawn_file_actions_adddup2(&fa, out[1], 1);
    posix_spawn_file_actions_addclose(&fa, in[1]);
    posix_spawn_file_actions_addclose(&fa, out[0]);
    int rc = posix_spawn(&p->pid, argv[0], &fa, NULL, argv, environ);
    posix_spawn_file_actions_destroy(&fa);
    if (rc != 0) {
        CHECK(0, "posix_spawn %s: %s", argv[0], strerror(rc));
        exit(1);
    }
    close(in[0]);
    close(out[1]);
    p->in = in[1];
    p->out = out[0];
    p->len = 0;
    p->eof = 0;
    fcntl(p->out, F_SETFD, FD_CLOEXEC);
    fcntl(p->in, F_SETFD, FD_CLOEXEC);
}

/* The next line the process wrote (without its newline), waiting at most
 * ms; NULL on timeout or end of file. */
static const char *read_line(proc_t *p, int ms) {
    static char line[4096];
    int64_t until = now_ms() + ms;
    for (;;) {
        char *nl = memchr(p->buf, '\n', p->len);
        if (nl) {
            size_t n = (size_t)(nl - p->buf);
            memcpy(line, p->buf, n);
            line[n] = '\0';
            memmove(p->buf, nl + 1, p->len - n - 1);
            p->len -= n + 1;
            return line;
        }
        if (p->eof)
            return NULL;
        int left = (int)(until - now_ms());
        struct pollfd pf = {p->out, POLLIN, 0};
        if (poll(&pf, 1, left > 0 ? left : 0) <= 0) {
            if (left <= 0)
                return NULL;
            continue;
        }
        ssize_t r = read(p->out, p->buf + p->len, sizeof p->buf - p->len - 1);
        if (r <= 0) {
            p->eof = 1;
            return NULL;
        }
        p->len += (size_t)r;
    }
}

static void say(proc_t *p, const char *cmd) {
    size_t n = strlen(cmd);
    CHECK(write(p->in, cmd, n) == (ssize_t)n, "write %s: %s", cmd, strerror(errno));
}

/* Ends a process: stdin closed (it leaves by itself), then SIGKILL if it
 * did not within a few seconds; reaped. */
static void finish(proc_t *p) {
    if (p->pid <= 0)
        return;
    close(p->in);
    int st = 0;
    for (int i = 0; i < 100 && waitpid(p->pid, &st, WNOHANG) == 0; i++)
        sleep_ms(100);
    if (waitpid(p->pid, &st, WNOHANG) == 0) {
        kill(p->pid, SIGKILL);
        waitpid(p->pid, &st, 0);
    }
    close(p->out);
    p->pid = 0;
}

/* ---- the event log of part 1 ---- */

#define MAXLOG 512
static struct {
    int who; /* 1 A, 2 B, 100+k the k-th child */
    krabka_term_event_kind_t kind;
    uint64_t term;
} elog[MAXLOG];
static int nlog;
static krabka_token_t max_token = {-1, -1};
static int starts_seen;

static void log_event(int who, krabka_term_event_kind_t kind, uint64_t term, krabka_token_t t) {
    if (nlog < MAXLOG) {
        elog[nlog].who = who, elog[nlog].kind = kind, elog[nlog].term = term;
        nlog++;
    }
    if (kind == KRABKA_TERM_STARTED) {
        CHECK(krabka_token_compare(t, max_token) > 0,
              "elector %d STARTED term %" PRIu64 " with token %" PRId64 ":%d, which does not supersede %" PRId64
              ":%d seen before (a double mint)",
              who, term, t.producer_id, (int)t.producer_epoch, max_token.producer_id, (int)max_token.producer_epoch);
        if (krabka_token_compare(t, max_token) > 0)
            max_token = t;
        starts_seen++;
    }
}

typedef struct {
    krabka_client_t *client;
    krabka_elector_t *elector;
    const char *member;
    int tag;
} cand_t;

static cand_t cand[3]; /* [1] A, [2] B */
static int next_tag = 1; /* each elector made gets a tag of its own (< 100) */

/* The candidate (1 A, 2 B) whose current or earlier elector has tag, or
 * the child's who (>= 100). */
static int slot_of(int who) {
    if (who >= 100)
        return who;
    for (int i = 1; i <= 2; i++)
        if (cand[i].tag == who)
            return i;
    return -who; /* an elector that is gone */
}
static krabka_queue_t *q;
static proc_t kid;
static int kid_no; /* which child incarnation runs (who = 100 + kid_no) */
static krabka_stop_reason_t kid_last_stop;
static int kid_acks; /* ELIGIBLE lines the child wrote */
static const char *bootstrap, *role;
static char self[4096];

/* Drains the queue and the child's pipe for up to ms (0: what is there);
 * returns the who of the first STARTED seen, else 0. STOPPED events are
 * destroyed at once (which releases their terms). */
static int pump(int ms) {
    int64_t until = now_ms() + ms;
    int qfd = -1;
    OK(krabka_queue_fd(q, &qfd));
    for (;;) {
        int got = 0;
        krabka_event_t *ev = NULL;
        for (ev = poll_one(q); ev; ev = poll_one(q)) {
            uint64_t tag = 0;
            OK(krabka_event_tag(ev, &tag));
            krabka_term_event_kind_t k = kind_of(ev);
            if (k == KRABKA_TERM_STARTED || k == KRABKA_TERM_STOPPED) {
                krabka_token_t t = {0, 0};
                OK(krabka_event_token(ev, &t, ES));
                log_event((int)tag, k, term_of(ev), t);
                if (k == KRABKA_TERM_STARTED && !got)
                    got = (int)tag;
            }
            OK(krabka_event_destroy(ev));
        }
        if (kid.pid > 0 && !kid.eof) {
            const char *l;
            while ((l = read_line(&kid, 0)) != NULL) {
                char what[16];
                uint64_t term = 0;
                long long pid = 0;
                int epoch = 0, reason = 0;
                if (sscanf(l, "ELIGIBLE %d", &reason) == 1)
                    kid_acks++;
                else if (sscanf(l, "%15s %" SCNu64 " %lld %d %d", what, &term, &pid, &epoch, &reason) == 5) {
                    krabka_token_t t = {(int64_t)pid, (int16_t)epoch};
                    int started = strcmp(what, "STARTED") == 0;
                    log_event(100 + kid_no, started ? KRABKA_TERM_STARTED : KRABKA_TERM_STOPPED, term, t);
                    if (started && !got)
                        got = 100 + kid_no;
                    if (!started)
                        kid_last_stop = (krabka_stop_reason_t)reason;
                }
            }
        }
        if (got)
            return got;
        int left = (int)(until - now_ms());
        if (left <= 0)
            return 0;
        struct pollfd pf[2] = {{qfd, POLLIN, 0}, {kid.pid > 0 && !kid.eof ? kid.out : -1, POLLIN, 0}};
        poll(pf, 2, left < 100 ? left : 100);
    }
}

/* Waits for the next STARTED of anyone; fails the test after WAIT_MS. */
static int next_holder(void) {
    int who = pump(WAIT_MS);
    if (!who) {
        CHECK(0, "no STARTED within %d ms", WAIT_MS);
        printf(CHECK_NAME ": stopping\n");
        exit(1);
    }
    CHECK(slot_of(who) > 0, "a STARTED of elector %d, which was destroyed", who);
    return slot_of(who);
}

static void new_candidate(int i, int fresh_client) {
    char id[64];
    if (fresh_client) {
        snprintf(id, sizeof id, "ef-%s-%d", cand[i].member, nlog);
        cand[i].client = new_client(bootstrap, id, LEASE_MS);
    }
    cand[i].tag = next_tag++;
    OK(krabka_elector_new(cand[i].client, role, KRABKA_NTS, cand[i].member, KRABKA_NTS, 0, q, (uint64_t)cand[i].tag,
                          &cand[i].elector, ES));
}

static void start_kid(void) {
    kid_no++;
    char member[32];
    snprintf(member, sizeof member, "c-%d", kid_no);
    char *argv[] = {self, "child", (char *)bootstrap, (char *)role, member, NULL};
    spawn(&kid, argv);
    const char *l = read_line(&kid, WAIT_MS);
    CHECK(l && strcmp(l, "READY") == 0, "child %d: %s", kid_no, l ? l : "(nothing)");
}

/* Whether member is in role's roster now. */
static int in_roster(const char *member) {
    krabka_status_t *st = NULL;
    size_t n = 0;
    int found = 0;
    OK(krabka_client_describe(cand[1].client, role, KRABKA_NTS, 15000, &st, ES));
    OK(krabka_status_roster_count(st, &n));
    for (size_t i = 0; i < n; i++) {
        krabka_roster_entry_t e;
        OK(krabka_status_roster_entry(st, i, &e));
        found |= strcmp(e.member, member) == 0;
    }
    OK(krabka_status_destroy(st));
    return found;
}

/* Turns the child's candidacy on or off and waits until it says so done. */
static void kid_eligible(int on) {
    int want = kid_acks + 1;
    say(&kid, on ? "eligible 1\n" : "eligible 0\n");
    for (int i = 0; i < WAIT_MS / 100 && kid_acks < want; i++)
        pump(100); /* a STARTED seen here is logged; callers wait for theirs from the log */
    CHECK(kid_acks >= want, "the child did not answer eligible %d", on);
}

/* Makes the child the holder: it becomes eligible, A and B withdraw until
 * it won, and come back. */
static void kid_takes_over(int *holder) {
    kid_eligible(1);
    for (int i = 1; i <= 2; i++)
        OK(krabka_elector_set_eligible(cand[i].elector, 0, KRABKA_TIMEOUT_DEFAULT, ES));
    if (*holder < 100)
        *holder = next_holder();
    CHECK(*holder == 100 + kid_no, "the child did not take over (holder %d)", *holder);
    for (int i = 1; i <= 2; i++)
        OK(krabka_elector_set_eligible(cand[i].elector, 1, KRABKA_TIMEOUT_DEFAULT, ES));
}

static const char *name_of(int slot) {
    static char b[2][32];
    static int k;
    k ^= 1;
    if (slot >= 100)
        snprintf(b[k], sizeof b[k], "c-%d", slot - 100);
    else
        snprintf(b[k], sizeof b[k], "%s", slot == 1 ? "a" : slot == 2 ? "b" : "?");
    return b[k];
}

static void failovers(void) {
    char r[80];
    snprintf(r, sizeof r, "c-elect-faults-%ld", (long)getpid());
    role = r;
    OK(krabka_queue_new(&q));
    cand[1].member = "a", cand[2].member = "b";
    new_candidate(1, 1);
    int holder = next_holder();
    CHECK(holder == 1, "the first holder is %d, want A (1)", holder);
    new_candidate(2, 1);
    start_kid();
    int changes = 0, kills = 0, pauses = 0, withdrawals = 0, destroys = 0, closes = 0;
    for (int round = 0; changes < FAILOVERS && round < 4 * FAILOVERS; round++) {
        int before = holder;
        int64_t t0 = now_ms();
        const char *how = "";
        static const int order[5] = {2, 1, 0, 3, 4};
        int kind = order[round % 5];
        if (holder >= 100 && kind < 3)
            kind = 3; /* the child holds: it is killed */
        switch (kind) {
        case 0: /* the holder withdraws and comes back */
            how = "withdrawal";
            OK(krabka_elector_set_eligible(cand[holder].elector, 0, KRABKA_TIMEOUT_DEFAULT, ES));
            holder = next_holder();
            OK(krabka_elector_set_eligible(cand[before].elector, 1, KRABKA_TIMEOUT_DEFAULT, ES));
            withdrawals++;
            break;
        case 1: /* the holder's elector destroyed (it resigns), made again */
            how = "elector destroyed";
            OK(krabka_elector_destroy(cand[holder].elector));
            holder = next_holder();
            new_candidate(before, 0);
            destroys++;
            break;
        case 2: /* the holder's client destroyed: no resign, the lease runs out */
            how = "client destroyed";
            OK(krabka_client_destroy(cand[holder].client));
            OK(krabka_elector_destroy(cand[holder].elector)); /* its loop ended with the client */
            holder = next_holder();
            new_candidate(before, 1);
            closes++;
            break;
        case 3: /* the child killed while it holds */
            kid_takes_over(&holder);
            before = holder;
            t0 = now_ms();
            how = "SIGKILL";
            kill(kid.pid, SIGKILL);
            holder = next_holder();
            finish(&kid);
            start_kid();
            kills++;
            break;
        case 4: /* the child paused past its lease while it holds */
            kid_takes_over(&holder);
            before = holder;
            t0 = now_ms();
            how = "SIGSTOP";
            kid_last_stop = KRABKA_STOP_NONE;
            kill(kid.pid, SIGSTOP);
            holder = next_holder();
            kill(kid.pid, SIGCONT);
            for (int i = 0; i < WAIT_MS / 100 && kid_last_stop == KRABKA_STOP_NONE; i++)
                pump(100);
            CHECK(kid_last_stop == KRABKA_STOP_FENCED || kid_last_stop == KRABKA_STOP_EXPIRED ||
                      kid_last_stop == KRABKA_STOP_LOST_AT_RISK,
                  "the paused child's term stopped with reason %d", (int)kid_last_stop);
            /* re-campaign after the loss: the child registers again */
            {
                char m[32];
                snprintf(m, sizeof m, "c-%d", kid_no);
                int back = 0;
                for (int i = 0; i < WAIT_MS / 200 && !(back = in_roster(m)); i++)
                    pump(200);
                CHECK(back, "the paused child did not campaign again after its term stopped (%d)", (int)kid_last_stop);
            }
            kid_eligible(0);
            pauses++;
            break;
        }
        CHECK(holder != before, "round %d (%s): the holder stayed %d", round, how, holder);
        if (holder != before)
            changes++;
        printf("failover %d (%s): %s -> %s in %" PRId64 " ms\n", changes, how, name_of(before), name_of(holder), now_ms() - t0);
    }
    CHECK(changes >= FAILOVERS, "%d failovers, want %d", changes, FAILOVERS);
    CHECK(kills > 0 && pauses > 0 && withdrawals > 0 && destroys > 0 && closes > 0,
          "kinds: kills %d pauses %d withdrawals %d destroys %d closes %d", kills, pauses, withdrawals, destroys,
          closes);
    for (int i = 1; i <= 2; i++)
        OK(krabka_elector_destroy(cand[i].elector));
    close(kid.in); /* the child resigns and leaves: read what it says until it is gone */
    kid.in = open("/dev/null", O_WRONLY);
    for (int64_t until = now_ms() + WAIT_MS; !kid.eof && now_ms() < until;)
        pump(100);
    CHECK(kid.eof, "the last child did not leave after its stdin closed");
    finish(&kid);
    pump(0);
    for (int i = 1; i <= 2; i++)
        OK(krabka_client_destroy(cand[i].client));
    OK(krabka_queue_destroy(q));

    /* Per elector: STARTED/STOPPED alternate with the same term, 1, 2, ... */
    int whos[64], nwho = 0;
    for (int i = 0; i < nlog; i++) {
        int seen = 0;
        for (int j = 0; j < nwho; j++)
            seen |= whos[j] == elog[i].who;
        if (!seen && nwho < 64)
            whos[nwho++] = elog[i].who;
    }
    for (int j = 0; j < nwho; j++) {
        int who = whos[j], open = 0, killed = who > 100 && who < 100 + kid_no; /* earlier children were killed */
        uint64_t next = 1;
        for (int i = 0; i < nlog; i++) {
            if (elog[i].who != who)
                continue;
            if (elog[i].kind == KRABKA_TERM_STARTED) {
                CHECK(!open, "elector %d: STARTED term %" PRIu64 " while term %" PRIu64 " is open", who, elog[i].term,
                      next);
                CHECK(elog[i].term == next, "elector %d: STARTED term %" PRIu64 ", want %" PRIu64, who, elog[i].term, next);
                open = 1;
            } else {
                CHECK(open && elog[i].term == next, "elector %d: STOPPED term %" PRIu64 " unpaired", who, elog[i].term);
                open = 0, next++;
            }
        }
        CHECK(!open || killed, "elector %d: its last term has no STOPPED", who);
    }
    printf("failovers: %d (withdrawals %d, elector destroys %d, client destroys %d, kills %d, pauses %d), %d STARTED, "
           "%d electors\n",
           changes, withdrawals, destroys, closes, kills, pauses, starts_seen, nwho);
}

/* ---- part 2: AT_RISK before the end under a cut link ---- */

static void cut_link(void) {
    const char *x1 = getenv("KRABKA_BOOTSTRAP_X1"), *target = getenv("KRABKA_BOOTSTRAP_X1_TARGET");
    const char *kproxy = getenv("KRABKA_KPROXY");
    if (!x1 || !*x1 || !target || !*target || !kproxy || !*kproxy) {
        CHECK(0, "KRABKA_BOOTSTRAP_X1, KRABKA_BOOTSTRAP_X1_TARGET and KRABKA_KPROXY must be set (`make test` "
                 "and `make capi-elect-faults` do)");
        return;
    }
    proc_t px = {0};
    char *argv[] = {(char *)kproxy, "-listen", (char *)x1, "-target", (char *)target, NULL};
    spawn(&px, argv);
    const char *l = read_line(&px, WAIT_MS);
    CHECK(l && strncmp(l, "ready ", 6) == 0, "kproxy: %s", l ? l : "(nothing)");
    if (!l)
        exit(1);
    krabka_client_t *c = new_client(x1, "ef-cut", "6000");
    krabka_queue_t *cq = NULL;
    krabka_elector_t *e = NULL;
    char r[80];
    snprintf(r, sizeof r, "c-elect-cut-%ld", (long)getpid());
    OK(krabka_queue_new(&cq));
    OK(krabka_elector_new(c, r, KRABKA_NTS, "cut", KRABKA_NTS, KRABKA_ELECT_NO_RECAMPAIGN, cq, 5, &e, ES));
    int fd = -1;
    OK(krabka_queue_fd(cq, &fd));
    int64_t at_risk = 0, risk_deadline = 0, stopped_at = 0;
    krabka_stop_reason_t why = KRABKA_STOP_NONE;
    int started = 0;
    for (int64_t until = now_ms() + 2 * WAIT_MS; now_ms() < until && !stopped_at;) {
        struct pollfd pf = {fd, POLLIN, 0};
        poll(&pf, 1, 100);
        krabka_event_t *ev = NULL;
        for (ev = poll_one(cq); ev; ev = poll_one(cq)) {
            krabka_term_event_kind_t k = kind_of(ev);
            if (k == KRABKA_TERM_STARTED) {
                started = 1;
                say(&px, "cut\n");
                l = read_line(&px, WAIT_MS);
                CHECK(l && strcmp(l, "ok cut") == 0, "kproxy cut: %s", l ? l : "(nothing)");
            } else if (k == KRABKA_TERM_AT_RISK && !at_risk) {
                at_risk = now_ms();
                OK(krabka_event_deadline(ev, &risk_deadline, ES));
            } else if (k == KRABKA_TERM_STOPPED) {
                stopped_at = now_ms();
                why = reason_of(ev);
            }
            OK(krabka_event_destroy(ev));
        }
    }
    CHECK(started, "the elector behind the proxy never started a term");
    CHECK(at_risk > 0, "no AT_RISK before the term stopped (reason %d)", (int)why);
    CHECK(stopped_at > 0, "the term did not stop within %d ms of a cut link", 2 * WAIT_MS);
    CHECK(at_risk > 0 && stopped_at >= at_risk, "AT_RISK at %" PRId64 ", STOPPED at %" PRId64, at_risk, stopped_at);
    CHECK(why == KRABKA_STOP_EXPIRED || why == KRABKA_STOP_LOST_AT_RISK, "stop reason %d under a cut link", (int)why);
    CHECK(at_risk > 0 && at_risk < risk_deadline, "AT_RISK read at %" PRId64 ", after the deadline %" PRId64, at_risk,
          risk_deadline);
    printf("cut link: AT_RISK %" PRId64 " ms before the lease deadline, the term STOPPED (reason %d) %" PRId64
           " ms after AT_RISK\n",
           risk_deadline - at_risk, (int)why, stopped_at - at_risk);
    say(&px, "heal\n");
    l = read_line(&px, WAIT_MS);
    CHECK(l && strcmp(l, "ok heal") == 0, "kproxy heal: %s", l ? l : "(nothing)");
    OK(krabka_elector_destroy(e));
    OK(krabka_queue_destroy(cq));
    OK(krabka_client_destroy(c));
    finish(&px);
}

int main(int argc, char **argv) {
    if (argc == 5 && strcmp(argv[1], "child") == 0)
        return child(argv[2], argv[3], argv[4]);
    signal(SIGPIPE, SIG_IGN);
    bootstrap = getenv("KRABKA_BOOTSTRAP");
    if (!bootstrap || !*bootstrap) {
        fprintf(stderr, "elect_faults: set KRABKA_BOOTSTRAP (and KRABKA_BOOTSTRAP_X1, _X1_TARGET, KRABKA_KPROXY); "
                        "`make capi-elect-faults` does\n");
        return 2;
    }
    ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
    if (n <= 0) {
        fprintf(stderr, "elect_faults: readlink /proc/self/exe: %s\n", strerror(errno));
        return 2;
    }
    self[n] = '\0';
    failovers();
    cut_link();
    printf("elect_faults: %d checks, %d failures\n", checks, failures);
    return failures ? 1 : 0;
}
