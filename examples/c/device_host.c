/*
 * device_host: a device host that leads a role with krabka-coord.
 *
 *   device_host <bootstrap> <role> <member> <topic> [max_commands]
 *
 * (each argument may instead come from KRABKA_BOOTSTRAP, KRABKA_ROLE,
 * KRABKA_MEMBER, KRABKA_TOPIC; max_commands 0 or absent = no limit)
 *
 * The shape of device-host firmware: one poll(2) main loop over file
 * descriptors, nothing polled by timers but the dispatch pace:
 *   - the event queue's fd: the result of krabka_client_acquire_async (the
 *     library waits for the role on its own threads) and the library's log
 *     lines (krabka_conf_set_log_queue), drained with krabka_queue_poll;
 *   - the leadership's event fd (krabka_leadership_event_fd): readable the
 *     moment the leadership ends (for example a lease that expired while
 *     renewals failed), so the host stops dispatching at once;
 *   - a self-pipe written by the SIGTERM/SIGINT handler.
 * While leading it renews the lease when due (main loop) and dispatches
 * numbered commands through the guarded write (krabka_leadership_produce),
 * each carrying the fencing token, from KRABKA_WRITERS writer threads
 * (default 1): concurrent calls on one leadership, which the library
 * commits together (group commit). Sequence numbers count from 1 in each
 * leadership; a writer re-sends its number after an error until the
 * leadership ends. On FENCED or LEASE_EXPIRED every writer stops at once,
 * the leadership is dropped and the host queues for the role again.
 * On SIGTERM/SIGINT it resigns (so a standby takes over at once) and exits.
 *
 * Settings: KRABKA_LEASE_MS, KRABKA_RENEW_INTERVAL_MS,
 * KRABKA_CHALLENGE_STAGGER_MS (the coordination settings), KRABKA_REQUEST_TIMEOUT_MS
 * (request.timeout.ms),
 * KRABKA_DISPATCH_INTERVAL_MS (pace of commands per writer, default 1000),
 * KRABKA_WRITERS (writer threads per leadership, default 1),
 * KRABKA_REJOIN_DELAY_MS (pause after losing the role, default 1000).
 * The library logs at info; the line of each minted producer epoch
 * ("krabka: minted a producer epoch", and an own epoch recovery's) is also
 * printed as a MINTED event with its token and the instant (at_ms).
 *
 * Output: one line per event on stdout in the demo's line protocol
 *   EVENT <unix_ms> <member> <KIND> key=value ...
 * (KIND: STARTED STANDBY ACQUIRED RENEWED DISPATCHED FENCED EXPIRED RESIGNED
 * ERROR STOPPED MINTED), and the same event for people on stderr:
 *   [c <member>] acquired role controller with token 12:4
 */
#define _XOPEN_SOURCE 700 /* sigaction with SA_ONSTACK, nanosleep, clock_gettime */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "krabka_coord.h"

static volatile sig_atomic_t stop_requested;
static int signal_pipe[2] = {-1, -1}; /* the handler writes, the main loop polls */

static void on_signal(int sig) {
    (void)sig;
    int saved = errno;
    stop_requested = 1; /* a flag and a byte: the main loop does the work */
    ssize_t r = write(signal_pipe[1], "s", 1);
    (void)r;
    errno = saved;
}

static const char *member;
static char errstr[512];
static krabka_queue_t *queue; /* acquire results and log lines */
static int queue_fd = -1;

static int64_t now_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static void drain_queue(krabka_event_t **acquired);

/* Waits up to ms (-1: no limit) in poll(2) on the signal pipe, the event
 * queue and, if >= 0, a leadership's event fd. Log lines are printed as they
 * come; an acquire result is handed over in *acquired (if not NULL; the
 * caller destroys it). Returns 1 when lead_fd became readable (the
 * leadership ended), else 0. */
static int wait_fds(int64_t ms, int lead_fd, krabka_event_t **acquired) {
    int64_t until = ms < 0 ? -1 : now_ms() + ms;
    for (;;) {
        if (stop_requested)
            return 0;
        struct pollfd fds[3] = {{signal_pipe[0], POLLIN, 0}, {queue_fd, POLLIN, 0}, {lead_fd, POLLIN, 0}};
        int64_t left = until < 0 ? -1 : until - now_ms();
        if (until >= 0 && left <= 0)
            return 0;
        int n = poll(fds, lead_fd >= 0 ? 3 : 2, left > 60000 ? 60000 : (int)left);
        if (n < 0 && errno != EINTR)
            return 0;
        if (n <= 0)
            continue;
        if (fds[1].revents & POLLIN) {
            drain_queue(acquired);
            if (acquired && *acquired)
                return 0;
        }
        if (lead_fd >= 0 && (fds[2].revents & POLLIN))
            return 1;
    }
}

