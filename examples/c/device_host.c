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
 * While leading it renews the lease when due and dispatches numbered
 * commands through the guarded write (krabka_leadership_produce), each
 * carrying the fencing token. On FENCED or LEASE_EXPIRED it stops
 * dispatching at once, drops the leadership and queues for the role again.
 * On SIGTERM/SIGINT it resigns (so a standby takes over at once) and exits.
 *
 * Settings: KRABKA_LEASE_MS, KRABKA_RENEW_INTERVAL_MS,
 * KRABKA_CHALLENGE_STAGGER_MS (the coordination settings), KRABKA_REQUEST_TIMEOUT_MS
 * (request.timeout.ms),
 * KRABKA_DISPATCH_INTERVAL_MS (pace of commands, default 1000),
 * KRABKA_REJOIN_DELAY_MS (pause after losing the role, default 1000).
 *
 * Output: one line per event on stdout in the demo's line protocol
 *   EVENT <unix_ms> <member> <KIND> key=value ...
 * (KIND: STARTED STANDBY ACQUIRED RENEWED DISPATCHED FENCED EXPIRED RESIGNED
 * ERROR STOPPED), and the same event for people on stderr:
 *   [c <member>] acquired role controller with token 12:4
 */
#define _XOPEN_SOURCE 700 /* sigaction with SA_ONSTACK, nanosleep, clock_gettime */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <poll.h>
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

/* errstr as a quoted protocol value (quotes and backslashes dropped). */
static const char *quoted(const char *s) {
    static char buf[600];
    size_t n = 0;
    buf[n++] = '"';
    for (; *s && n < sizeof buf - 2; s++)
        if (*s != '"' && *s != '\\' && *s != '\n')
            buf[n++] = *s;
    buf[n++] = '"';
    buf[n] = '\0';
    return buf;
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

/* Leads until the role is lost (LOST), max_commands were dispatched (DONE)
 * or a stop was requested (STOPPING). */
static enum outcome lead(krabka_leadership_t *l, const char *role, const char *topic,
                         long max_commands, long *seq, int64_t interval) {
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

    for (;;) {
        const char *op = "dispatch";
        krabka_err_t err = KRABKA_OK;
        int due = 0;

        if (stop_requested) {
            err = krabka_leadership_resign(l, KRABKA_TIMEOUT_DEFAULT, errstr, sizeof errstr);
            snprintf(human, sizeof human, "resigned token %s%s%s", tok, err ? ": " : "", err ? errstr : "");
            event("RESIGNED", human, "token=%s", tok);
            return STOPPING;
        }
        krabka_leadership_renew_due(l, &due);
        if (due) {
            op = "renew";
            err = krabka_leadership_renew(l, KRABKA_TIMEOUT_DEFAULT, errstr, sizeof errstr);
            if (!err) {
                krabka_leadership_lease(l, &lease);
                snprintf(human, sizeof human, "renewed token %s until %" PRId64, tok, lease.deadline);
                event("RENEWED", human, "token=%s deadline=%" PRId64, tok, lease.deadline);
            }
        }
        if (!err) {
            /* The guarded write: the command names the token it was sent under. */
            char value[256];
            long n = *seq + 1;
            krabka_produce_result_t res = {-1, -1};
            op = "dispatch";
            snprintf(value, sizeof value, "seq=%ld member=%s token=%s at=%" PRId64, n, member, tok, now_ms());
            krabka_message_t msg = {sizeof(krabka_message_t), topic, 0, (const uint8_t *)member, strlen(member),
                                    (const uint8_t *)value, strlen(value), NULL, 0};
            err = krabka_leadership_produce(l, &msg, 1, KRABKA_TIMEOUT_DEFAULT, &res, errstr, sizeof errstr);
            if (!err) {
                *seq = n;
                snprintf(human, sizeof human, "dispatched #%ld token %s (partition %d offset %" PRId64 ")", n,
                         tok, res.partition, res.offset);
                event("DISPATCHED", human, "seq=%ld token=%s partition=%d offset=%" PRId64, n, tok,
                      res.partition, res.offset);
                if (max_commands > 0 && *seq >= max_commands) {
                    err = krabka_leadership_resign(l, KRABKA_TIMEOUT_DEFAULT, errstr, sizeof errstr);
                    snprintf(human, sizeof human, "resigned token %s after %ld commands", tok, *seq);
                    event("RESIGNED", human, "token=%s", tok);
                    return DONE;
                }
            }
        }
        if (err == KRABKA_ERR_FENCED || err == KRABKA_ERR_LEASE_EXPIRED) {
            /* Stop dispatching at once: another member holds the role. */
            int fenced = err == KRABKA_ERR_FENCED;
            snprintf(human, sizeof human, "%s on %s: token %s superseded, stopped dispatching: %s",
                     fenced ? "FENCED" : "LEASE_EXPIRED", op, tok, errstr);
            event(fenced ? "FENCED" : "EXPIRED", human, "op=%s code=%s token=%s seq=%ld msg=%s", op,
                  krabka_err2name(err), tok, *seq + 1, quoted(errstr));
            return LOST;
        }
        if (err) {
            krabka_leadership_state_t st = KRABKA_LEADERSHIP_ACTIVE;
            snprintf(human, sizeof human, "error on %s: %s: %s", op, krabka_err2name(err), errstr);
            event("ERROR", human, "op=%s code=%s token=%s msg=%s", op, krabka_err2name(err), tok,
                  quoted(errstr));
            if (krabka_leadership_state(l, &st) != KRABKA_OK || st != KRABKA_LEADERSHIP_ACTIVE)
                return LOST;
        }
        /* Until the next command is due: poll(2) on the signal pipe, the
         * event queue and the leadership's event fd. */
        if (wait_fds(interval, lead_fd, NULL)) {
            krabka_err_t why = KRABKA_OK;
            krabka_leadership_end_error(l, &why, errstr, sizeof errstr);
            int fenced = why == KRABKA_ERR_FENCED;
            snprintf(human, sizeof human, "leadership ended (%s, seen on its event fd): token %s, stopped dispatching: %s",
                     krabka_err2name(why), tok, errstr);
            event(fenced ? "FENCED" : why == KRABKA_ERR_LEASE_EXPIRED ? "EXPIRED" : "ERROR", human,
                  "op=event_fd code=%s token=%s seq=%ld msg=%s", krabka_err2name(why), tok, *seq + 1, quoted(errstr));
            return LOST;
        }
    }
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
    int64_t rejoin = env_ms("KRABKA_REJOIN_DELAY_MS", 1000);
    krabka_client_t *client = connect_client(bootstrap);
    if (!client)
        return 1;
    char human[1024];
    snprintf(human, sizeof human, "started (pid %ld, library %s), role %s", (long)getpid(), krabka_version(), role);
    event("STARTED", human, "lang=c pid=%ld library=%s", (long)getpid(), krabka_version());

    long seq = 0;
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
        how = lead(l, role, topic, max_commands, &seq, interval);
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
