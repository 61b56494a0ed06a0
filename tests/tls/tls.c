/*
 * TLS through the C API against the SASL cluster's TLS listeners
 * (tests/kafka/cluster.sh --tls; make test exports KRABKA_TLS_*):
 * SSL with ssl.ca.location, SASL_SSL, mutual TLS with an encrypted key
 * (librdkafka's property names), and the misconfigurations that must fail
 * at once with an error naming the problem.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "krabka_coord.h"

static int failures;
static char certs[512], role[128];

#define CHECK(cond, ...)                                                                           \
    do {                                                                                           \
        if (!(cond)) {                                                                             \
            fprintf(stderr, "FAIL %s:%d: ", __FILE__, __LINE__);                                   \
            fprintf(stderr, __VA_ARGS__);                                                          \
            fprintf(stderr, "\n");                                                                 \
            failures++;                                                                            \
        }                                                                                          \
    } while (0)

/* The path of a file of the test PKI (allocated; the test keeps them all). */
static const char *cert(const char *name) {
    size_t n = strlen(certs) + strlen(name) + 2;
    char *p = malloc(n);
    if (!p)
        abort();
    snprintf(p, n, "%s/%s", certs, name);
    return p;
}

static char *password(void) {
    static char pw[128];
    FILE *f = fopen(cert("client.password"), "r");
    if (!f || !fgets(pw, sizeof pw, f)) {
        fprintf(stderr, "cannot read %s\n", cert("client.password"));
        exit(1);
    }
    fclose(f);
    pw[strcspn(pw, "\r\n")] = '\0';
    return pw;
}

/* Builds a client from NULL-terminated key/value pairs; returns the error
 * of krabka_client_new (message in errstr). */
static krabka_err_t make_client(const char *bootstrap, const char **kv, krabka_client_t **out, char *errstr,
                                size_t n) {
    krabka_conf_t *conf = krabka_conf_new();
    krabka_err_t err = krabka_conf_set(conf, "bootstrap.servers", bootstrap, errstr, n);
    if (!err)
        err = krabka_conf_set(conf, "request.timeout.ms", "10000", errstr, n);
    for (int i = 0; !err && kv && kv[i]; i += 2)
        err = krabka_conf_set(conf, kv[i], kv[i + 1], errstr, n);
    if (!err)
        err = krabka_client_new(conf, out, errstr, n);
    krabka_conf_destroy(conf);
    return err;
}

static void works(const char *label, const char *bootstrap, const char **kv) {
    int before = failures;
    char errstr[512] = "";
    krabka_client_t *c = NULL;
    krabka_err_t err = make_client(bootstrap, kv, &c, errstr, sizeof errstr);
    CHECK(err == KRABKA_OK, "%s: client: %s: %s", label, krabka_err2name(err), errstr);
    if (err)
        return;
    char member[64];
    snprintf(member, sizeof member, "c-%s", label);
    krabka_leadership_t *l = NULL;
    err = krabka_client_acquire(c, role, KRABKA_NTS, member, KRABKA_NTS, 30000, &l, errstr, sizeof errstr);
    CHECK(err == KRABKA_OK, "%s: acquire: %s: %s", label, krabka_err2name(err), errstr);
    if (!err) {
        err = krabka_leadership_renew(l, 10000, errstr, sizeof errstr);
        CHECK(err == KRABKA_OK, "%s: renew: %s: %s", label, krabka_err2name(err), errstr);
        krabka_status_t *st = NULL;
        err = krabka_client_describe(c, role, KRABKA_NTS, 10000, &st, errstr, sizeof errstr);
        CHECK(err == KRABKA_OK, "%s: describe: %s: %s", label, krabka_err2name(err), errstr);
        if (!err) {
            int current = 0, has = 0;
            char holder[KRABKA_NAME_BUF];
            size_t len = 0;
            krabka_status_current(st, &current);
            krabka_status_holder(st, &has, holder, sizeof holder, &len);
            CHECK(current && has && strcmp(holder, member) == 0, "%s: describe: current=%d holder=%s", label, current,
                  has ? holder : "(none)");
            krabka_status_destroy(st);
        }
        err = krabka_leadership_resign(l, 10000, errstr, sizeof errstr);
        CHECK(err == KRABKA_OK, "%s: resign: %s: %s", label, krabka_err2name(err), errstr);
        krabka_leadership_destroy(l);
    }
    krabka_client_destroy(c);
    if (failures == before)
        printf("ok   %s\n", label);
}