/* Sleeps up to ms, waking early when a stop was requested. */
static void nap(int64_t ms) { wait_fds(ms, -1, NULL); }

/* One event: the protocol line on stdout and a readable line on stderr. */
static void event(const char *kind, const char *human, const char *fmt, ...) {
    char fields[1024] = "";
    if (fmt) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(fields, sizeof fields, fmt, ap);
        va_end(ap);
    }
    printf("EVENT %" PRId64 " %s %s%s%s\n", now_ms(), member, kind, *fields ? " " : "", fields);
    fflush(stdout);
    fprintf(stderr, "[c %s] %s\n", member, human);
}

/* s as a quoted protocol value in buf (quotes and backslashes dropped). */
static const char *quoted_in(const char *s, char *buf, size_t size) {
    size_t n = 0;
    buf[n++] = '"';
    for (; *s && n < size - 2; s++)
        if (*s != '"' && *s != '\\' && *s != '\n')
            buf[n++] = *s;
    buf[n++] = '"';
    buf[n] = '\0';
    return buf;
}

/* The main thread's quoted value (a static buffer: main thread only). */
static const char *quoted(const char *s) {
    static char buf[600];
    return quoted_in(s, buf, sizeof buf);
}

/* Copies the value of " key=" in a log line into out ("" if absent). */
static void line_field(const char *line, const char *key, char *out, size_t size) {
    char pat[40];
    snprintf(pat, sizeof pat, " %s=", key);
    const char *p = strstr(line, pat);
    size_t n = 0;
    if (p)
        for (p += strlen(pat); *p && *p != ' ' && n < size - 1; p++)
            out[n++] = *p;
    out[n] = '\0';
}

/* A library line that reports a minted producer epoch (InitProducerId
 * returned) becomes a MINTED event: the token and the instant it names. */
static void forward_mint(const char *line) {
    char tok[KRABKA_TOKEN_TEXT_MAX], at[32];
    if (strncmp(line, "krabka: minted a producer epoch", 31) == 0)
        line_field(line, "token", tok, sizeof tok);
    else if (strncmp(line, "krabka: own epoch recovery", 26) == 0)
        line_field(line, "new_token", tok, sizeof tok);
    else
        return;
    line_field(line, "at_ms", at, sizeof at);
    if (*tok) {
        char human[200];
        snprintf(human, sizeof human, "minted token %s at %s", tok, *at ? at : "?");
        event("MINTED", human, "token=%s at_ms=%s", tok, *at ? at : "0");
    }
}

/* Takes every waiting event off the queue: log lines go to stderr, an
 * acquire result into *acquired (the caller destroys it). */
static void drain_queue(krabka_event_t **acquired) {
    static const char *levels[] = {[KRABKA_LOG_ERROR] = "error", [KRABKA_LOG_WARNING] = "warning",
                                   [KRABKA_LOG_INFO] = "info", [KRABKA_LOG_DEBUG] = "debug"};
    krabka_event_t *ev = NULL;
    while (krabka_queue_poll(queue, &ev) == KRABKA_OK && ev) {
        krabka_event_type_t type = KRABKA_EVENT_NONE;
        krabka_event_type(ev, &type);
        if (type == KRABKA_EVENT_LOG) {
            krabka_log_level_t level = KRABKA_LOG_INFO;
            const char *line = "";
            krabka_event_log(ev, &level, &line, NULL, 0);
            fprintf(stderr, "[c %s] library %s: %s\n", member, levels[level & 7] ? levels[level & 7] : "?", line);
            if (level == KRABKA_LOG_INFO)
                forward_mint(line);
        } else if (type == KRABKA_EVENT_ACQUIRE && acquired) {
            *acquired = ev;
            return;
        }
        /* An acquire nobody waits for any more: destroying the event
         * destroys the leadership it carries. */
        krabka_event_destroy(ev);
    }
}

