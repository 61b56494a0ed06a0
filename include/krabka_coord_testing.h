/*
 * krabka_coord_testing.h - test aids of libkrabka_coord.so: an in-process
 * cluster with a manual clock and faults, so that a test of a controller's
 * failover runs in milliseconds without a broker.
 *
 * Exported by the same library as krabka_coord.h (no second library to
 * link) and governed by the same rules: ABI version 2, add never change,
 * and every convention of krabka_coord.h (errstr/errstr_size, handles
 * checked for liveness and kind, KRABKA_NTS lengths, the fork guard) holds
 * here too. docs/TESTING.md shows complete tests in every language.
 *
 * The idea: krabka_testing_cluster_new registers an in-process cluster
 * under a name. A client whose configuration says
 * bootstrap.servers=mem://NAME (krabka_conf_set, krabka_client_new as
 * usual) joins that cluster instead of connecting to Kafka: every client of
 * the process that names it shares it. It is the project's in-memory model
 * of what the library relies on from Kafka (core/memtransport): one order
 * per partition, transactions with the coordinator's minting and fencing
 * (InitProducerId bumps the epoch; a superseded token's write is refused
 * with KRABKA_ERR_FENCED), read_committed visibility, and describe. Every
 * call of krabka_coord.h works on such a client except the ones that need a
 * real cluster (docs/TESTING.md lists them; they fail with an error that
 * says so).
 *
 * Time: each cluster has a clock that moves only when the test calls
 * krabka_testing_clock_advance (or, created with
 * KRABKA_TESTING_REAL_TIME, follows the system clock). Lease deadlines,
 * renewal intervals, the stagger of standbys and the at-risk margin of
 * every client of the cluster follow that clock: advancing it past a
 * lease's deadline makes a standby take over at once. Request timeouts
 * (timeout_ms, request.timeout.ms) stay in real time.
 *
 * Faults (on one client, a krabka_client_t whose bootstrap.servers is
 * mem://NAME):
 *   - cut / heal: every request of the client fails at once with
 *     KRABKA_ERR_TRANSPORT (a link that refuses connections) until healed.
 *     Its leaderships go at risk and expire by the clock as on Kafka.
 *   - pause / resume: the model of SIGSTOP. While paused the client's
 *     requests hold (they return when resumed, or fail with
 *     KRABKA_ERR_TIMEOUT when their timeout_ms passes), and its own view of
 *     the clock is frozen, so its timers (renewals, at-risk) do not fire.
 *     On resume it sees the cluster's time jump, as a resumed process does.
 *   - kill: the client's process died: it never reaches the cluster again
 *     (every request fails at once with KRABKA_ERR_TRANSPORT), it does not
 *     resign and does not leave: its leases stay until their deadline. The
 *     handle stays valid; destroy it with krabka_client_destroy as usual.
 *     A killed client cannot be healed or resumed.
 * Faults on the cluster: unavailable (every request of every client fails
 * at once with KRABKA_ERR_TRANSPORT), and minting a role from outside (a
 * blind successor: InitProducerId without a lease record, so that the
 * holder's next guarded write is refused).
 *
 * Controls that take a client answer KRABKA_ERR_INVALID_ARG, with errstr
 * naming the problem, for a client that is not in-process (its
 * bootstrap.servers names brokers), and KRABKA_ERR_INVALID_HANDLE for a
 * handle that is not a live krabka_client_t.
 *
 * What it does not model: see docs/TESTING.md ("What the in-process
 * cluster does not model").
 */
#ifndef KRABKA_COORD_TESTING_H
#define KRABKA_COORD_TESTING_H

#include "krabka_coord.h"