/* The misconfiguration fails with code want and a message naming it, either
 * when the client is built or at its first request (describe). */
static void fails(const char *label, const char *bootstrap, const char **kv, krabka_err_t want, const char *mention) {
    char errstr[512] = "";
    krabka_client_t *c = NULL;
    krabka_err_t err = make_client(bootstrap, kv, &c, errstr, sizeof errstr);
    if (!err) {
        krabka_status_t *st = NULL;
        err = krabka_client_describe(c, role, KRABKA_NTS, 30000, &st, errstr, sizeof errstr);
        if (!err)
            krabka_status_destroy(st);
        krabka_client_destroy(c);
    }
    int good = err == want && strstr(errstr, mention) != NULL;
    CHECK(good, "%s: got %s: %s; want %s mentioning \"%s\"", label, krabka_err2name(err), errstr,
          krabka_err2name(want), mention);
    if (good)
        printf("ok   %s: %s: %s\n", label, krabka_err2name(err), errstr);
}

int main(void) {
    const char *ssl = getenv("KRABKA_TLS_BOOTSTRAP"), *sasl_ssl = getenv("KRABKA_TLS_SASL_BOOTSTRAP");
    const char *mtls = getenv("KRABKA_TLS_MTLS_BOOTSTRAP"), *dir = getenv("KRABKA_TLS_CERTS");
    const char *plain = getenv("KRABKA_TLS_PLAIN_BOOTSTRAP");
    if (!ssl || !sasl_ssl || !mtls || !dir || !plain) {
        fprintf(stderr, "tls: KRABKA_TLS_* not set: run under make test (tests/kafka/with-clusters.sh starts the "
                        "SASL cluster with --tls)\n");
        return 1;
    }
    snprintf(certs, sizeof certs, "%s", dir);
    snprintf(role, sizeof role, "alice.c-tls-%ld", (long)time(NULL));
    const char *pw = password();

    const char *k_ssl[] = {"security.protocol", "SSL", "ssl.ca.location", cert("ca.pem"), NULL};
    const char *k_sasl[] = {"security.protocol", "SASL_SSL", "ssl.ca.location", cert("ca.pem"), "sasl.mechanism",
                            "SCRAM-SHA-256", "sasl.username", "alice", "sasl.password", "alice-secret", NULL};
    const char *k_mtls[] = {"security.protocol", "SSL", "ssl.ca.location", cert("ca.pem"),
                            "ssl.certificate.location", cert("client.pem"), "ssl.key.location", cert("client.key"),
                            "ssl.key.password", pw, NULL};
    works("ssl", ssl, k_ssl);
    works("sasl_ssl", sasl_ssl, k_sasl);
    works("mtls", mtls, k_mtls);

    const char *k_wrong_ca[] = {"security.protocol", "SSL", "ssl.ca.location", cert("other-ca.pem"), NULL};
    const char *k_expired[] = {"security.protocol", "SSL", "ssl.ca.location", cert("ca.pem"),
                               "ssl.certificate.location", cert("expired.pem"), "ssl.key.location",
                               cert("expired.key"), NULL};
    const char *k_no_cert[] = {"security.protocol", "SSL", "ssl.ca.location", cert("ca.pem"), NULL};
    const char *k_bad_pw[] = {"security.protocol", "SSL", "ssl.ca.location", cert("ca.pem"),
                              "ssl.certificate.location", cert("client.pem"), "ssl.key.location", cert("client.key"),
                              "ssl.key.password", "wrong", NULL};
    fails("wrong CA", ssl, k_wrong_ca, KRABKA_ERR_TLS, "not signed by a CA in ssl.ca.location");
    fails("expired client certificate", mtls, k_expired, KRABKA_ERR_INVALID_CONFIG, "expired");
    fails("plaintext client on the TLS port", ssl, NULL, KRABKA_ERR_TRANSPORT, "on a TLS listener");
    fails("no client certificate on the mTLS port", mtls, k_no_cert, KRABKA_ERR_TLS, "client certificate");
    fails("wrong key password", mtls, k_bad_pw, KRABKA_ERR_INVALID_CONFIG, "ssl.key.password");
    if (failures) {
        fprintf(stderr, "tls: %d failure(s)\n", failures);
        return 1;
    }
    printf("tls: all C TLS checks passed\n");
    return 0;
}
