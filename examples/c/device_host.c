/*
 * device_host: a device host that leads a role with krabka-coord.
 *
 *   device_host <bootstrap> <role> <member> <topic> [max_commands]
 *
 * (each argument may instead come from KRABKA_BOOTSTRAP, KRABKA_ROLE,
 * KRABKA_MEMBER, KRABKA_TOPIC; max_commands 0 or absent = no limit)
 *
 * The shape of device-host firmware: join the role, then one main loop that
 * renews the lease when due and dispatches numbered commands through the
 * guarded write (krabka_leadership_produce), each carrying the fencing token.
 * On FENCED or LEASE_EXPIRED it stops dispatching at once, drops the
 * leadership and queues for the role again. On SIGTERM/SIGINT it resigns
 * (so a standby takes over at once) and exits.
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
#include <inttypes.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "krabka_coord.h"

static volatile sig_atomic_t stop_requested;

static void on_signal(int sig) {
    (void)sig;
    stop_requested = 1; /* only a flag: the main loop does the work */
}

static const char *member;
static char errstr[512];

static int64_t now_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* Sleeps up to ms, waking early when a stop was requested. */
static void nap(int64_t ms) {
    while (ms > 0 && !stop_requested) {
        int64_t step = ms < 50 ? ms : 50;
        struct timespec ts = {0, (long)step * 1000000L};
        nanosleep(&ts, NULL);
        ms -= step;
    }
}

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
            krabka_message_t msg = {topic, 0, (const uint8_t *)member, strlen(member),
                                    (const uint8_t *)value, strlen(value)};
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
        nap(interval);
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
            if (!standby) {
                snprintf(human, sizeof human, "standby for role %s, next try at %" PRId64, role, retry_at);
                event("STANDBY", human, "retry_at=%" PRId64, retry_at);
                standby = 1;
            }
            int64_t wait = retry_at - now_ms();
            nap(wait < 10 ? 10 : wait > 500 ? 500 : wait);
            continue;
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
    return 0;
}
