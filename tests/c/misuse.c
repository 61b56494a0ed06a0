/*
 * Misuse of the C API answers an error code, never a crash: NULL in every
 * pointer argument, destroyed handles, double destroy, handles of the wrong
 * kind, made-up handles, and tiny or NULL errstr buffers. Needs no broker
 * (the client is pointed at a closed port and never gets an answer).
 */
#include <poll.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "krabka_coord.h"

static int failures, checks;

#define EXPECT_ERR(call, want)                                                   \
    do {                                                                         \
        krabka_err_t got_ = (call);                                              \
        checks++;                                                                \
        if (got_ != (want)) {                                                    \
            failures++;                                                          \
            printf("FAIL line %d: %s gave %s, expected %s\n", __LINE__, #call,   \
                   krabka_err2name(got_), krabka_err2name(want));                \
        }                                                                        \
    } while (0)

#define EXPECT(cond)                                                             \
    do {                                                                         \
        checks++;                                                                \
        if (!(cond)) {                                                           \
            failures++;                                                          \
            printf("FAIL line %d: %s\n", __LINE__, #cond);                       \
        }                                                                        \
    } while (0)

#define E KRABKA_ERR_INVALID_ARG
#define H KRABKA_ERR_INVALID_HANDLE
#define ES errstr, sizeof errstr

static char errstr[256];

static void pure_functions(void) {
    krabka_token_t t = {4242, 7}, out;
    char buf[KRABKA_TOKEN_TEXT_MAX];
    size_t len;
    int32_t part;

    /* Names: NULL with KRABKA_NTS or a length is INVALID_ARG; NULL with 0 is empty. */
    EXPECT_ERR(krabka_role_validate(NULL, KRABKA_NTS, ES), E);
    EXPECT_ERR(krabka_role_validate(NULL, 5, ES), E);
    EXPECT_ERR(krabka_role_validate(NULL, 0, ES), KRABKA_ERR_EMPTY_ROLE);
    EXPECT_ERR(krabka_member_validate(NULL, KRABKA_NTS, ES), E);
    EXPECT_ERR(krabka_member_validate(NULL, 0, ES), KRABKA_ERR_EMPTY_MEMBER);
    EXPECT_ERR(krabka_role_validate("a\0b", 3, ES), KRABKA_OK); /* NUL inside, length given */
    EXPECT_ERR(krabka_role_validate("\xff", KRABKA_NTS, ES), KRABKA_ERR_INVALID_UTF8);

    /* Tokens. */
    EXPECT_ERR(krabka_token_format(t, NULL, 0), KRABKA_ERR_BUFFER_TOO_SMALL);
    EXPECT_ERR(krabka_token_format(t, NULL, sizeof buf), E);
    EXPECT_ERR(krabka_token_format(t, buf, 6), KRABKA_ERR_BUFFER_TOO_SMALL);
    EXPECT_ERR(krabka_token_format(t, buf, 7), KRABKA_OK);
    EXPECT(strcmp(buf, "4242:7") == 0);
    EXPECT_ERR(krabka_token_parse(NULL, KRABKA_NTS, &out, ES), E);
    EXPECT_ERR(krabka_token_parse("1:2", KRABKA_NTS, NULL, ES), E);
    EXPECT_ERR(krabka_token_parse("1:2", 2, &out, ES), KRABKA_ERR_TOKEN_FORM);
    EXPECT(krabka_token_compare(krabka_token_no_epoch(), t) == -1);

    /* Partition. */
    EXPECT_ERR(krabka_role_partition("r", KRABKA_NTS, 3, NULL, ES), E);
    EXPECT_ERR(krabka_role_partition(NULL, KRABKA_NTS, 3, &part, ES), E);
    EXPECT_ERR(krabka_role_partition("r", KRABKA_NTS, 0, &part, ES), KRABKA_ERR_INVALID_PARTITION_COUNT);

    /* murmur2 and tombstones tolerate NULL. */
    EXPECT(krabka_murmur2(NULL, 0) == krabka_murmur2((const uint8_t *)"", 0));
    EXPECT(krabka_murmur2(NULL, 10) == krabka_murmur2((const uint8_t *)"", 0));
    EXPECT(krabka_value_is_tombstone(NULL, 0) == 1);
    EXPECT(krabka_value_is_tombstone(NULL, 7) == 1);
    EXPECT(krabka_value_is_tombstone((const uint8_t *)"x", 0) == 1);
    EXPECT(krabka_value_is_tombstone((const uint8_t *)"x", 1) == 0);

    /* Codec: NULL arguments, size queries, names longer than their buffers. */
    krabka_key_t key;
    memset(&key, 0, sizeof key);
    key.kind = KRABKA_KIND_LEASE;
    key.role_len = 3;
    memcpy(key.role, "abc", 4);
    uint8_t enc[600];
    EXPECT_ERR(krabka_key_encode(NULL, enc, sizeof enc, &len, ES), E);
    EXPECT_ERR(krabka_key_encode(&key, enc, sizeof enc, NULL, ES), E);
    EXPECT_ERR(krabka_key_encode(&key, NULL, 0, &len, ES), KRABKA_ERR_BUFFER_TOO_SMALL);
    EXPECT(len == 11);
    EXPECT_ERR(krabka_key_encode(&key, NULL, 100, &len, ES), E);
    EXPECT_ERR(krabka_key_encode(&key, enc, 10, &len, ES), KRABKA_ERR_BUFFER_TOO_SMALL);
    EXPECT_ERR(krabka_key_encode(&key, enc, 11, &len, ES), KRABKA_OK);
    key.role_len = 100000;
    EXPECT_ERR(krabka_key_encode(&key, enc, sizeof enc, &len, ES), E);
    key.role_len = 250;
    memset(key.role, 'r', 250);
    EXPECT_ERR(krabka_key_encode(&key, enc, sizeof enc, &len, ES), KRABKA_ERR_ROLE_TOO_LONG);
    key.role_len = 3;
    key.kind = 7;
    EXPECT_ERR(krabka_key_encode(&key, enc, sizeof enc, &len, ES), KRABKA_ERR_UNKNOWN_KIND);
    key.kind = KRABKA_KIND_REGISTRATION;
    EXPECT_ERR(krabka_key_encode(&key, enc, sizeof enc, &len, ES), KRABKA_ERR_EMPTY_MEMBER);

    krabka_key_t kout;
    krabka_registration_t rout;
    krabka_lease_t lout;
    EXPECT_ERR(krabka_key_decode(NULL, 0, &kout, ES), KRABKA_ERR_TRUNCATED);
    EXPECT_ERR(krabka_key_decode(NULL, 10, &kout, ES), E);
    EXPECT_ERR(krabka_key_decode(enc, 11, NULL, ES), E);
    EXPECT_ERR(krabka_registration_encode(NULL, enc, sizeof enc, &len, ES), E);
    EXPECT_ERR(krabka_registration_decode(NULL, 3, &rout, ES), E);
    EXPECT_ERR(krabka_registration_decode(enc, 3, NULL, ES), E);
    EXPECT_ERR(krabka_lease_encode(NULL, enc, sizeof enc, &len, ES), E);
    EXPECT_ERR(krabka_lease_decode(NULL, 3, &lout, ES), E);
    EXPECT_ERR(krabka_lease_decode(enc, 3, NULL, ES), E);
    memset(&lout, 0, sizeof lout);
    lout.member_len = 1;
    lout.member[0] = 'm';
    lout.token.producer_id = -1;
    EXPECT_ERR(krabka_lease_encode(&lout, enc, sizeof enc, &len, ES), KRABKA_ERR_NEGATIVE_TOKEN);

    /* Errors: static strings for every code, unknown codes handled. */
    EXPECT(strcmp(krabka_err2name(KRABKA_ERR_FENCED), "FENCED") == 0);
    EXPECT(strcmp(krabka_err2name((krabka_err_t)9999), "UNKNOWN") == 0);
    EXPECT(strcmp(krabka_err2str((krabka_err_t)-5), "unknown error") == 0);
    EXPECT(krabka_err_is_retriable(KRABKA_ERR_TIMEOUT) && krabka_err_is_retriable(KRABKA_ERR_TRANSPORT));
    EXPECT(!krabka_err_is_retriable(KRABKA_ERR_FENCED) && krabka_err_is_fatal(KRABKA_ERR_FENCED));
    EXPECT(!krabka_err_is_fatal(KRABKA_OK) && !krabka_err_is_fatal((krabka_err_t)9999));
    EXPECT(krabka_version_number() == KRABKA_VERSION_NUMBER);
    EXPECT(strcmp(krabka_version(), KRABKA_VERSION_STRING) == 0);
    EXPECT(krabka_abi_version() == KRABKA_ABI_VERSION);
}

static void errstr_buffers(void) {
    char small[8];
    /* Truncated to size - 1 with a NUL; nothing past size is written. */
    memset(small, 'Z', sizeof small);
    EXPECT_ERR(krabka_role_validate("", 0, small, 5), KRABKA_ERR_EMPTY_ROLE);
    EXPECT(strlen(small) == 4 && small[5] == 'Z' && small[7] == 'Z');
    memset(small, 'Z', sizeof small);
    EXPECT_ERR(krabka_role_validate("", 0, small, 1), KRABKA_ERR_EMPTY_ROLE);
    EXPECT(small[0] == '\0' && small[1] == 'Z');
    /* size 0: not written at all; NULL with any size: tolerated. */
    memset(small, 'Z', sizeof small);
    EXPECT_ERR(krabka_role_validate("", 0, small, 0), KRABKA_ERR_EMPTY_ROLE);
    EXPECT(small[0] == 'Z');
    EXPECT_ERR(krabka_role_validate("", 0, NULL, 100), KRABKA_ERR_EMPTY_ROLE);
    EXPECT_ERR(krabka_role_validate("", 0, NULL, 0), KRABKA_ERR_EMPTY_ROLE);
    /* Never written on success. */
    memset(small, 'Z', sizeof small);
    EXPECT_ERR(krabka_role_validate("ok", KRABKA_NTS, small, sizeof small), KRABKA_OK);
    EXPECT(small[0] == 'Z');
    /* A reason is given on failure. */
    EXPECT_ERR(krabka_role_validate("", 0, ES), KRABKA_ERR_EMPTY_ROLE);
    EXPECT(strlen(errstr) > 0 && strstr(errstr, "role") != NULL);
}

static void configuration(void) {
    char v[64];
    size_t vs;
    EXPECT_ERR(krabka_conf_set(NULL, "client.id", "x", ES), H);
    EXPECT_ERR(krabka_conf_get(NULL, "client.id", v, &vs), H);
    EXPECT_ERR(krabka_conf_destroy(NULL), H);

    krabka_conf_t *conf = krabka_conf_new();
    EXPECT(conf != NULL);
    EXPECT_ERR(krabka_conf_set(conf, NULL, "x", ES), E);
    EXPECT_ERR(krabka_conf_set(conf, "client.id", NULL, ES), E);
    EXPECT_ERR(krabka_conf_set(conf, "no.such.key", "x", ES), KRABKA_ERR_UNKNOWN_CONFIG);
    EXPECT(strstr(errstr, "no.such.key") != NULL);
    EXPECT_ERR(krabka_conf_set(conf, "krabka.lease.ms", "soon", ES), KRABKA_ERR_INVALID_CONFIG);
    EXPECT(strstr(errstr, "krabka.lease.ms") != NULL);
    EXPECT_ERR(krabka_conf_set(conf, "client.id", "misuse-test", ES), KRABKA_OK);

    vs = sizeof v;
    EXPECT_ERR(krabka_conf_get(conf, NULL, v, &vs), E);
    EXPECT_ERR(krabka_conf_get(conf, "client.id", v, NULL), E);
    EXPECT_ERR(krabka_conf_get(conf, "no.such.key", v, &vs), KRABKA_ERR_UNKNOWN_CONFIG);
    vs = 0;
    EXPECT_ERR(krabka_conf_get(conf, "client.id", NULL, &vs), KRABKA_OK); /* size query */
    EXPECT(vs == strlen("misuse-test") + 1);
    vs = 3;
    EXPECT_ERR(krabka_conf_get(conf, "client.id", v, &vs), KRABKA_ERR_BUFFER_TOO_SMALL);
    EXPECT(vs == strlen("misuse-test") + 1);
    vs = sizeof v;
    EXPECT_ERR(krabka_conf_get(conf, "client.id", v, &vs), KRABKA_OK);
    EXPECT(strcmp(v, "misuse-test") == 0);
    EXPECT_ERR(krabka_conf_set(conf, "sasl.password", "hunter2", ES), KRABKA_OK);
    vs = sizeof v;
    EXPECT_ERR(krabka_conf_get(conf, "sasl.password", v, &vs), KRABKA_OK);
    EXPECT(strcmp(v, "[redacted]") == 0);

    /* Wrong kind: a conf is not a client, leadership or status. */
    krabka_token_t tok;
    int32_t p;
    EXPECT_ERR(krabka_client_destroy((krabka_client_t *)conf), H);
    EXPECT_ERR(krabka_leadership_token((krabka_leadership_t *)conf, &tok), H);
    EXPECT_ERR(krabka_leadership_destroy((krabka_leadership_t *)conf), H);
    EXPECT_ERR(krabka_status_partition((krabka_status_t *)conf, &p), H);
    EXPECT_ERR(krabka_status_destroy((krabka_status_t *)conf), H);

    /* A made-up handle (the address of a local). */
    int local = 0;
    EXPECT_ERR(krabka_conf_set((krabka_conf_t *)&local, "client.id", "x", ES), H);
    EXPECT_ERR(krabka_conf_destroy((krabka_conf_t *)&local), H);

    /* Destroyed and destroyed twice. */
    EXPECT_ERR(krabka_conf_destroy(conf), KRABKA_OK);
    EXPECT_ERR(krabka_conf_destroy(conf), H);
    EXPECT_ERR(krabka_conf_set(conf, "client.id", "x", ES), H);
    vs = sizeof v;
    EXPECT_ERR(krabka_conf_get(conf, "client.id", v, &vs), H);

    /* Stale-handle quarantine: later handles never reuse a destroyed
     * handle's address while it is quarantined, so it stays invalid. */
    krabka_conf_t *later[200];
    int reused = 0;
    for (int i = 0; i < 200; i++) {
        later[i] = krabka_conf_new();
        if (later[i] == conf)
            reused = 1;
    }
    EXPECT(!reused);
    EXPECT_ERR(krabka_conf_set(conf, "client.id", "x", ES), H);
    for (int i = 0; i < 200; i++)
        EXPECT_ERR(krabka_conf_destroy(later[i]), KRABKA_OK);
}

static void client_and_leadership(void) {
    krabka_client_t *client = NULL;
    krabka_leadership_t *lead = (krabka_leadership_t *)0x1;
    krabka_status_t *st = NULL;
    int64_t retry;

    EXPECT_ERR(krabka_client_new(NULL, &client, ES), H);
    krabka_conf_t *conf = krabka_conf_new();
    EXPECT_ERR(krabka_conf_set(conf, "bootstrap.servers", "127.0.0.1:1", ES), KRABKA_OK);
    EXPECT_ERR(krabka_conf_set(conf, "request.timeout.ms", "300", ES), KRABKA_OK);
    EXPECT_ERR(krabka_client_new(conf, NULL, ES), E);
    EXPECT_ERR(krabka_client_new(conf, &client, ES), KRABKA_OK);
    EXPECT_ERR(krabka_conf_destroy(conf), KRABKA_OK); /* the client keeps a copy */
    EXPECT_ERR(krabka_client_new(conf, &client, ES), H); /* conf destroyed: client untouched */

    /* NULL arguments of the blocking calls answer before any I/O. */
    EXPECT_ERR(krabka_client_acquire(NULL, "r", KRABKA_NTS, "m", KRABKA_NTS, 10, &lead, ES), H);
    EXPECT_ERR(krabka_client_acquire(client, NULL, KRABKA_NTS, "m", KRABKA_NTS, 10, &lead, ES), E);
    EXPECT_ERR(krabka_client_acquire(client, "r", KRABKA_NTS, NULL, KRABKA_NTS, 10, &lead, ES), E);
    EXPECT_ERR(krabka_client_acquire(client, "", 0, "m", KRABKA_NTS, 10, &lead, ES), KRABKA_ERR_EMPTY_ROLE);
    EXPECT_ERR(krabka_client_acquire(client, "r", KRABKA_NTS, "m", KRABKA_NTS, 10, NULL, ES), E);
    EXPECT_ERR(krabka_client_acquire(client, "r", KRABKA_NTS, "m", KRABKA_NTS, -1, &lead, ES), E);
    EXPECT_ERR(krabka_client_try_acquire(NULL, "r", KRABKA_NTS, "m", KRABKA_NTS, 10, &lead, &retry, ES), H);
    EXPECT_ERR(krabka_client_try_acquire(client, "r", KRABKA_NTS, "m", KRABKA_NTS, 10, NULL, &retry, ES), E);
    EXPECT_ERR(krabka_client_try_acquire(client, "r", KRABKA_NTS, "m", KRABKA_NTS, -5, &lead, &retry, ES), E);
    EXPECT_ERR(krabka_client_describe(NULL, "r", KRABKA_NTS, 10, &st, ES), H);
    EXPECT_ERR(krabka_client_describe(client, NULL, KRABKA_NTS, 10, &st, ES), E);
    EXPECT_ERR(krabka_client_describe(client, "r", KRABKA_NTS, 10, NULL, ES), E);
    EXPECT_ERR(krabka_client_describe(client, "r", KRABKA_NTS, -1, &st, ES), E);
    EXPECT_ERR(krabka_client_leave(NULL, "r", KRABKA_NTS, "m", KRABKA_NTS, 10, ES), H);
    {
        krabka_conf_t *other = krabka_conf_new(); /* a live handle of another kind */
        EXPECT_ERR(krabka_client_leave((krabka_client_t *)other, "r", KRABKA_NTS, "m", KRABKA_NTS, 10, ES), H);
        EXPECT_ERR(krabka_conf_destroy(other), KRABKA_OK);
    }
    EXPECT_ERR(krabka_client_leave(client, NULL, KRABKA_NTS, "m", KRABKA_NTS, 10, ES), E);
    EXPECT_ERR(krabka_client_leave(client, "r", KRABKA_NTS, NULL, KRABKA_NTS, 10, ES), E);
    EXPECT_ERR(krabka_client_leave(client, "r", KRABKA_NTS, "", 0, 10, ES), KRABKA_ERR_EMPTY_MEMBER);
    EXPECT_ERR(krabka_client_leave(client, "r", KRABKA_NTS, "m", KRABKA_NTS, -1, ES), E);

    /* Nobody listens on port 1: a bounded call gives up with a retriable code. */
    krabka_err_t err = krabka_client_describe(client, "r", KRABKA_NTS, 200, &st, ES);
    EXPECT(err == KRABKA_ERR_TIMEOUT || err == KRABKA_ERR_TRANSPORT);

    /* Leadership and status functions with NULL / wrong-kind handles. */
    krabka_token_t tok;
    krabka_lease_t lease;
    krabka_leadership_state_t state;
    int due, has, cur;
    size_t n;
    int32_t p;
    int64_t sk;
    krabka_roster_entry_t entry;
    char name[KRABKA_NAME_BUF];
    krabka_message_t msg = KRABKA_MESSAGE_INIT;
    msg.topic = "t";
    EXPECT_ERR(krabka_leadership_token(NULL, &tok), H);
    EXPECT_ERR(krabka_leadership_lease(NULL, &lease), H);
    EXPECT_ERR(krabka_leadership_state(NULL, &state), H);
    EXPECT_ERR(krabka_leadership_renew_due(NULL, &due), H);
    EXPECT_ERR(krabka_leadership_renew(NULL, 10, ES), H);
    EXPECT_ERR(krabka_leadership_produce(NULL, &msg, 1, 10, NULL, ES), H);
    EXPECT_ERR(krabka_leadership_resign(NULL, 10, ES), H);
    EXPECT_ERR(krabka_leadership_destroy(NULL), H);
    EXPECT_ERR(krabka_leadership_token((krabka_leadership_t *)client, &tok), H);
    EXPECT_ERR(krabka_leadership_renew((krabka_leadership_t *)client, 10, ES), H);
    EXPECT_ERR(krabka_leadership_produce((krabka_leadership_t *)client, &msg, 1, 10, NULL, ES), H);
    EXPECT_ERR(krabka_leadership_resign((krabka_leadership_t *)client, 10, ES), H);
    EXPECT_ERR(krabka_status_holder(NULL, &has, name, sizeof name, &n), H);
    EXPECT_ERR(krabka_status_token(NULL, &tok), H);
    EXPECT_ERR(krabka_status_current(NULL, &cur), H);
    EXPECT_ERR(krabka_status_lease(NULL, &has, &lease), H);
    EXPECT_ERR(krabka_status_partition(NULL, &p), H);
    EXPECT_ERR(krabka_status_skipped(NULL, &sk), H);
    EXPECT_ERR(krabka_status_removed(NULL, &sk), H);
    EXPECT_ERR(krabka_status_removed((krabka_status_t *)client, &sk), H);
    EXPECT_ERR(krabka_status_roster_count(NULL, &n), H);
    EXPECT_ERR(krabka_status_roster_entry(NULL, 0, &entry), H);
    EXPECT_ERR(krabka_status_destroy(NULL), H);
    EXPECT_ERR(krabka_status_token((krabka_status_t *)client, &tok), H);
    EXPECT_ERR(krabka_conf_destroy((krabka_conf_t *)client), H);

    /* Destroyed client: every call answers INVALID_HANDLE; twice too. */
    EXPECT_ERR(krabka_client_destroy(client), KRABKA_OK);
    EXPECT_ERR(krabka_client_destroy(client), H);
    EXPECT_ERR(krabka_client_acquire(client, "r", KRABKA_NTS, "m", KRABKA_NTS, 10, &lead, ES), H);
    EXPECT_ERR(krabka_client_describe(client, "r", KRABKA_NTS, 10, &st, ES), H);
    EXPECT(strstr(errstr, "destroyed") != NULL);
}

/* The type, tag and error of an event (INVALID_HANDLE: -1 / 0 / the code). */
static int ev_type(const krabka_event_t *ev) {
    krabka_event_type_t t = KRABKA_EVENT_NONE;
    return krabka_event_type(ev, &t) == KRABKA_OK ? (int)t : -1;
}

static uint64_t ev_tag(const krabka_event_t *ev) {
    uint64_t tag = 0;
    return krabka_event_tag(ev, &tag) == KRABKA_OK ? tag : 0;
}

static krabka_err_t ev_err(const krabka_event_t *ev, char *buf, size_t size) {
    krabka_err_t code = KRABKA_ERR_INTERNAL;
    krabka_err_t rc = krabka_event_error(ev, &code, buf, size);
    return rc == KRABKA_OK ? code : rc;
}

/* The accessors of a queue event refuse what the event's type does not
 * carry (INVALID_ARG, errstr naming both types), a NULL out, NULL,
 * destroyed and foreign events (INVALID_HANDLE). ev is an ACQUIRE event
 * that failed, lev a LOG event; both are destroyed here. */
static void event_accessors(krabka_event_t *ev, krabka_event_t *lev, krabka_queue_t *q) {
    krabka_event_type_t t;
    uint64_t tag;
    krabka_err_t code;
    krabka_leadership_t *l = (krabka_leadership_t *)0x1;
    krabka_leadership_state_t st;
    krabka_log_level_t level;
    const char *line = NULL;
    krabka_watch_event_t *we = (krabka_watch_event_t *)0x1;
    krabka_watch_t *w = (krabka_watch_t *)0x1;
    krabka_status_t *status = (krabka_status_t *)0x1;
    krabka_produce_result_t res[2];
    size_t n = 99;
    int64_t retry = 0;

    EXPECT_ERR(krabka_event_type(NULL, &t), H);
    EXPECT_ERR(krabka_event_type(ev, NULL), E);
    EXPECT_ERR(krabka_event_tag(NULL, &tag), H);
    EXPECT_ERR(krabka_event_tag(ev, NULL), E);
    EXPECT_ERR(krabka_event_error(NULL, &code, ES), H);
    EXPECT(strstr(errstr, "krabka_event_t") != NULL && strstr(errstr, "NULL") != NULL);
    EXPECT_ERR(krabka_event_error(ev, NULL, ES), E);
    EXPECT_ERR(krabka_event_error(ev, &code, NULL, 0), KRABKA_OK);
    EXPECT(code == KRABKA_ERR_TIMEOUT || code == KRABKA_ERR_TRANSPORT);
    {
        char small[6];
        memset(small, 'Z', sizeof small);
        EXPECT_ERR(krabka_event_error(ev, &code, small, 4), KRABKA_OK); /* truncated, never past the size */
        EXPECT(strlen(small) == 3 && small[4] == 'Z');
    }

    /* A failed ACQUIRE: no leadership (OK with NULL), and none of the other
     * types' data. */
    EXPECT_ERR(krabka_event_take_leadership(ev, &l, ES), KRABKA_OK);
    EXPECT(l == NULL);
    EXPECT_ERR(krabka_event_take_leadership(ev, NULL, ES), E);
    EXPECT_ERR(krabka_event_state(ev, &st, ES), E);
    EXPECT(strstr(errstr, "KRABKA_EVENT_ACQUIRE") != NULL && strstr(errstr, "KRABKA_EVENT_ENDED") != NULL);
    EXPECT_ERR(krabka_event_results(ev, res, 2, &n, ES), E);
    EXPECT(strstr(errstr, "KRABKA_EVENT_ACQUIRE") != NULL && strstr(errstr, "KRABKA_EVENT_PRODUCE") != NULL);
    EXPECT_ERR(krabka_event_log(ev, &level, &line, ES), E);
    EXPECT(strstr(errstr, "KRABKA_EVENT_ACQUIRE") != NULL && strstr(errstr, "KRABKA_EVENT_LOG") != NULL && line == NULL);
    EXPECT_ERR(krabka_event_retry_at(ev, &retry, ES), E);
    EXPECT(strstr(errstr, "KRABKA_EVENT_TRY_ACQUIRE") != NULL);
    EXPECT_ERR(krabka_event_take_watch_event(ev, &we, ES), E);
    EXPECT(strstr(errstr, "KRABKA_EVENT_WATCH") != NULL && we == (krabka_watch_event_t *)0x1);
    EXPECT_ERR(krabka_event_take_watch(ev, &w, ES), E);
    EXPECT(strstr(errstr, "KRABKA_EVENT_WATCH_OPEN") != NULL);
    EXPECT_ERR(krabka_event_take_status(ev, &status, ES), E);
    EXPECT(strstr(errstr, "KRABKA_EVENT_DESCRIBE") != NULL);

    /* A LOG event: its line, nothing else. */
    EXPECT(ev_type(lev) == KRABKA_EVENT_LOG && ev_err(lev, ES) == KRABKA_OK && errstr[0] == '\0');
    EXPECT_ERR(krabka_event_log(lev, &level, &line, ES), KRABKA_OK);
    EXPECT(line != NULL && strlen(line) > 0 && level >= KRABKA_LOG_ERROR && level <= KRABKA_LOG_DEBUG);
    EXPECT_ERR(krabka_event_log(lev, NULL, &line, ES), E);
    EXPECT_ERR(krabka_event_log(lev, &level, NULL, ES), E);
    l = (krabka_leadership_t *)0x1;
    EXPECT_ERR(krabka_event_take_leadership(lev, &l, ES), E);
    EXPECT(strstr(errstr, "KRABKA_EVENT_LOG") != NULL && strstr(errstr, "KRABKA_EVENT_ACQUIRE") != NULL &&
           strstr(errstr, "KRABKA_EVENT_TRY_ACQUIRE") != NULL);
    EXPECT_ERR(krabka_event_results(lev, NULL, 0, &n, ES), E);
    EXPECT_ERR(krabka_event_state(lev, &st, NULL, 0), E); /* errstr NULL: the code alone */

    /* Handles of another kind are not events, and events are nothing else. */
    EXPECT_ERR(krabka_event_type((krabka_event_t *)q, &t), H);
    EXPECT_ERR(krabka_event_take_leadership((krabka_event_t *)q, &l, ES), H);
    EXPECT(strstr(errstr, "krabka_event_t") != NULL && strstr(errstr, "krabka_queue_t") != NULL);
    EXPECT_ERR(krabka_event_destroy((krabka_event_t *)q), H);
    EXPECT_ERR(krabka_queue_destroy((krabka_queue_t *)ev), H);
    EXPECT_ERR(krabka_leadership_destroy((krabka_leadership_t *)ev), H);
    EXPECT_ERR(krabka_watch_event_destroy((krabka_watch_event_t *)ev), H);
    int local = 0;
    EXPECT_ERR(krabka_event_type((krabka_event_t *)&local, &t), H);
    EXPECT_ERR(krabka_event_destroy((krabka_event_t *)&local), H);

    /* Destroyed: every accessor answers INVALID_HANDLE, a second destroy too. */
    EXPECT_ERR(krabka_event_destroy(ev), KRABKA_OK);
    EXPECT_ERR(krabka_event_destroy(ev), H);
    EXPECT_ERR(krabka_event_destroy(NULL), H);
    EXPECT_ERR(krabka_event_type(ev, &t), H);
    EXPECT_ERR(krabka_event_tag(ev, &tag), H);
    EXPECT_ERR(krabka_event_error(ev, &code, ES), H);
    EXPECT(strstr(errstr, "destroyed") != NULL);
    EXPECT_ERR(krabka_event_take_leadership(ev, &l, ES), H);
    EXPECT(strstr(errstr, "destroyed") != NULL);
    EXPECT_ERR(krabka_event_results(ev, res, 2, &n, ES), H);
    EXPECT_ERR(krabka_event_log(lev, &level, &line, ES), KRABKA_OK);
    EXPECT_ERR(krabka_event_destroy(lev), KRABKA_OK);
    EXPECT_ERR(krabka_event_log(lev, &level, &line, ES), H);
}

/* Watch event accessors without a watch event. */
static void watch_event_accessors(krabka_queue_t *q) {
    krabka_watch_event_kind_t kind;
    krabka_token_t tok;
    krabka_lease_t lease;
    krabka_roster_entry_t entry;
    char name[KRABKA_NAME_BUF];
    uint8_t meta[8];
    size_t n;
    int has;
    int64_t v;
    EXPECT_ERR(krabka_watch_event_destroy(NULL), H);
    EXPECT_ERR(krabka_watch_event_kind(NULL, &kind), H);
    EXPECT_ERR(krabka_watch_event_role(NULL, name, sizeof name, &n), H);
    EXPECT_ERR(krabka_watch_event_holder(NULL, &has, name, sizeof name, &n), H);
    EXPECT_ERR(krabka_watch_event_token(NULL, &tok), H);
    EXPECT_ERR(krabka_watch_event_prev_holder(NULL, &has, name, sizeof name, &n), H);
    EXPECT_ERR(krabka_watch_event_prev_token(NULL, &tok), H);
    EXPECT_ERR(krabka_watch_event_lease(NULL, &has, &lease), H);
    EXPECT_ERR(krabka_watch_event_roster_count(NULL, &n), H);
    EXPECT_ERR(krabka_watch_event_roster_entry(NULL, 0, &entry), H);
    EXPECT_ERR(krabka_watch_event_metadata(NULL, meta, sizeof meta, &n), H);
    EXPECT_ERR(krabka_watch_event_offset(NULL, &v), H);
    EXPECT_ERR(krabka_watch_event_at(NULL, &v), H);
    EXPECT_ERR(krabka_watch_event_kind((krabka_watch_event_t *)q, &kind), H);
    EXPECT_ERR(krabka_watch_event_destroy((krabka_watch_event_t *)q), H);
}

/* Every async form checks its arguments at once: the error is returned
 * with a reason and nothing is posted. */
static void async_arguments(krabka_client_t *client, krabka_queue_t *q) {
    krabka_event_t *ev = (krabka_event_t *)0x1;
    int fd = -1;
    EXPECT_ERR(krabka_queue_fd(q, &fd), KRABKA_OK);
    EXPECT_ERR(krabka_client_try_acquire_async(NULL, "r", KRABKA_NTS, "m", KRABKA_NTS, 10, q, 1, ES), H);
    EXPECT_ERR(krabka_client_try_acquire_async(client, "", 0, "m", KRABKA_NTS, 10, q, 1, ES), KRABKA_ERR_EMPTY_ROLE);
    EXPECT(strstr(errstr, "role") != NULL);
    EXPECT_ERR(krabka_client_try_acquire_async(client, "r", KRABKA_NTS, "\xff", KRABKA_NTS, 10, q, 1, ES),
               KRABKA_ERR_INVALID_UTF8);
    EXPECT_ERR(krabka_client_try_acquire_async(client, "r", KRABKA_NTS, "m", KRABKA_NTS, -1, q, 1, ES), E);
    EXPECT(strstr(errstr, "timeout_ms") != NULL);
    EXPECT_ERR(krabka_client_try_acquire_async(client, "r", KRABKA_NTS, "m", KRABKA_NTS, 10, NULL, 1, ES), H);
    EXPECT(strstr(errstr, "krabka_queue_t") != NULL);
    EXPECT_ERR(krabka_client_describe_async(NULL, "r", KRABKA_NTS, 10, q, 1, ES), H);
    EXPECT_ERR(krabka_client_describe_async(client, NULL, KRABKA_NTS, 10, q, 1, ES), E);
    EXPECT_ERR(krabka_client_describe_async(client, "r", KRABKA_NTS, -1, q, 1, ES), E);
    EXPECT_ERR(krabka_client_describe_async(client, "r", KRABKA_NTS, 10, (krabka_queue_t *)client, 1, ES), H);
    EXPECT_ERR(krabka_client_leave_async(NULL, "r", KRABKA_NTS, "m", KRABKA_NTS, 10, q, 1, ES), H);
    EXPECT_ERR(krabka_client_leave_async(client, "r", KRABKA_NTS, "", 0, 10, q, 1, ES), KRABKA_ERR_EMPTY_MEMBER);
    {
        char longname[300];
        memset(longname, 'm', sizeof longname);
        EXPECT_ERR(krabka_client_leave_async(client, "r", KRABKA_NTS, longname, 250, 10, q, 1, ES),
                   KRABKA_ERR_MEMBER_TOO_LONG);
        EXPECT_ERR(krabka_client_describe_async(client, longname, 250, 10, q, 1, ES), KRABKA_ERR_ROLE_TOO_LONG);
    }
    EXPECT_ERR(krabka_client_leave_async(client, "r", KRABKA_NTS, "m", KRABKA_NTS, 10, NULL, 1, ES), H);
    EXPECT_ERR(krabka_client_watch_async(NULL, "r", KRABKA_NTS, 0, 10, q, 1, ES), H);
    EXPECT_ERR(krabka_client_watch_async(client, "r", KRABKA_NTS, 8, 10, q, 1, ES), E);
    EXPECT(strstr(errstr, "flags") != NULL);
    EXPECT_ERR(krabka_client_watch_async(client, "", 0, 0, 10, q, 1, ES), KRABKA_ERR_EMPTY_ROLE);
    EXPECT_ERR(krabka_client_watch_async(client, "r", KRABKA_NTS, 0, -1, q, 1, ES), E);
    EXPECT_ERR(krabka_client_watch_async(client, "r", KRABKA_NTS, 0, 10, NULL, 1, ES), H);

    krabka_message_t m = KRABKA_MESSAGE_INIT;
    m.topic = "t";
    uint8_t data[4] = {1, 2, 3, 4};
    EXPECT_ERR(krabka_leadership_produce_async(NULL, &m, 1, 10, q, 1, ES), H);
    EXPECT_ERR(krabka_leadership_produce_async((krabka_leadership_t *)client, &m, 1, 10, q, 1, ES), H);
    EXPECT(strstr(errstr, "krabka_leadership_t") != NULL && strstr(errstr, "krabka_client_t") != NULL);
    EXPECT_ERR(krabka_leadership_renew_async(NULL, 10, q, 1, ES), H);
    EXPECT_ERR(krabka_leadership_set_metadata_async(NULL, data, sizeof data, 10, q, 1, ES), H);
    EXPECT_ERR(krabka_leadership_resign_async(NULL, NULL, 0, 10, q, 1, ES), H);
    EXPECT_ERR(krabka_leadership_resign_async((krabka_leadership_t *)q, "m", KRABKA_NTS, 10, q, 1, ES), H);

    /* Nothing was posted. */
    struct pollfd p = {fd, POLLIN, 0};
    EXPECT(poll(&p, 1, 300) == 0);
    EXPECT_ERR(krabka_queue_poll(q, &ev), KRABKA_OK);
    EXPECT(ev == NULL);
}

/* The pipeline calls (input, records, offsets) without a leadership: every
 * handle checked (NULL, another kind, made up), NULL outs refused, nothing
 * posted. Their argument checks on a live leadership are tests/c/pipeline.c's. */
static void pipeline_handles(krabka_client_t *client, krabka_queue_t *q) {
    const char *topics[] = {"requests"};
    krabka_input_t *in = (krabka_input_t *)0x1;
    krabka_records_t *recs = (krabka_records_t *)0x1;
    krabka_offset_t off[2];
    krabka_input_record_t rec;
    size_t n = 7;
    krabka_message_t m = KRABKA_MESSAGE_INIT;
    m.topic = "t";
    memset(off, 0, sizeof off);

    EXPECT_ERR(krabka_leadership_consume(NULL, topics, 1, 10, &in, ES), H);
    EXPECT(in == NULL);
    EXPECT(strstr(errstr, "krabka_leadership_t") != NULL && strstr(errstr, "NULL") != NULL);
    EXPECT_ERR(krabka_leadership_consume((krabka_leadership_t *)client, topics, 1, 10, &in, ES), H);
    EXPECT(strstr(errstr, "krabka_client_t") != NULL);
    EXPECT_ERR(krabka_leadership_consume((krabka_leadership_t *)client, topics, 1, 10, NULL, ES), E);
    EXPECT(strstr(errstr, "out") != NULL);
    EXPECT_ERR(krabka_leadership_consume_async(NULL, topics, 1, 10, q, 1, ES), H);
    EXPECT_ERR(krabka_leadership_consume_async((krabka_leadership_t *)q, topics, 1, 10, q, 1, ES), H);
    EXPECT_ERR(krabka_input_poll(NULL, 10, 10, &recs, ES), H);
    EXPECT(recs == NULL);
    EXPECT(strstr(errstr, "krabka_input_t") != NULL);
    EXPECT_ERR(krabka_input_poll((krabka_input_t *)client, 10, 10, &recs, ES), H);
    EXPECT_ERR(krabka_input_poll((krabka_input_t *)client, 10, 10, NULL, ES), E);
    EXPECT_ERR(krabka_input_poll_async(NULL, 10, 10, q, 1, ES), H);
    EXPECT_ERR(krabka_input_poll_async((krabka_input_t *)q, 10, 10, q, 1, ES), H);
    EXPECT_ERR(krabka_input_position(NULL, off, 2, &n), H);
    EXPECT_ERR(krabka_input_committed((krabka_input_t *)client, off, 2, &n), H);
    EXPECT_ERR(krabka_input_destroy(NULL), H);
    EXPECT_ERR(krabka_input_destroy((krabka_input_t *)client), H);
    EXPECT_ERR(krabka_records_count(NULL, &n), H);
    EXPECT_ERR(krabka_records_count((krabka_records_t *)client, &n), H);
    EXPECT_ERR(krabka_records_get(NULL, 0, &rec), H);
    EXPECT_ERR(krabka_records_get((krabka_records_t *)q, 0, &rec), H);
    EXPECT_ERR(krabka_records_destroy(NULL), H);
    EXPECT_ERR(krabka_records_destroy((krabka_records_t *)client), H);
    EXPECT(n == 7);
    EXPECT_ERR(krabka_leadership_produce_offsets(NULL, off, 1, &m, 1, 10, NULL, ES), H);
    EXPECT_ERR(krabka_leadership_produce_offsets((krabka_leadership_t *)client, off, 1, &m, 1, 10, NULL, ES), H);
    EXPECT_ERR(krabka_leadership_produce_offsets_async(NULL, off, 1, &m, 1, 10, q, 1, ES), H);
    EXPECT_ERR(krabka_event_take_input(NULL, &in, ES), H);
    EXPECT_ERR(krabka_event_take_records(NULL, &recs, ES), H);
    {
        char buf[KRABKA_NAME_BUF * 2];
        size_t len = 0;
        EXPECT_ERR(krabka_client_pipeline_group(NULL, "r", KRABKA_NTS, buf, sizeof buf, &len, ES), H);
        EXPECT_ERR(krabka_client_pipeline_group(client, "", 0, buf, sizeof buf, &len, ES), KRABKA_ERR_EMPTY_ROLE);
        EXPECT_ERR(krabka_client_pipeline_group(client, "r", KRABKA_NTS, buf, sizeof buf, &len, ES), KRABKA_OK);
        EXPECT(len > 0 && strlen(buf) == len);
        EXPECT_ERR(krabka_client_pipeline_group(client, "r", KRABKA_NTS, buf, 1, &len, ES), KRABKA_ERR_BUFFER_TOO_SMALL);
        EXPECT(len > 0 && strstr(errstr, "buf_size") != NULL);
    }

    /* Nothing was posted. */
    krabka_event_t *ev = (krabka_event_t *)0x1;
    EXPECT_ERR(krabka_queue_poll(q, &ev), KRABKA_OK);
    EXPECT(ev == NULL);
}

/* krabka_get_err_descs is the table the four error functions answer from,
 * in numeric order; codes outside it are UNKNOWN. */
static void error_descriptions(void) {
    const krabka_err_desc_t *d = NULL;
    size_t n = 0, found = 0;
    krabka_get_err_descs(&d, &n);
    EXPECT(d != NULL && n >= 30);
    krabka_get_err_descs(NULL, NULL); /* tolerated */
    {
        size_t n2 = 0;
        const krabka_err_desc_t *d2 = NULL;
        krabka_get_err_descs(NULL, &n2);
        krabka_get_err_descs(&d2, NULL);
        EXPECT(n2 == n && d2 == d);
    }
    for (size_t i = 0; d && i < n; i++) {
        EXPECT(i == 0 || d[i].code > d[i - 1].code);
        EXPECT(d[i].name && strcmp(d[i].name, krabka_err2name(d[i].code)) == 0);
        EXPECT(d[i].desc && strcmp(d[i].desc, krabka_err2str(d[i].code)) == 0);
        EXPECT(d[i].retriable == krabka_err_is_retriable(d[i].code));
        EXPECT(d[i].fatal == krabka_err_is_fatal(d[i].code));
    }
    EXPECT(d && d[0].code == KRABKA_OK && strcmp(d[0].name, "OK") == 0);
    for (int code = -2; code < 200; code++) {
        int in = 0;
        for (size_t i = 0; d && i < n; i++)
            in |= d[i].code == (krabka_err_t)code;
        found += (size_t)in;
        if (!in)
            EXPECT(strcmp(krabka_err2name((krabka_err_t)code), "UNKNOWN") == 0);
    }
    EXPECT(found == n);
    /* The named codes of the header are all in it. */
    const krabka_err_t named[] = {KRABKA_ERR_INVALID_ARG, KRABKA_ERR_TRUNCATED, KRABKA_ERR_INVALID_LEASE_CONFIG,
                                  KRABKA_ERR_FENCED, KRABKA_ERR_FORKED, KRABKA_ERR_INTERNAL};
    for (size_t k = 0; k < sizeof named / sizeof named[0]; k++) {
        int in = 0;
        for (size_t i = 0; d && i < n; i++)
            in |= d[i].code == named[k];
        EXPECT(in);
    }
}

/* Event queues, leadership events, logs and statistics: bad handles answer
 * INVALID_HANDLE, bad pointers INVALID_ARG; a queue delivers the result of an
 * acquire_async that cannot reach a broker, and franz-go's debug lines. */
static void events_and_queues(void) {
    krabka_queue_t *q = NULL, *lq = NULL;
    krabka_event_t *ev = (krabka_event_t *)0x1, *acq = NULL, *logev = NULL;
    krabka_leadership_state_t state;
    krabka_err_t code;
    int fd = -1;
    char *json = NULL;
    size_t len = 0;

    EXPECT_ERR(krabka_queue_new(NULL), E);
    EXPECT_ERR(krabka_queue_new(&q), KRABKA_OK);
    EXPECT_ERR(krabka_queue_new(&lq), KRABKA_OK);
    EXPECT_ERR(krabka_queue_fd(NULL, &fd), H);
    EXPECT_ERR(krabka_queue_fd(q, NULL), E);
    EXPECT_ERR(krabka_queue_fd(q, &fd), KRABKA_OK);
    EXPECT(fd >= 0);
    EXPECT_ERR(krabka_queue_poll(NULL, &ev), H);
    EXPECT(ev == NULL); /* cleared on failure too */
    EXPECT_ERR(krabka_queue_poll(q, NULL), E);
    ev = (krabka_event_t *)0x1;
    EXPECT_ERR(krabka_queue_poll(q, &ev), KRABKA_OK);
    EXPECT(ev == NULL);
    EXPECT_ERR(krabka_queue_destroy(NULL), H);

    EXPECT_ERR(krabka_leadership_wait(NULL, 10, &state), H);
    EXPECT_ERR(krabka_leadership_wait((krabka_leadership_t *)q, 10, &state), H);
    EXPECT_ERR(krabka_leadership_event_fd(NULL, &fd), H);
    EXPECT_ERR(krabka_leadership_event_fd((krabka_leadership_t *)q, &fd), H);
    EXPECT_ERR(krabka_leadership_end_error(NULL, &code, NULL, 0), H);
    EXPECT_ERR(krabka_leadership_ended_async(NULL, q, 1), H);
    EXPECT_ERR(krabka_client_stats_json(NULL, &json, &len), H);
    EXPECT_ERR(krabka_client_stats_json((krabka_client_t *)q, &json, &len), H);
    EXPECT_ERR(krabka_conf_set_log_cb(NULL, NULL, NULL), H);
    EXPECT_ERR(krabka_conf_set_log_queue(NULL, q, 0), H);

    krabka_conf_t *conf = krabka_conf_new();
    EXPECT_ERR(krabka_conf_set_log_queue(conf, (krabka_queue_t *)conf, 0), H);
    EXPECT_ERR(krabka_conf_set(conf, "bootstrap.servers", "127.0.0.1:1", ES), KRABKA_OK);
    EXPECT_ERR(krabka_conf_set(conf, "request.timeout.ms", "300", ES), KRABKA_OK);
    EXPECT_ERR(krabka_conf_set(conf, "krabka.debug", "true", ES), KRABKA_OK);
    EXPECT_ERR(krabka_conf_set(conf, "sasl.password", "pw-never-logged", ES), KRABKA_OK);
    EXPECT_ERR(krabka_conf_set_log_queue(conf, lq, 5), KRABKA_OK);
    krabka_client_t *client = NULL;
    EXPECT_ERR(krabka_client_new(conf, &client, ES), KRABKA_OK);
    EXPECT_ERR(krabka_conf_destroy(conf), KRABKA_OK);

    EXPECT_ERR(krabka_client_acquire_async(NULL, "r", KRABKA_NTS, "m", KRABKA_NTS, 10, q, 1, ES), H);
    EXPECT_ERR(krabka_client_acquire_async(client, "r", KRABKA_NTS, "m", KRABKA_NTS, 10, NULL, 1, ES), H);
    EXPECT_ERR(krabka_client_acquire_async(client, "r", KRABKA_NTS, "m", KRABKA_NTS, 10, (krabka_queue_t *)client, 1, ES), H);
    EXPECT_ERR(krabka_client_acquire_async(client, "", 0, "m", KRABKA_NTS, 10, q, 1, ES), KRABKA_ERR_EMPTY_ROLE);
    EXPECT_ERR(krabka_client_acquire_async(client, "r", KRABKA_NTS, "m", KRABKA_NTS, -1, q, 1, ES), E);
    async_arguments(client, q);
    pipeline_handles(client, q);
    EXPECT_ERR(krabka_client_acquire_async(client, "r", KRABKA_NTS, "m", KRABKA_NTS, 300, q, 42, ES), KRABKA_OK);
    struct pollfd p = {fd, POLLIN, 0};
    EXPECT(poll(&p, 1, 30000) == 1);
    EXPECT_ERR(krabka_queue_poll(q, &acq), KRABKA_OK);
    code = ev_err(acq, ES);
    EXPECT(ev_type(acq) == KRABKA_EVENT_ACQUIRE && ev_tag(acq) == 42 &&
           (code == KRABKA_ERR_TIMEOUT || code == KRABKA_ERR_TRANSPORT) && errstr[0]);
    EXPECT_ERR(krabka_queue_poll(q, &ev), KRABKA_OK);
    EXPECT(ev == NULL && poll(&p, 1, 0) == 0);

    EXPECT_ERR(krabka_client_stats_json(client, NULL, &len), E);
    EXPECT_ERR(krabka_client_stats_json(client, &json, &len), KRABKA_OK);
    EXPECT(json != NULL && strlen(json) == len && strstr(json, "\"challenges_lost\":0") != NULL);
    krabka_free(json);
    krabka_free(NULL);
    krabka_watch_t *w0 = NULL;
    EXPECT_ERR(krabka_client_watch(client, "", 0, 0, 10, &w0, ES), KRABKA_ERR_EMPTY_ROLE);
    EXPECT_ERR(krabka_client_watch(client, "r", KRABKA_NTS, 0, 10, NULL, ES), E);
    EXPECT_ERR(krabka_client_watch(client, "r", KRABKA_NTS, 8, 10, &w0, ES), E);
    EXPECT_ERR(krabka_client_watch(client, "r", KRABKA_NTS, 0, -1, &w0, ES), E);
    /* Two calls left pending, then the queue destroyed: their events are
     * never posted (valgrind: nothing leaks). */
    krabka_queue_t *gone = NULL;
    EXPECT_ERR(krabka_queue_new(&gone), KRABKA_OK);
    EXPECT_ERR(krabka_client_describe_async(client, "r", KRABKA_NTS, 2000, gone, 1, ES), KRABKA_OK);
    EXPECT_ERR(krabka_client_acquire_async(client, "r", KRABKA_NTS, "m", KRABKA_NTS, 2000, gone, 2, ES), KRABKA_OK);
    EXPECT_ERR(krabka_queue_destroy(gone), KRABKA_OK);
    EXPECT_ERR(krabka_client_destroy(client), KRABKA_OK);

    /* franz-go's lines at debug level went to the log queue, never the password. */
    int lines = 0, secret = 0;
    for (;;) {
        EXPECT_ERR(krabka_queue_poll(lq, &ev), KRABKA_OK);
        if (ev == NULL)
            break;
        krabka_log_level_t level;
        const char *line = "";
        EXPECT_ERR(krabka_event_log(ev, &level, &line, ES), KRABKA_OK);
        lines += ev_type(ev) == KRABKA_EVENT_LOG && ev_tag(ev) == 5 && strstr(line, "franz-go") != NULL;
        secret += strstr(line, "pw-never-logged") != NULL;
        if (logev == NULL)
            logev = ev; /* kept for the accessor checks below */
        else
            EXPECT_ERR(krabka_event_destroy(ev), KRABKA_OK);
    }
    EXPECT(lines > 0 && secret == 0 && logev != NULL);
    /* An event outlives its queue; the accessor checks destroy both. */
    EXPECT_ERR(krabka_queue_destroy(lq), KRABKA_OK);
    EXPECT(ev_type(logev) == KRABKA_EVENT_LOG);
    event_accessors(acq, logev, q);
    watch_event_accessors(q);

    krabka_watch_t *w = NULL;
    krabka_watch_event_t *we = (krabka_watch_event_t *)0x1;
    EXPECT_ERR(krabka_client_watch(NULL, "r", KRABKA_NTS, 0, 10, &w, ES), H);
    EXPECT_ERR(krabka_client_watch((krabka_client_t *)q, "r", KRABKA_NTS, 0, 10, &w, ES), H);
    EXPECT_ERR(krabka_watch_next(NULL, 10, &we, ES), H);
    EXPECT(we == NULL);
    EXPECT_ERR(krabka_watch_next((krabka_watch_t *)q, 10, &we, ES), H);
    EXPECT_ERR(krabka_watch_event_fd(NULL, &fd), H);
    EXPECT_ERR(krabka_watch_next_async(NULL, 10, q, 1), H);
    EXPECT_ERR(krabka_watch_destroy(NULL), H);
    EXPECT_ERR(krabka_watch_destroy((krabka_watch_t *)q), H);

    EXPECT_ERR(krabka_queue_destroy(q), KRABKA_OK);
    EXPECT_ERR(krabka_queue_destroy(q), H);
    EXPECT_ERR(krabka_queue_poll(q, &ev), H);
    EXPECT_ERR(krabka_queue_fd(q, &fd), H);
}

/* Handles from several threads at once: each thread makes, uses and destroys
 * its own configurations and checks that its destroyed ones stay invalid
 * while the others churn the registry. */
static void *churn(void *arg) {
    long bad = 0;
    char v[64];
    (void)arg;
    for (int i = 0; i < 300; i++) {
        krabka_conf_t *c = krabka_conf_new();
        size_t vs = sizeof v;
        if (krabka_conf_set(c, "client.id", "thread", NULL, 0) != KRABKA_OK ||
            krabka_conf_get(c, "client.id", v, &vs) != KRABKA_OK || strcmp(v, "thread") != 0)
            bad++;
        if (krabka_conf_destroy(c) != KRABKA_OK)
            bad++;
        if (krabka_conf_set(c, "client.id", "x", NULL, 0) != KRABKA_ERR_INVALID_HANDLE)
            bad++;
        krabka_token_t a = {i, 1}, b = {i, 2};
        if (krabka_token_compare(a, b) != -1)
            bad++;
    }
    return (void *)bad;
}

static void threads(void) {
    pthread_t t[4];
    for (int i = 0; i < 4; i++)
        EXPECT(pthread_create(&t[i], NULL, churn, NULL) == 0);
    for (int i = 0; i < 4; i++) {
        void *bad = NULL;
        pthread_join(t[i], &bad);
        EXPECT(bad == NULL);
    }
}

/* The elector's argument checks, handles and event accessors, on a client
 * whose broker does not exist (127.0.0.1:1): the loop rides through the
 * transport errors and krabka_elector_destroy still ends it. */
static void elector(void) {
    krabka_queue_t *q = NULL;
    krabka_client_t *c = NULL;
    krabka_elector_t *el = (krabka_elector_t *)0x1, *el2 = NULL;
    krabka_conf_t *conf = krabka_conf_new();
    krabka_term_event_kind_t kind;
    krabka_lease_event_kind_t lkind;
    krabka_stop_reason_t reason;
    krabka_token_t token;
    uint64_t term;
    int64_t deadline;
    int healthy = -1;
    char buf[8], reasonbuf[128];

    EXPECT_ERR(krabka_conf_set(conf, "bootstrap.servers", "127.0.0.1:1", ES), KRABKA_OK);
    EXPECT_ERR(krabka_client_new(conf, &c, ES), KRABKA_OK);
    krabka_conf_destroy(conf);
    EXPECT_ERR(krabka_queue_new(&q), KRABKA_OK);

    EXPECT_ERR(krabka_elector_new(NULL, "r", 1, "m", 1, 0, q, 0, &el, ES), H);
    EXPECT(el == NULL); /* cleared on failure */
    EXPECT_ERR(krabka_elector_new((krabka_client_t *)q, "r", 1, "m", 1, 0, q, 0, &el, ES), H);
    EXPECT_ERR(krabka_elector_new(c, "r", 1, "m", 1, 0, NULL, 0, &el, ES), H);
    EXPECT_ERR(krabka_elector_new(c, "r", 1, "m", 1, 0, (krabka_queue_t *)c, 0, &el, ES), H);
    EXPECT_ERR(krabka_elector_new(c, "r", 1, "m", 1, 0, q, 0, NULL, ES), E);
    EXPECT_ERR(krabka_elector_new(c, "r", 1, "m", 1, 4, q, 0, &el, ES), E);
    EXPECT(strstr(errstr, "flags") != NULL);
    EXPECT_ERR(krabka_elector_new(c, NULL, 1, "m", 1, 0, q, 0, &el, ES), E);
    EXPECT(krabka_elector_new(c, "", 0, "m", 1, 0, q, 0, &el, ES) != KRABKA_OK);
    EXPECT(krabka_elector_new(c, "r", 1, "", 0, 0, q, 0, &el, ES) != KRABKA_OK);
    EXPECT_ERR(krabka_elector_set_eligible(NULL, 1, 0, ES), H);
    EXPECT_ERR(krabka_elector_set_eligible((krabka_elector_t *)q, 1, 0, ES), H);
    EXPECT_ERR(krabka_elector_healthy(NULL, &healthy, NULL, 0), H);
    EXPECT_ERR(krabka_elector_destroy(NULL), H);
    EXPECT_ERR(krabka_elector_destroy((krabka_elector_t *)c), H);
    EXPECT_ERR(krabka_leadership_events_async(NULL, q, 0, ES), H);
    EXPECT_ERR(krabka_leadership_events_async((krabka_leadership_t *)q, q, 0, ES), H);

    /* Accessors on NULL and foreign events. */
    EXPECT_ERR(krabka_event_term_kind(NULL, &kind, ES), H);
    EXPECT_ERR(krabka_event_term(NULL, &term, ES), H);
    EXPECT_ERR(krabka_event_token(NULL, &token, ES), H);
    EXPECT_ERR(krabka_event_holder(NULL, buf, sizeof buf, NULL, ES), H);
    EXPECT_ERR(krabka_event_deadline(NULL, &deadline, ES), H);
    EXPECT_ERR(krabka_event_stop_reason(NULL, &reason, ES), H);
    EXPECT_ERR(krabka_event_lease_kind(NULL, &lkind, ES), H);
    EXPECT_ERR(krabka_event_term_kind((krabka_event_t *)q, &kind, ES), H);

    /* Two electors that never reach a broker: healthy while campaigning or
     * withdrawn, set_eligible bounded by its timeout, destroy ends them. */
    EXPECT_ERR(krabka_elector_new(c, "r", KRABKA_NTS, "m", KRABKA_NTS, 0, q, 7, &el, ES), KRABKA_OK);
    EXPECT_ERR(krabka_elector_new(c, "r", KRABKA_NTS, "m2", KRABKA_NTS, KRABKA_ELECT_INELIGIBLE | KRABKA_ELECT_NO_RECAMPAIGN,
                                  q, 8, &el2, ES), KRABKA_OK);
    EXPECT_ERR(krabka_elector_healthy(el, NULL, NULL, 0), E);
    EXPECT_ERR(krabka_elector_healthy(el, &healthy, reasonbuf, sizeof reasonbuf), KRABKA_OK);
    EXPECT(healthy == 1 && reasonbuf[0] == '\0');
    EXPECT_ERR(krabka_elector_healthy(el2, &healthy, NULL, 0), KRABKA_OK);
    EXPECT(healthy == 1);
    EXPECT_ERR(krabka_elector_set_eligible(el, 0, -1, ES), E);
    EXPECT_ERR(krabka_elector_destroy(el), KRABKA_OK);
    EXPECT_ERR(krabka_elector_destroy(el2), KRABKA_OK);
    EXPECT_ERR(krabka_elector_destroy(el), H);
    EXPECT_ERR(krabka_elector_healthy(el, &healthy, NULL, 0), H);
    EXPECT_ERR(krabka_elector_set_eligible(el2, 1, 0, ES), H);

    /* No term was won: no TERM event but NEW_LEADER could exist; none of
     * STARTED or STOPPED. */
    krabka_event_t *ev = NULL;
    int terms = 0;
    for (;;) {
        EXPECT_ERR(krabka_queue_poll(q, &ev), KRABKA_OK);
        if (!ev)
            break;
        if (krabka_event_term_kind(ev, &kind, ES) == KRABKA_OK && (kind == KRABKA_TERM_STARTED || kind == KRABKA_TERM_STOPPED))
            terms++;
        krabka_event_destroy(ev);
    }
    EXPECT(terms == 0);
    EXPECT_ERR(krabka_queue_destroy(q), KRABKA_OK);
    EXPECT_ERR(krabka_client_destroy(c), KRABKA_OK);
}

/* Per-call acquire options (krabka_acquire_options_t): NULL, destroyed and
 * foreign options objects answer INVALID_HANDLE naming the type wherever one
 * is taken; metadata over KRABKA_MAX_METADATA_BYTES or NULL with a length is
 * INVALID_ARG naming the setter and leaves the options as they were; the
 * calls taking options check them before any I/O and post nothing. The
 * confirm calls refuse NULL and foreign handles the same way. */
static void acquire_options(void) {
    krabka_acquire_options_t *o = NULL, *dead = NULL;
    krabka_client_t *c = NULL;
    krabka_queue_t *q = NULL;
    krabka_leadership_t *lead = (krabka_leadership_t *)0x1;
    krabka_elector_t *el = (krabka_elector_t *)0x1;
    krabka_event_t *ev = NULL;
    int64_t retry = 0;
    int current = -1, fd = -1;
    static uint8_t big[KRABKA_MAX_METADATA_BYTES + 1];
    krabka_conf_t *conf = krabka_conf_new();
    memset(big, 'x', sizeof big);

    EXPECT_ERR(krabka_conf_set(conf, "bootstrap.servers", "127.0.0.1:1", ES), KRABKA_OK);
    EXPECT_ERR(krabka_conf_set(conf, "request.timeout.ms", "300", ES), KRABKA_OK);
    EXPECT_ERR(krabka_client_new(conf, &c, ES), KRABKA_OK);
    krabka_conf_destroy(conf);
    EXPECT_ERR(krabka_queue_new(&q), KRABKA_OK);
    EXPECT_ERR(krabka_queue_fd(q, &fd), KRABKA_OK);

    EXPECT_ERR(krabka_acquire_options_new(NULL), E);
    EXPECT_ERR(krabka_acquire_options_new(&o), KRABKA_OK);
    EXPECT(o != NULL);
    EXPECT_ERR(krabka_acquire_options_new(&dead), KRABKA_OK);
    EXPECT_ERR(krabka_acquire_options_destroy(dead), KRABKA_OK);
    EXPECT_ERR(krabka_acquire_options_destroy(dead), H);
    EXPECT_ERR(krabka_acquire_options_destroy(NULL), H);
    EXPECT_ERR(krabka_acquire_options_destroy((krabka_acquire_options_t *)c), H);

    /* Setters. */
    EXPECT_ERR(krabka_acquire_options_set_metadata(NULL, (const uint8_t *)"x", 1, ES), H);
    EXPECT(strstr(errstr, "krabka_acquire_options_t") != NULL && strstr(errstr, "NULL") != NULL);
    EXPECT_ERR(krabka_acquire_options_set_metadata(dead, (const uint8_t *)"x", 1, ES), H);
    EXPECT(strstr(errstr, "krabka_acquire_options_t") != NULL && strstr(errstr, "destroyed") != NULL);
    EXPECT_ERR(krabka_acquire_options_set_member_metadata((krabka_acquire_options_t *)q, NULL, 0, ES), H);
    EXPECT(strstr(errstr, "krabka_acquire_options_t") != NULL && strstr(errstr, "krabka_queue_t") != NULL);
    EXPECT_ERR(krabka_acquire_options_set_metadata(o, big, sizeof big, ES), E);
    EXPECT(strstr(errstr, "krabka_acquire_options_set_metadata") != NULL && strstr(errstr, "4097") != NULL &&
           strstr(errstr, "4096") != NULL);
    EXPECT_ERR(krabka_acquire_options_set_member_metadata(o, big, sizeof big, ES), E);
    EXPECT(strstr(errstr, "krabka_acquire_options_set_member_metadata") != NULL && strstr(errstr, "4097") != NULL);
    EXPECT_ERR(krabka_acquire_options_set_metadata(o, NULL, 3, ES), E);
    EXPECT(strstr(errstr, "NULL with length 3") != NULL);
    EXPECT_ERR(krabka_acquire_options_set_metadata(o, big, KRABKA_MAX_METADATA_BYTES, ES), KRABKA_OK);
    EXPECT_ERR(krabka_acquire_options_set_member_metadata(o, NULL, 0, ES), KRABKA_OK);

    /* The calls that take options: NULL, destroyed, foreign. */
    EXPECT_ERR(krabka_client_acquire_opts(c, "r", KRABKA_NTS, "m", KRABKA_NTS, NULL, 10, &lead, ES), H);
    EXPECT(strstr(errstr, "krabka_acquire_options_t") != NULL && strstr(errstr, "NULL") != NULL);
    EXPECT_ERR(krabka_client_acquire_opts(c, "r", KRABKA_NTS, "m", KRABKA_NTS, dead, 10, &lead, ES), H);
    EXPECT(strstr(errstr, "krabka_acquire_options_t") != NULL && strstr(errstr, "destroyed") != NULL);
    EXPECT_ERR(krabka_client_acquire_opts(c, "r", KRABKA_NTS, "m", KRABKA_NTS, (krabka_acquire_options_t *)c, 10, &lead, ES), H);
    EXPECT_ERR(krabka_client_acquire_opts(NULL, "r", KRABKA_NTS, "m", KRABKA_NTS, o, 10, &lead, ES), H);
    EXPECT_ERR(krabka_client_acquire_opts(c, "r", KRABKA_NTS, "m", KRABKA_NTS, o, 10, NULL, ES), E);
    EXPECT_ERR(krabka_client_acquire_opts(c, "r", KRABKA_NTS, "m", KRABKA_NTS, o, -1, &lead, ES), E);
    EXPECT_ERR(krabka_client_try_acquire_opts(c, "r", KRABKA_NTS, "m", KRABKA_NTS, NULL, 10, &lead, &retry, ES), H);
    EXPECT(strstr(errstr, "krabka_acquire_options_t") != NULL);
    EXPECT_ERR(krabka_client_try_acquire_opts(c, "r", KRABKA_NTS, "m", KRABKA_NTS, dead, 10, &lead, &retry, ES), H);
    EXPECT_ERR(krabka_client_acquire_opts_async(c, "r", KRABKA_NTS, "m", KRABKA_NTS, NULL, 10, q, 1, ES), H);
    EXPECT(strstr(errstr, "krabka_acquire_options_t") != NULL);
    EXPECT_ERR(krabka_client_acquire_opts_async(c, "r", KRABKA_NTS, "m", KRABKA_NTS, dead, 10, q, 1, ES), H);
    EXPECT_ERR(krabka_client_acquire_opts_async(c, "r", KRABKA_NTS, "m", KRABKA_NTS, o, 10, NULL, 1, ES), H);
    EXPECT_ERR(krabka_client_try_acquire_opts_async(c, "r", KRABKA_NTS, "m", KRABKA_NTS, NULL, 10, q, 1, ES), H);
    EXPECT_ERR(krabka_client_try_acquire_opts_async(c, "r", KRABKA_NTS, "m", KRABKA_NTS, dead, 10, q, 1, ES), H);
    EXPECT_ERR(krabka_elector_new_opts(c, "r", KRABKA_NTS, "m", KRABKA_NTS, NULL, 0, q, 1, &el, ES), H);
    EXPECT(el == NULL); /* cleared on failure */
    EXPECT(strstr(errstr, "krabka_acquire_options_t") != NULL);
    EXPECT_ERR(krabka_elector_new_opts(c, "r", KRABKA_NTS, "m", KRABKA_NTS, dead, 0, q, 1, &el, ES), H);
    EXPECT_ERR(krabka_elector_new_opts(c, "r", KRABKA_NTS, "m", KRABKA_NTS, o, 4, q, 1, &el, ES), E);

    /* Nobody listens on port 1: with good options the call runs and gives up. */
    krabka_err_t err = krabka_client_try_acquire_opts(c, "r", KRABKA_NTS, "m", KRABKA_NTS, o, 200, &lead, &retry, ES);
    EXPECT(err == KRABKA_ERR_TIMEOUT || err == KRABKA_ERR_TRANSPORT);

    /* Confirm: NULL and foreign leaderships, NULL current; the async form
     * posts nothing for them. */
    EXPECT_ERR(krabka_leadership_confirm(NULL, 10, &current, ES), H);
    EXPECT_ERR(krabka_leadership_confirm((krabka_leadership_t *)c, 10, &current, ES), H);
    EXPECT_ERR(krabka_leadership_confirm_async(NULL, 10, q, 1, ES), H);
    EXPECT_ERR(krabka_leadership_confirm_async((krabka_leadership_t *)q, 10, q, 1, ES), H);
    EXPECT_ERR(krabka_event_confirmed(NULL, &current, ES), H);
    EXPECT_ERR(krabka_event_confirmed((krabka_event_t *)q, &current, ES), H);

    struct pollfd p = {fd, POLLIN, 0};
    EXPECT(poll(&p, 1, 300) == 0);
    EXPECT_ERR(krabka_queue_poll(q, &ev), KRABKA_OK);
    EXPECT(ev == NULL);

    EXPECT_ERR(krabka_acquire_options_destroy(o), KRABKA_OK);
    EXPECT_ERR(krabka_acquire_options_set_metadata(o, NULL, 0, ES), H);
    EXPECT_ERR(krabka_queue_destroy(q), KRABKA_OK);
    EXPECT_ERR(krabka_client_destroy(c), KRABKA_OK);
}

int main(void) {
    pure_functions();
    threads();
    errstr_buffers();
    configuration();
    client_and_leadership();
    events_and_queues();
    elector();
    acquire_options();
    error_descriptions();
    printf("misuse: %d checks, %d passed, %d failed\n", checks, checks - failures, failures);
    return failures ? 1 : 0;
}
