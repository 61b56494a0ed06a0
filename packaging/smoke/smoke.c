/*
 * Smoke test of an installed libkrabka_coord (make dist-test, packaging/qemu-test.sh):
 * takes a role on the broker $KRABKA_BOOTSTRAP, renews, makes one guarded write
 * to $KRABKA_SMOKE_TOPIC, checks with describe that the cluster names this
 * member with the same token, and resigns. Prints the library's version and
 * "smoke: ok" on success; exits 1 naming the failed step otherwise.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <krabka_coord.h>

static char errstr[512];

#define STEP(what, call)                                                                     \
    do {                                                                                     \
        errstr[0] = '\0';                                                                    \
        krabka_err_t e_ = (call);                                                            \
        if (e_ != KRABKA_OK) {                                                               \
            printf("smoke: FAIL: %s: %s: %s\n", what, krabka_err2name(e_), errstr);          \
            return 1;                                                                        \
        }                                                                                    \
    } while (0)

#define EXPECT(cond, ...)                                                                    \
    do {                                                                                     \
        if (!(cond)) {                                                                       \
            printf("smoke: FAIL: %s: ", #cond);                                              \
            printf(__VA_ARGS__);                                                             \
            printf("\n");                                                                    \
            return 1;                                                                        \
        }                                                                                    \
    } while (0)

#define ES errstr, sizeof errstr

int main(void) {
    const char *bootstrap = getenv("KRABKA_BOOTSTRAP"), *topic = getenv("KRABKA_SMOKE_TOPIC");
    if (!bootstrap || !*bootstrap || !topic || !*topic) {
        fprintf(stderr, "smoke: set KRABKA_BOOTSTRAP (a running broker) and KRABKA_SMOKE_TOPIC (an existing topic)\n");
        return 2;
    }
    EXPECT(krabka_abi_version() == KRABKA_ABI_VERSION, "ABI %d, header %d", krabka_abi_version(), KRABKA_ABI_VERSION);
    EXPECT(strcmp(krabka_version(), KRABKA_VERSION_STRING) == 0, "version %s, header %s", krabka_version(),
           KRABKA_VERSION_STRING);
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    char role[96];
    snprintf(role, sizeof role, "dist-smoke-c-%lld-%ld", (long long)ts.tv_sec, ts.tv_nsec);

    krabka_conf_t *conf = krabka_conf_new();
    krabka_client_t *client = NULL;
    STEP("conf", krabka_conf_set(conf, "bootstrap.servers", bootstrap, ES));
    STEP("conf", krabka_conf_set(conf, "client.id", "dist-smoke-c", ES));
    STEP("client_new", krabka_client_new(conf, &client, ES));
    krabka_conf_destroy(conf);

    krabka_leadership_t *lead = NULL;
    STEP("acquire", krabka_client_acquire(client, role, KRABKA_NTS, "smoke-1", KRABKA_NTS, 120000, &lead, ES));
    krabka_token_t token;
    STEP("token", krabka_leadership_token(lead, &token));
    STEP("token valid", krabka_token_validate(token, ES));
    STEP("renew", krabka_leadership_renew(lead, 60000, ES));
    krabka_token_t after;
    STEP("token", krabka_leadership_token(lead, &after));
    EXPECT(krabka_token_compare(token, after) == 0, "a renewal kept the token");

    char tok[KRABKA_TOKEN_TEXT_MAX], value[160];
    krabka_token_format(token, tok, sizeof tok);
    snprintf(value, sizeof value, "smoke command token %s", tok);
    krabka_message_t m = {sizeof(krabka_message_t), topic, KRABKA_PARTITION_ANY, NULL, 0, (const uint8_t *)value, strlen(value), NULL, 0};
    krabka_produce_result_t res = {-1, -1};
    STEP("produce", krabka_leadership_produce(lead, &m, 1, 60000, &res, ES));
    EXPECT(res.partition >= 0 && res.offset >= 0, "produce result %d/%" PRId64, res.partition, res.offset);

    krabka_status_t *st = NULL;
    int has = 0, current = 0;
    char holder[KRABKA_NAME_BUF];
    size_t len = 0;
    krabka_token_t seen;
    STEP("describe", krabka_client_describe(client, role, KRABKA_NTS, 60000, &st, ES));
    STEP("holder", krabka_status_holder(st, &has, holder, sizeof holder, &len));
    STEP("status token", krabka_status_token(st, &seen));
    STEP("current", krabka_status_current(st, &current));
    krabka_status_destroy(st);
    EXPECT(has && strcmp(holder, "smoke-1") == 0, "holder %s", has ? holder : "(none)");
    EXPECT(krabka_token_compare(seen, token) == 0 && current == 1, "describe shows the minted token as current");

    STEP("resign", krabka_leadership_resign(lead, 60000, ES));
    krabka_leadership_destroy(lead);
    krabka_client_destroy(client);
    printf("smoke: ok: libkrabka_coord %s took %s as smoke-1 with token %s, renewed, wrote offset %" PRId64 ", resigned\n",
           krabka_version(), role, tok, res.offset);
    return 0;
}
