'use strict';
// The functions of include/krabka_coord_testing.h as koffi declarations, in
// the type mapping of lib/abi.js. Written by hand (internal/gen reads only
// include/krabka_coord.h); test/testing.test.js parses the header and fails
// when a function, a parameter or a type here differs from it.

// Every function of include/krabka_coord_testing.h, in header order:
// [name, koffi declaration] (the type mapping of lib/abi.js).
const TESTING_DECLS = Object.freeze([
  ['krabka_testing_cluster_new', 'int krabka_testing_cluster_new(const uint8_t *name, size_t name_len, int32_t partitions, int flags, _Out_ krabka_testing_cluster_t *out, uint8_t *errstr, size_t errstr_size)'],
  ['krabka_testing_cluster_destroy', 'int krabka_testing_cluster_destroy(krabka_testing_cluster_t cluster)'],
  ['krabka_testing_cluster_name', 'const char *krabka_testing_cluster_name(const krabka_testing_cluster_t cluster)'],
  ['krabka_testing_clock_now', 'int krabka_testing_clock_now(const krabka_testing_cluster_t cluster, _Out_ int64_t *now_ms, uint8_t *errstr, size_t errstr_size)'],
  ['krabka_testing_clock_advance', 'int krabka_testing_clock_advance(krabka_testing_cluster_t cluster, int64_t ms, uint8_t *errstr, size_t errstr_size)'],
  ['krabka_testing_cluster_set_available', 'int krabka_testing_cluster_set_available(krabka_testing_cluster_t cluster, int available, uint8_t *errstr, size_t errstr_size)'],
  ['krabka_testing_mint', 'int krabka_testing_mint(krabka_client_t client, const uint8_t *role, size_t role_len, _Out_ krabka_token_t *out, uint8_t *errstr, size_t errstr_size)'],
  ['krabka_testing_topic_count', 'int krabka_testing_topic_count(const krabka_testing_cluster_t cluster, const char *topic, int32_t partition, _Out_ int64_t *count, uint8_t *errstr, size_t errstr_size)'],
  ['krabka_testing_topic_record', 'int krabka_testing_topic_record(const krabka_testing_cluster_t cluster, const char *topic, int32_t partition, int64_t index, _Out_ int64_t *offset, uint8_t *value, size_t value_size, _Out_ size_t *value_len, _Out_ int *is_null, uint8_t *errstr, size_t errstr_size)'],
  ['krabka_testing_client_set_cut', 'int krabka_testing_client_set_cut(krabka_client_t client, int cut, uint8_t *errstr, size_t errstr_size)'],
  ['krabka_testing_client_set_paused', 'int krabka_testing_client_set_paused(krabka_client_t client, int paused, uint8_t *errstr, size_t errstr_size)'],
  ['krabka_testing_client_kill', 'int krabka_testing_client_kill(krabka_client_t client, uint8_t *errstr, size_t errstr_size)'],
]);

module.exports = { TESTING_DECLS };