static int64_t env_ms(const char *name, int64_t def) {
    const char *v = getenv(name);
    return v && *v ? strtoll(v, NULL, 10) : def;
}

static const char *arg(int argc, char **argv, int i, const char *env) {
    if (argc > i)
        return argv[i];
    const char *v = getenv(env);
    return v && *v ? v : NULL;
}

static krabka_client_t *connect_client(const char *bootstrap) {
    static const struct {
        const char *env, *key;
    } settings[] = {{"KRABKA_LEASE_MS", "krabka.lease.ms"},
                    {"KRABKA_RENEW_INTERVAL_MS", "krabka.renew.interval.ms"},
                    {"KRABKA_CHALLENGE_STAGGER_MS", "krabka.challenge.stagger.ms"},
                    {"KRABKA_REQUEST_TIMEOUT_MS", "request.timeout.ms"},
                    /* TEST ONLY (the chaos campaign skews one member's lease clock) */
                    {"KRABKA_TEST_CLOCK_OFFSET_MS", "krabka.test.clock.offset.ms"}};
    krabka_conf_t *conf = krabka_conf_new();
    krabka_client_t *client = NULL;
    krabka_err_t err = krabka_conf_set(conf, "bootstrap.servers", bootstrap, errstr, sizeof errstr);
    if (!err)
        err = krabka_conf_set(conf, "client.id", member, errstr, sizeof errstr);
    for (size_t i = 0; !err && i < sizeof settings / sizeof settings[0]; i++) {
        const char *v = getenv(settings[i].env);
        if (v && *v)
            err = krabka_conf_set(conf, settings[i].key, v, errstr, sizeof errstr);
    }
    if (!err) /* info: the lines of minted epochs are forwarded as MINTED */
        err = krabka_conf_set(conf, "krabka.log.level", "info", errstr, sizeof errstr);
    if (!err) /* the library's log lines come through the event queue */
        err = krabka_conf_set_log_queue(conf, queue, 0);
    if (!err)
        err = krabka_client_new(conf, &client, errstr, sizeof errstr);
    krabka_conf_destroy(conf);
    if (err) {
        fprintf(stderr, "[c %s] configuration: %s: %s\n", member, krabka_err2name(err), errstr);
        return NULL;
    }
    return client;
}

enum outcome { LOST, DONE, STOPPING };

/* What the writers of one leadership share (under mu). */
struct lead_state {
    krabka_leadership_t *l;
    const char *topic;
    int64_t interval;
    long max_commands;
    pthread_mutex_t mu;
    int stop;      /* every writer stops: the leadership ended, a stop or the limit */
    int lost;      /* the leadership ended */
    int done;      /* max_commands acknowledged */
    int reported;  /* its end was reported (one FENCED/EXPIRED/ERROR event) */
    long next_seq; /* the last sequence number a writer took */
};

static pthread_mutex_t count_mu = PTHREAD_MUTEX_INITIALIZER;
static long acked_total; /* acknowledged commands of this process (count_mu) */

static int stopped(struct lead_state *s) {
    pthread_mutex_lock(&s->mu);
    int stop = s->stop;
    pthread_mutex_unlock(&s->mu);
    return stop || stop_requested;
}

/* Sleeps up to ms in short slices, less if the writers are told to stop. */
static void writer_nap(struct lead_state *s, int64_t ms) {
    while (ms > 0 && !stopped(s)) {
        int64_t step = ms > 20 ? 20 : ms;
        struct timespec ts = {(time_t)(step / 1000), (long)(step % 1000) * 1000000L};
        nanosleep(&ts, NULL);
        ms -= step;
    }
}

/* The leadership ended (err: why): every writer stops; the first caller
 * reports it. */
static void lead_ended(struct lead_state *s, krabka_err_t err, const char *op, const char *tok, long seq,
                       const char *why) {
    pthread_mutex_lock(&s->mu);
    s->stop = s->lost = 1;
    if (!s->reported) {
        char human[1024], q[600];
        s->reported = 1;
        int fenced = err == KRABKA_ERR_FENCED, expired = err == KRABKA_ERR_LEASE_EXPIRED;
        snprintf(human, sizeof human, "%s on %s: token %s, stopped dispatching: %s", krabka_err2name(err), op, tok, why);
        event(fenced ? "FENCED" : expired ? "EXPIRED" : "ERROR", human, "op=%s code=%s token=%s seq=%ld msg=%s", op,
              krabka_err2name(err), tok, seq, quoted_in(why, q, sizeof q));
    }
    pthread_mutex_unlock(&s->mu);
}

