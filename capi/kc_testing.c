/* The krabka_testing_* functions of include/krabka_coord_testing.h: the
 * fork guard of capi/kc_guard.c (which internal/gen generates from
 * include/krabka_coord.h alone) for the test aids, in front of the Go
 * exports kc_go_testing_* (capi/testing.go). None of them blocks, so the
 * flag a pthread_atfork child handler sets is the whole check. Each
 * kc_go_testing_* export is redeclared here with the header's own types
 * next to _cgo_export.h, so a drifted Go export fails the build. */
#include <pthread.h>
#include <stdio.h>
#include "kc_types.h"
#include "_cgo_export.h"

static volatile int kc_testing_forked_flag;

static void kc_testing_child(void) { kc_testing_forked_flag = 1; }

__attribute__((constructor)) static void kc_testing_init(void) {
    pthread_atfork(NULL, NULL, kc_testing_child);
}

static krabka_err_t kc_testing_forked(const char *fn, char *errstr, size_t errstr_size) {
    if (errstr != NULL && errstr_size > 0)
        snprintf(errstr, errstr_size, "%s: called in a child process after fork(); the library works only in the process that loaded it", fn);
    return KRABKA_ERR_FORKED;
}

#define KC_TESTING_GUARD(fn, errstr, errstr_size) \
    if (__builtin_expect(kc_testing_forked_flag, 0)) return kc_testing_forked(fn, errstr, errstr_size)

extern krabka_err_t kc_go_testing_cluster_new(const char *name, size_t name_len, int32_t partitions, int flags, krabka_testing_cluster_t **out, char *errstr, size_t errstr_size);
extern krabka_err_t kc_go_testing_cluster_destroy(krabka_testing_cluster_t *cluster);
extern krabka_err_t kc_go_testing_clock_now(const krabka_testing_cluster_t *cluster, int64_t *now_ms, char *errstr, size_t errstr_size);
extern krabka_err_t kc_go_testing_clock_advance(krabka_testing_cluster_t *cluster, int64_t ms, char *errstr, size_t errstr_size);
extern krabka_err_t kc_go_testing_cluster_set_available(krabka_testing_cluster_t *cluster, int available, char *errstr, size_t errstr_size);
extern krabka_err_t kc_go_testing_mint(krabka_client_t *client, const char *role, size_t role_len, krabka_token_t *out, char *errstr, size_t errstr_size);
extern krabka_err_t kc_go_testing_topic_count(const krabka_testing_cluster_t *cluster, const char *topic, int32_t partition, int64_t *count, char *errstr, size_t errstr_size);
extern krabka_err_t kc_go_testing_topic_record(const krabka_testing_cluster_t *cluster, const char *topic, int32_t partition, int64_t index, int64_t *offset, uint8_t *value, size_t value_size, size_t *value_len, int *is_null, char *errstr, size_t errstr_size);
extern krabka_err_t kc_go_testing_client_set_cut(krabka_client_t *client, int cut, char *errstr, size_t errstr_size);
extern krabka_err_t kc_go_testing_client_set_paused(krabka_client_t *client, int paused, char *errstr, size_t errstr_size);
extern krabka_err_t kc_go_testing_client_kill(krabka_client_t *client, char *errstr, size_t errstr_size);

krabka_err_t krabka_testing_cluster_new(const char *name, size_t name_len, int32_t partitions, int flags, krabka_testing_cluster_t **out, char *errstr, size_t errstr_size) {
    KC_TESTING_GUARD("krabka_testing_cluster_new", errstr, errstr_size);
    return kc_go_testing_cluster_new(name, name_len, partitions, flags, out, errstr, errstr_size);
}

krabka_err_t krabka_testing_cluster_destroy(krabka_testing_cluster_t *cluster) {
    if (__builtin_expect(kc_testing_forked_flag, 0)) return KRABKA_ERR_FORKED;
    return kc_go_testing_cluster_destroy(cluster);
}

const char *krabka_testing_cluster_name(const krabka_testing_cluster_t *cluster) {
    if (__builtin_expect(kc_testing_forked_flag, 0)) return NULL;
    return kc_go_testing_cluster_name((krabka_testing_cluster_t *)cluster);
}

krabka_err_t krabka_testing_clock_now(const krabka_testing_cluster_t *cluster, int64_t *now_ms, char *errstr, size_t errstr_size) {
    KC_TESTING_GUARD("krabka_testing_clock_now", errstr, errstr_size);
    return kc_go_testing_clock_now(cluster, now_ms, errstr, errstr_size);
}

krabka_err_t krabka_testing_clock_advance(krabka_testing_cluster_t *cluster, int64_t ms, char *errstr, size_t errstr_size) {
    KC_TESTING_GUARD("krabka_testing_clock_advance", errstr, errstr_size);
    return kc_go_testing_clock_advance(cluster, ms, errstr, errstr_size);
}

krabka_err_t krabka_testing_cluster_set_available(krabka_testing_cluster_t *cluster, int available, char *errstr, size_t errstr_size) {
    KC_TESTING_GUARD("krabka_testing_cluster_set_available", errstr, errstr_size);
    return kc_go_testing_cluster_set_available(cluster, available, errstr, errstr_size);
}

krabka_err_t krabka_testing_mint(krabka_client_t *client, const char *role, size_t role_len, krabka_token_t *out, char *errstr, size_t errstr_size) {
    KC_TESTING_GUARD("krabka_testing_mint", errstr, errstr_size);
    return kc_go_testing_mint(client, role, role_len, out, errstr, errstr_size);
}

krabka_err_t krabka_testing_topic_count(const krabka_testing_cluster_t *cluster, const char *topic, int32_t partition, int64_t *count, char *errstr, size_t errstr_size) {
    KC_TESTING_GUARD("krabka_testing_topic_count", errstr, errstr_size);
    return kc_go_testing_topic_count(cluster, topic, partition, count, errstr, errstr_size);
}

krabka_err_t krabka_testing_topic_record(const krabka_testing_cluster_t *cluster, const char *topic, int32_t partition, int64_t index, int64_t *offset, uint8_t *value, size_t value_size, size_t *value_len, int *is_null, char *errstr, size_t errstr_size) {
    KC_TESTING_GUARD("krabka_testing_topic_record", errstr, errstr_size);
    return kc_go_testing_topic_record(cluster, topic, partition, index, offset, value, value_size, value_len, is_null, errstr, errstr_size);
}

krabka_err_t krabka_testing_client_set_cut(krabka_client_t *client, int cut, char *errstr, size_t errstr_size) {
    KC_TESTING_GUARD("krabka_testing_client_set_cut", errstr, errstr_size);
    return kc_go_testing_client_set_cut(client, cut, errstr, errstr_size);
}

krabka_err_t krabka_testing_client_set_paused(krabka_client_t *client, int paused, char *errstr, size_t errstr_size) {
    KC_TESTING_GUARD("krabka_testing_client_set_paused", errstr, errstr_size);
    return kc_go_testing_client_set_paused(client, paused, errstr, errstr_size);
}

krabka_err_t krabka_testing_client_kill(krabka_client_t *client, char *errstr, size_t errstr_size) {
    KC_TESTING_GUARD("krabka_testing_client_kill", errstr, errstr_size);
    return kc_go_testing_client_kill(client, errstr, errstr_size);
}
