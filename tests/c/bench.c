/*
 * The cost of one call across the C -> Go boundary of libkrabka_coord:
 * token compare, role partition, murmur2 and (with $KRABKA_BOOTSTRAP) reading
 * a leadership's token. A plain C token compare is the baseline. Prints ns
 * per call, the best of 5 runs of N calls each. With KRABKA_BENCH_SAMPLES=1
 * it also prints every run's ns per call as a KRABKA-SAMPLE line
 * (bench/README.md), which `make capi-bench` records in a results file.
 *
 *   bench [N]      (default 1000000)
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "krabka_coord.h"

static double now_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e9 + (double)ts.tv_nsec;
}

static volatile int64_t sink;

/* Baseline: the same comparison in C, called through a pointer so that it
 * is not folded away. */
static int c_compare(krabka_token_t a, krabka_token_t b) {
    if (a.producer_id != b.producer_id)
        return a.producer_id < b.producer_id ? -1 : 1;
    if (a.producer_epoch != b.producer_epoch)
        return a.producer_epoch < b.producer_epoch ? -1 : 1;
    return 0;
}
static int (*volatile c_compare_ptr)(krabka_token_t, krabka_token_t) = c_compare;

enum which { C_BASELINE, TOKEN_COMPARE, ROLE_PARTITION, MURMUR2, LEADERSHIP_TOKEN };
static krabka_leadership_t *leadership;

static double run(enum which w, long n) {
    krabka_token_t a = {4242, 7}, b = {4242, 8}, out;
    int32_t part;
    double t0 = now_ns();
    for (long i = 0; i < n; i++) {
        switch (w) {
        case C_BASELINE:
            sink += c_compare_ptr(a, b);
            break;
        case TOKEN_COMPARE:
            sink += krabka_token_compare(a, b);
            break;
        case ROLE_PARTITION:
            krabka_role_partition("controller", 10, 16, &part, NULL, 0);
            sink += part;
            break;
        case MURMUR2:
            sink += krabka_murmur2((const uint8_t *)"controller", 10);
            break;
        case LEADERSHIP_TOKEN:
            krabka_leadership_token(leadership, &out);
            sink += out.producer_epoch;
            break;
        }
    }
    return (now_ns() - t0) / (double)n;
}

static void report(const char *id, const char *name, enum which w, long n) {
    double best = 1e18;
    const char *samples = getenv("KRABKA_BENCH_SAMPLES");
    run(w, n / 10); /* warm up */
    for (int r = 0; r < 5; r++) {
        double ns = run(w, n);
        if (ns < best)
            best = ns;
        if (samples && strcmp(samples, "1") == 0)
            printf("KRABKA-SAMPLE\t%s\tns\t%.3f\t%s\n", id, ns, name);
    }
    printf("%-40s %8.1f ns/call\n", name, best);
}

int main(int argc, char **argv) {
    long n = argc > 1 ? strtol(argv[1], NULL, 10) : 1000000;
    printf("libkrabka_coord %s, %ld calls per run, best of 5 runs\n", krabka_version(), n);
    if (getenv("KRABKA_BENCH_SAMPLES") && strcmp(getenv("KRABKA_BENCH_SAMPLES"), "1") == 0)
        printf("KRABKA-SETTING\tcalls_per_run\t%ld\n", n);
    report("c-baseline", "C baseline (token compare in C)", C_BASELINE, n);
    report("token-compare", "krabka_token_compare", TOKEN_COMPARE, n);
    report("murmur2", "krabka_murmur2 (10 bytes)", MURMUR2, n);
    report("role-partition", "krabka_role_partition (\"controller\", 16)", ROLE_PARTITION, n);

    const char *bootstrap = getenv("KRABKA_BOOTSTRAP");
    if (!bootstrap || !*bootstrap) {
        printf("%-40s (skipped: KRABKA_BOOTSTRAP is not set)\n", "krabka_leadership_token");
        return 0;
    }
    char errstr[512], role[64];
    krabka_conf_t *conf = krabka_conf_new();
    krabka_client_t *client = NULL;
    snprintf(role, sizeof role, "capi-bench-%ld", (long)time(NULL));
    if (krabka_conf_set(conf, "bootstrap.servers", bootstrap, errstr, sizeof errstr) ||
        krabka_client_new(conf, &client, errstr, sizeof errstr) ||
        krabka_client_acquire(client, role, KRABKA_NTS, "bench", KRABKA_NTS, 60000, &leadership, errstr,
                              sizeof errstr)) {
        printf("krabka_leadership_token: setup failed: %s\n", errstr);
        return 1;
    }
    krabka_conf_destroy(conf);
    report("leadership-token", "krabka_leadership_token", LEADERSHIP_TOKEN, n);
    krabka_leadership_resign(leadership, KRABKA_TIMEOUT_DEFAULT, errstr, sizeof errstr);
    krabka_leadership_destroy(leadership);
    krabka_client_destroy(client);
    return 0;
}