struct writer {
    struct lead_state *s;
    int id;
    pthread_t thread;
};

/* One writer: takes the next sequence number, writes it through the
 * guarded write until it is acknowledged or the leadership ends, waits the
 * dispatch interval, and again. */
static void *writer_main(void *arg) {
    struct writer *w = arg;
    struct lead_state *s = w->s;
    char err_text[512], human[1024], q[600];
    while (!stopped(s)) {
        pthread_mutex_lock(&s->mu);
        long n = ++s->next_seq;
        pthread_mutex_unlock(&s->mu);
        for (int attempt = 1; !stopped(s); attempt++) {
            krabka_token_t token;
            char tok[KRABKA_TOKEN_TEXT_MAX], value[256];
            krabka_produce_result_t res = {-1, -1};
            krabka_leadership_token(s->l, &token); /* read again: an own epoch recovery changes it */
            krabka_token_format(token, tok, sizeof tok);
            snprintf(value, sizeof value, "seq=%ld member=%s token=%s writer=%d try=%d at=%" PRId64, n, member, tok,
                     w->id, attempt, now_ms());
            krabka_message_t msg = {sizeof(krabka_message_t), s->topic, 0, (const uint8_t *)member, strlen(member),
                                    (const uint8_t *)value, strlen(value), NULL, 0};
            krabka_err_t err =
                krabka_leadership_produce(s->l, &msg, 1, KRABKA_TIMEOUT_DEFAULT, &res, err_text, sizeof err_text);
            if (!err) {
                snprintf(human, sizeof human, "dispatched #%ld token %s (partition %d offset %" PRId64 ", writer %d)",
                         n, tok, res.partition, res.offset, w->id);
                event("DISPATCHED", human, "seq=%ld token=%s partition=%d offset=%" PRId64 " writer=%d", n, tok,
                      res.partition, res.offset, w->id);
                pthread_mutex_lock(&count_mu);
                long total = ++acked_total;
                pthread_mutex_unlock(&count_mu);
                if (s->max_commands > 0 && total >= s->max_commands) {
                    pthread_mutex_lock(&s->mu);
                    s->stop = s->done = 1;
                    pthread_mutex_unlock(&s->mu);
                }
                break;
            }
            if (err == KRABKA_ERR_FENCED || err == KRABKA_ERR_LEASE_EXPIRED) {
                /* Stop dispatching at once: another member holds the role. */
                lead_ended(s, err, "dispatch", tok, n, err_text);
                return NULL;
            }
            snprintf(human, sizeof human, "error on dispatch (writer %d): %s: %s", w->id, krabka_err2name(err), err_text);
            event("ERROR", human, "op=dispatch code=%s token=%s writer=%d msg=%s", krabka_err2name(err), tok, w->id,
                  quoted_in(err_text, q, sizeof q));
            krabka_leadership_state_t st = KRABKA_LEADERSHIP_ACTIVE;
            if (krabka_leadership_state(s->l, &st) != KRABKA_OK || st != KRABKA_LEADERSHIP_ACTIVE) {
                krabka_err_t why = KRABKA_OK;
                krabka_leadership_end_error(s->l, &why, err_text, sizeof err_text);
                lead_ended(s, why ? why : err, "dispatch", tok, n, err_text);
                return NULL;
            }
            writer_nap(s, s->interval);
        }
        writer_nap(s, s->interval);
    }
    return NULL;
}

/* Leads until the role is lost (LOST), max_commands were dispatched (DONE)
 * or a stop was requested (STOPPING): writers dispatch, this thread renews
 * and watches the leadership's event fd. */