#ifdef __cplusplus
extern "C" {
#endif

/** The longest cluster name, in bytes. */
#define KRABKA_TESTING_NAME_MAX 64

/** krabka_testing_cluster_new flag: the cluster's clock follows the system
 *  clock (epoch milliseconds) instead of moving only when advanced;
 *  krabka_testing_clock_advance then answers KRABKA_ERR_INVALID_ARG. */
#define KRABKA_TESTING_REAL_TIME 1

/** The instant (epoch milliseconds) a manual clock reads when its cluster
 *  is created: 2026-01-01T00:00:00Z. */
#define KRABKA_TESTING_CLOCK_START_MS INT64_C(1767225600000)

typedef struct krabka_testing_cluster krabka_testing_cluster_t;

/** Creates an in-process cluster and registers it for the whole process
 *  under name, so that clients with bootstrap.servers=mem://name join it.
 *  name: KRABKA_NTS or a byte length; 1 to KRABKA_TESTING_NAME_MAX (64)
 *  bytes of ASCII letters, digits, '.', '_' and '-'. partitions: the
 *  partition count of every topic of the cluster (the coordination topic
 *  and the topics guarded writes go to), 1 to 100000. flags: 0 (a manual
 *  clock starting at KRABKA_TESTING_CLOCK_START_MS) or
 *  KRABKA_TESTING_REAL_TIME. Never blocks. Destroy with
 *  krabka_testing_cluster_destroy.
 *  Errors: KRABKA_ERR_INVALID_ARG for out or name NULL, a name that is
 *  empty, too long or has another character (errstr names it and the
 *  character), a partition count out of range, unknown flags, and a name
 *  another live cluster of the process has (errstr says so). */
krabka_err_t krabka_testing_cluster_new(const char *name, size_t name_len,
                                        int32_t partitions, int flags,
                                        krabka_testing_cluster_t **out,
                                        char *errstr, size_t errstr_size);

/** Unregisters the cluster's name (a new cluster may take it) and destroys
 *  the cluster: every request of a client still on it fails at once with
 *  KRABKA_ERR_TRANSPORT from now on (destroy those clients as usual), and
 *  a client created later with its name fails in krabka_client_new.
 *  Never blocks.
 *  Errors: KRABKA_ERR_INVALID_HANDLE (NULL, destroyed, another kind). */
krabka_err_t krabka_testing_cluster_destroy(krabka_testing_cluster_t *cluster);

/** The cluster's name, NUL-terminated; valid until the cluster is
 *  destroyed, never free. NULL for a handle that is not a live cluster. */
const char *krabka_testing_cluster_name(const krabka_testing_cluster_t *cluster);

/** Reads the cluster's clock into *now_ms (epoch milliseconds). Never
 *  blocks.
 *  Errors: KRABKA_ERR_INVALID_HANDLE; KRABKA_ERR_INVALID_ARG for now_ms
 *  NULL. */
krabka_err_t krabka_testing_clock_now(const krabka_testing_cluster_t *cluster,
                                      int64_t *now_ms, char *errstr,
                                      size_t errstr_size);

/** Moves the cluster's manual clock forward by ms milliseconds (0 is
 *  allowed and changes nothing) and wakes every timer of its clients whose
 *  time has come (a renewal, a standby's wait for a lease's deadline, an
 *  at-risk mark), except those of paused clients. Returns without waiting
 *  for what the woken timers do: a test that needs their effect waits for
 *  it (an event, krabka_leadership_state, an acquire's return). Never
 *  blocks.
 *  Errors: KRABKA_ERR_INVALID_HANDLE; KRABKA_ERR_INVALID_ARG for ms
 *  negative (errstr: the clock never goes backwards) and for a cluster
 *  created with KRABKA_TESTING_REAL_TIME. */
krabka_err_t krabka_testing_clock_advance(krabka_testing_cluster_t *cluster,
                                          int64_t ms, char *errstr,
                                          size_t errstr_size);

/** available 0: every request of every client of the cluster fails at once
 *  with KRABKA_ERR_TRANSPORT until called again with available 1 (nonzero).
 *  Never blocks.
 *  Errors: KRABKA_ERR_INVALID_HANDLE. */
krabka_err_t krabka_testing_cluster_set_available(
    krabka_testing_cluster_t *cluster, int available, char *errstr,
    size_t errstr_size);

/** A blind successor: mints a new token for role at the cluster's
 *  transaction coordinator (InitProducerId for the role's
 *  transactional.id as client names it: its krabka.role.prefix plus role)
 *  without writing a lease, and writes it into *out. The role's holder does
 *  not learn of it: its next guarded write (krabka_leadership_produce),
 *  renewal or resign is refused with KRABKA_ERR_FENCED, and nothing of that
 *  write becomes visible. Goes straight to the cluster: works while
 *  client's link is cut or client is paused or killed. role: KRABKA_NTS or
 *  a byte length, the rules of krabka_coord.h. Never blocks.
 *  Errors: KRABKA_ERR_INVALID_HANDLE; KRABKA_ERR_INVALID_ARG for out NULL
 *  and a client that is not in-process; the role errors of krabka_coord.h
 *  (KRABKA_ERR_EMPTY_ROLE, _ROLE_TOO_LONG, _INVALID_UTF8);
 *  KRABKA_ERR_TRANSPORT when the cluster is unavailable or destroyed. */
krabka_err_t krabka_testing_mint(krabka_client_t *client, const char *role,
                                 size_t role_len, krabka_token_t *out,
                                 char *errstr, size_t errstr_size);

/** The number of committed records (read_committed: records of aborted or
 *  refused transactions are not there) in partition of topic, into *count
 *  (0 for a topic nothing was written to). A test reads back what a
 *  guarded write left. Never blocks.
 *  Errors: KRABKA_ERR_INVALID_HANDLE; KRABKA_ERR_INVALID_ARG for topic or
 *  count NULL, an empty topic, and a partition outside 0..partitions-1. */
krabka_err_t krabka_testing_topic_count(const krabka_testing_cluster_t *cluster,
                                        const char *topic, int32_t partition,
                                        int64_t *count, char *errstr,
                                        size_t errstr_size);

/** The committed record number index (0 .. count-1, in offset order) of
 *  partition of topic: its offset into *offset (may be NULL), its value
 *  copied into value (value_size bytes) with its length in *value_len, and
 *  *is_null (may be NULL) set to 1 for a null value (a tombstone), else 0.
 *  If value_size is too small it returns KRABKA_ERR_BUFFER_TOO_SMALL with
 *  *value_len set to the size needed (pass value NULL and value_size 0 to
 *  ask). Never blocks.
 *  Errors: KRABKA_ERR_INVALID_HANDLE; KRABKA_ERR_INVALID_ARG for topic or
 *  value_len NULL, an empty topic, a partition out of range and an index
 *  outside 0..count-1 (errstr says the count);
 *  KRABKA_ERR_BUFFER_TOO_SMALL. */
krabka_err_t krabka_testing_topic_record(
    const krabka_testing_cluster_t *cluster, const char *topic,
    int32_t partition, int64_t index, int64_t *offset, uint8_t *value,
    size_t value_size, size_t *value_len, int *is_null, char *errstr,
    size_t errstr_size);

/** Cuts client's link to its cluster (cut nonzero: every request fails at
 *  once with KRABKA_ERR_TRANSPORT) or heals it (cut 0). Never blocks.
 *  Errors: KRABKA_ERR_INVALID_HANDLE; KRABKA_ERR_INVALID_ARG for a client
 *  that is not in-process or was killed. */
krabka_err_t krabka_testing_client_set_cut(krabka_client_t *client, int cut,
                                           char *errstr, size_t errstr_size);

/** Pauses client (paused nonzero; SIGSTOP: its requests hold, its view of
 *  the clock freezes, its timers do not fire) or resumes it (paused 0: its
 *  held requests go on, its clock jumps to the cluster's). Never blocks.
 *  Errors: KRABKA_ERR_INVALID_HANDLE; KRABKA_ERR_INVALID_ARG for a client
 *  that is not in-process or was killed. */
krabka_err_t krabka_testing_client_set_paused(krabka_client_t *client,
                                              int paused, char *errstr,
                                              size_t errstr_size);

/** Kills client: from now on none of its requests reaches the cluster (they
 *  fail at once with KRABKA_ERR_TRANSPORT), and it neither resigns nor
 *  leaves, also not in krabka_client_destroy: its leases stay until their
 *  deadline, as a crashed process's do. Idempotent. Never blocks. Destroy
 *  the handle with krabka_client_destroy as usual.
 *  Errors: KRABKA_ERR_INVALID_HANDLE; KRABKA_ERR_INVALID_ARG for a client
 *  that is not in-process. */
krabka_err_t krabka_testing_client_kill(krabka_client_t *client, char *errstr,
                                        size_t errstr_size);

#ifdef __cplusplus
}
#endif

#endif /* KRABKA_COORD_TESTING_H */