static enum outcome lead(krabka_leadership_t *l, const char *role, const char *topic, long max_commands, int writers,
                         int64_t interval) {
    krabka_token_t token;
    krabka_lease_t lease;
    char tok[KRABKA_TOKEN_TEXT_MAX], human[1024];
    krabka_leadership_token(l, &token);
    krabka_token_format(token, tok, sizeof tok);
    krabka_leadership_lease(l, &lease);
    snprintf(human, sizeof human, "acquired role %s with token %s", role, tok);
    event("ACQUIRED", human, "token=%s deadline=%" PRId64, tok, lease.deadline);
    /* Readable the moment the leadership ends; owned (and closed) by l. */
    int lead_fd = -1;
    krabka_leadership_event_fd(l, &lead_fd);

    struct lead_state s;
    memset(&s, 0, sizeof s);
    s.l = l, s.topic = topic, s.interval = interval, s.max_commands = max_commands;
    pthread_mutex_init(&s.mu, NULL);
    struct writer *ws = calloc((size_t)writers, sizeof *ws);
    int started = 0;
    for (int i = 0; ws && i < writers; i++) {
        ws[i].s = &s, ws[i].id = i + 1;
        if (pthread_create(&ws[i].thread, NULL, writer_main, &ws[i]) != 0)
            break;
        started++;
    }
    if (started == 0) {
        fprintf(stderr, "[c %s] cannot start a writer thread\n", member);
        stop_requested = 1;
    }

    enum outcome how = LOST;
    for (;;) {
        pthread_mutex_lock(&s.mu);
        int lost = s.lost, done = s.done;
        pthread_mutex_unlock(&s.mu);
        if (stop_requested || done) {
            how = stop_requested ? STOPPING : DONE;
            break;
        }
        if (lost)
            break;
        int due = 0;
        krabka_leadership_renew_due(l, &due);
        if (due) {
            krabka_err_t err = krabka_leadership_renew(l, KRABKA_TIMEOUT_DEFAULT, errstr, sizeof errstr);
            krabka_leadership_token(l, &token);
            krabka_token_format(token, tok, sizeof tok);
            if (!err) {
                krabka_leadership_lease(l, &lease);
                snprintf(human, sizeof human, "renewed token %s until %" PRId64, tok, lease.deadline);
                event("RENEWED", human, "token=%s deadline=%" PRId64, tok, lease.deadline);
            } else if (err == KRABKA_ERR_FENCED || err == KRABKA_ERR_LEASE_EXPIRED) {
                lead_ended(&s, err, "renew", tok, 0, errstr);
                continue;
            } else {
                snprintf(human, sizeof human, "error on renew: %s: %s", krabka_err2name(err), errstr);
                event("ERROR", human, "op=renew code=%s token=%s msg=%s", krabka_err2name(err), tok, quoted(errstr));
                krabka_leadership_state_t st = KRABKA_LEADERSHIP_ACTIVE;
                if (krabka_leadership_state(l, &st) != KRABKA_OK || st != KRABKA_LEADERSHIP_ACTIVE) {
                    krabka_err_t why = KRABKA_OK;
                    krabka_leadership_end_error(l, &why, errstr, sizeof errstr);
                    lead_ended(&s, why ? why : err, "renew", tok, 0, errstr);
                    continue;
                }
            }
        }
        /* Until the next renewal check: poll(2) on the signal pipe, the
         * event queue and the leadership's event fd. */
        if (wait_fds(interval < 100 ? interval : 100, lead_fd, NULL)) {
            krabka_err_t why = KRABKA_OK;
            krabka_leadership_end_error(l, &why, errstr, sizeof errstr);
            krabka_leadership_token(l, &token);
            krabka_token_format(token, tok, sizeof tok);
            lead_ended(&s, why, "event_fd", tok, 0, errstr);
        }
    }
    pthread_mutex_lock(&s.mu);
    s.stop = 1;
    pthread_mutex_unlock(&s.mu);
    for (int i = 0; i < started; i++)
        pthread_join(ws[i].thread, NULL);
    free(ws);
    pthread_mutex_destroy(&s.mu);
    if (how != LOST) {
        krabka_err_t err = krabka_leadership_resign(l, KRABKA_TIMEOUT_DEFAULT, errstr, sizeof errstr);
        snprintf(human, sizeof human, "resigned token %s%s%s", tok, err ? ": " : "", err ? errstr : "");
        event("RESIGNED", human, "token=%s", tok);
    }
    return how;
}

int main(int argc, char **argv) {
    const char *bootstrap = arg(argc, argv, 1, "KRABKA_BOOTSTRAP");
    const char *role = arg(argc, argv, 2, "KRABKA_ROLE");
    member = arg(argc, argv, 3, "KRABKA_MEMBER");
    const char *topic = arg(argc, argv, 4, "KRABKA_TOPIC");
    long max_commands = argc > 5 ? strtol(argv[5], NULL, 10) : 0;
    if (!bootstrap || !role || !member || !topic || argc > 6) {
        fprintf(stderr, "usage: device_host <bootstrap> <role> <member> <topic> [max_commands]\n");
        return 2;
    }
    if (krabka_abi_version() != KRABKA_ABI_VERSION) {
        fprintf(stderr, "device_host: library ABI %d, built for %d\n", krabka_abi_version(), KRABKA_ABI_VERSION);
        return 2;
    }

    if (pipe(signal_pipe) != 0 || fcntl(signal_pipe[1], F_SETFL, O_NONBLOCK) != 0 ||
        krabka_queue_new(&queue) != KRABKA_OK || krabka_queue_fd(queue, &queue_fd) != KRABKA_OK) {
        fprintf(stderr, "device_host: cannot set up the signal pipe and the event queue\n");
        return 1;
    }

    /* The Go runtime inside the library uses signals too: SA_ONSTACK. */
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_signal;
    sa.sa_flags = SA_ONSTACK;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGTERM, &sa, NULL);
    sigaction(SIGINT, &sa, NULL);

    int64_t interval = env_ms("KRABKA_DISPATCH_INTERVAL_MS", 1000);
    int writers = (int)env_ms("KRABKA_WRITERS", 1);
    if (writers < 1 || writers > 256)
        writers = 1;
    int64_t rejoin = env_ms("KRABKA_REJOIN_DELAY_MS", 1000);
    krabka_client_t *client = connect_client(bootstrap);
    if (!client)
        return 1;
    char human[1024];
    snprintf(human, sizeof human, "started (pid %ld, library %s), role %s", (long)getpid(), krabka_version(), role);
    event("STARTED", human, "lang=c pid=%ld library=%s", (long)getpid(), krabka_version());

    int standby = 0;
    enum outcome how = LOST;
    while (!stop_requested) {
        krabka_leadership_t *l = NULL;
        int64_t retry_at = 0;
        krabka_err_t err = krabka_client_try_acquire(client, role, KRABKA_NTS, member, KRABKA_NTS, 5000, &l,
                                                     &retry_at, errstr, sizeof errstr);
        if (err) {
            snprintf(human, sizeof human, "error on acquire: %s: %s", krabka_err2name(err), errstr);
            event("ERROR", human, "op=acquire code=%s msg=%s", krabka_err2name(err), quoted(errstr));
            nap(1000);
            continue;
        }
        if (!l) {
            /* Registered (try_acquire registers first): wait for the turn
             * without polling. The library waits on its own threads and
             * posts the result to the event queue. */
            if (!standby) {
                snprintf(human, sizeof human, "standby for role %s, next try at %" PRId64, role, retry_at);
                event("STANDBY", human, "retry_at=%" PRId64, retry_at);
                standby = 1;
            }
            err = krabka_client_acquire_async(client, role, KRABKA_NTS, member, KRABKA_NTS, KRABKA_TIMEOUT_DEFAULT,
                                              queue, 1, errstr, sizeof errstr);
            krabka_event_t *got = NULL;
            if (!err)
                wait_fds(-1, -1, &got);
            if (!err && !got)
                break; /* stop requested while waiting: destroying the client ends the acquire */
            if (!err) {
                krabka_event_error(got, &err, errstr, sizeof errstr);
                if (!err)
                    krabka_event_take_leadership(got, &l, errstr, sizeof errstr); /* ours now: destroyed below */
                krabka_event_destroy(got);
            }
            if (err) {
                snprintf(human, sizeof human, "error on acquire: %s: %s", krabka_err2name(err), errstr);
                event("ERROR", human, "op=acquire code=%s msg=%s", krabka_err2name(err), quoted(errstr));
                nap(1000);
                continue;
            }
        }
        standby = 0;
        how = lead(l, role, topic, max_commands, writers, interval);
        krabka_leadership_destroy(l);
        if (how != LOST)
            break;
        nap(rejoin); /* lost the role: stay out a moment before queueing again */
    }
    event("STOPPED", "stopped", NULL);
    krabka_client_destroy(client);
    drain_queue(NULL); /* the last log lines (and an acquire ended by the destroy) */
    krabka_queue_destroy(queue);
    return 0;
}
