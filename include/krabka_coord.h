/*
 * krabka_coord.h - leader election, leases and fencing tokens on Apache Kafka.
 *
 * This header is the authoritative C contract of libkrabka_coord.so. It is
 * hand-written; the header that cgo generates while building the library is
 * internal and is never installed.
 *
 * How it may change: add, never change. From ABI 2 (library 2.0.0, SONAME
 * libkrabka_coord.so.2) no struct that crosses the ABI changes its layout
 * and no function its signature or meaning; new data comes as new functions
 * (accessors of opaque objects), new event types, new enum values and new
 * error codes, and numbers are never reused. Everything a call hands back
 * that may grow is opaque (queue events, watch events, describe results);
 * the one struct callers fill in, krabka_message_t, carries its own size.
 * A change that breaks this is a new ABI version and SONAME. docs/ABI.md
 * states the rule in full and records what each ABI version changed.
 *
 * The idea in one paragraph: a role (for example "controller") is a Kafka
 * transactional.id. Taking the role mints a new producer epoch at the
 * transaction coordinator; the pair (producer id, producer epoch) is the
 * fencing token. The broker rejects every transactional write that carries a
 * superseded token, so a deposed leader cannot write even when it does not
 * know it was deposed. Leases only tell standbys when to stop waiting.
 *
 * Conventions used on every function
 * -----------------------------------
 * - Every fallible call returns krabka_err_t: KRABKA_OK (0) or an error code.
 *   Error numbers never change between releases.
 * - errstr/errstr_size: on failure a NUL-terminated, human-readable reason is
 *   written into errstr (truncated to errstr_size - 1 bytes). errstr may be
 *   NULL or errstr_size 0; it is never written on success. There is no
 *   "last error" global.
 * - Names (role, member id) are passed as a pointer and a byte length; pass
 *   KRABKA_NTS as the length for a NUL-terminated string. Names are UTF-8,
 *   1 to 249 bytes; they may contain any character, NUL included, when a
 *   length is given.
 * - Handles are opaque. Every call checks that a handle is live and of the
 *   right kind and answers KRABKA_ERR_INVALID_HANDLE otherwise (NULL, a
 *   destroyed handle, or a handle of another kind). Destroying a handle
 *   twice answers KRABKA_ERR_INVALID_HANDLE the second time.
 * - Ownership phrases: "static, never free" (library-owned, lives for the
 *   process); "copied into the caller's buffer"; "destroy with
 *   krabka_X_destroy" (caller-owned handle).
 * - Thread safety: every function may be called from any thread. Handles may
 *   be shared between threads unless a function says otherwise.
 * - Blocking: calls that talk to the cluster take timeout_ms and say
 *   "Blocks"; every other call returns without network I/O.
 * - Timeouts: timeout_ms > 0 bounds the call. KRABKA_TIMEOUT_DEFAULT (0)
 *   means the client's request.timeout.ms for renew, produce, resign and
 *   describe, and "no limit" for acquire. A negative value is
 *   KRABKA_ERR_INVALID_ARG. The *_async form of a call has the same
 *   timeout and the same outcomes; it posts them to an event queue.
 * - Threads the library calls you on: only the log callback
 *   (krabka_conf_set_log_cb), from one library thread per client. Every
 *   other result reaches the host through a return value or an event queue.
 * - Event loops (poll/epoll/select): nothing needs polling by timer. The
 *   fds are krabka_queue_fd (results of the *_async calls and, with
 *   krabka_conf_set_log_queue, log lines), krabka_leadership_event_fd
 *   (readable when the leadership ends) and krabka_watch_event_fd
 *   (readable while a watch has events). A firmware main loop:
 *
 *       struct pollfd fds[3] = {{stop_pipe, POLLIN}, {queue_fd, POLLIN},
 *                               {lead_fd, POLLIN}};
 *       for (;;) {
 *           poll(fds, 3, ms_until_next_command);
 *           if (fds[1].revents & POLLIN)      // acquire results, log lines
 *               while (krabka_queue_poll(q, &ev) == KRABKA_OK && ev) {
 *                   handle(ev);               // krabka_event_type, ...
 *                   krabka_event_destroy(ev);
 *               }
 *           if (fds[2].revents & POLLIN) {    // the leadership ended:
 *               stop_dispatching();           // krabka_leadership_end_error
 *               break;                        // says why
 *           }
 *           // renew when due, dispatch through krabka_leadership_produce
 *       }
 *
 *   examples/c/device_host.c is the complete program.
 * - The library runs a Go runtime, which a child process after fork()
 *   (without exec()) does not have: every call there returns
 *   KRABKA_ERR_FORKED at once without entering Go (errstr says so where the
 *   function has one), a call that blocks included, on any handle. A fork
 *   through the C library's fork() is seen by a pthread_atfork handler
 *   (no cost per call); the calls that may block (with a timeout_ms, and
 *   the client and leadership destroys) also compare the process id with
 *   the one at load, so they answer FORKED after a raw clone too.
 *   The functions that return no krabka_err_t answer in the child too, from
 *   C: the versions, krabka_err2str/err2name/err_is_retriable/err_is_fatal,
 *   the token arithmetic and krabka_murmur2 give the parent's answers,
 *   krabka_value_is_tombstone and krabka_free work, krabka_conf_new returns
 *   NULL. The parent is unaffected. Handles are not usable in the child
 *   (destroying them there returns KRABKA_ERR_FORKED and frees nothing).
 *   It installs handlers for SIGSEGV, SIGBUS, SIGFPE,
 *   SIGPIPE and SIGURG; handlers the host installs later should use
 *   SA_ONSTACK. The library can never be unloaded.
 */
#ifndef KRABKA_COORD_H
#define KRABKA_COORD_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* ------------------------------------------------------------------------ */
/* Versions                                                                  */
/* ------------------------------------------------------------------------ */

#define KRABKA_VERSION_MAJOR 2
#define KRABKA_VERSION_MINOR 0
#define KRABKA_VERSION_PATCH 0
/** "2.0.0" for this header. */
#define KRABKA_VERSION_STRING "2.0.0"
/** MAJOR * 10000 + MINOR * 100 + PATCH. */
#define KRABKA_VERSION_NUMBER                                                  \
    (KRABKA_VERSION_MAJOR * 10000 + KRABKA_VERSION_MINOR * 100 +               \
     KRABKA_VERSION_PATCH)
/** Version of the binary interface described by this header (the SONAME is
 *  libkrabka_coord.so.KRABKA_ABI_VERSION). Bindings refuse a library whose
 *  krabka_abi_version() differs. */
#define KRABKA_ABI_VERSION 2

/** Version of the loaded library as text, e.g. "1.0.0".
 *  Static, never free. Never blocks. */
const char *krabka_version(void);
/** Version of the loaded library as KRABKA_VERSION_NUMBER. Never blocks. */
int krabka_version_number(void);
/** ABI version of the loaded library (compare with KRABKA_ABI_VERSION). */
int krabka_abi_version(void);

/* ------------------------------------------------------------------------ */
/* Errors                                                                    */
/* ------------------------------------------------------------------------ */

typedef enum krabka_err {
    KRABKA_OK = 0,

    /* Misuse of the API. */
    KRABKA_ERR_INVALID_ARG = 1,     /**< NULL or out-of-range argument */
    KRABKA_ERR_INVALID_HANDLE = 2,  /**< unknown, destroyed or wrong-kind handle */
    KRABKA_ERR_BUFFER_TOO_SMALL = 3,/**< output buffer too small; *len says the size */
    KRABKA_ERR_UNKNOWN_CONFIG = 4,  /**< no such configuration property */
    KRABKA_ERR_INVALID_CONFIG = 5,  /**< property value does not parse or is out of range */

    /* Data errors: one per category of the conformance vocabulary
     * (decoders: krabka_key_decode, krabka_registration_decode,
     * krabka_lease_decode). */
    KRABKA_ERR_TRUNCATED = 10,      /**< a decoder's bytes end before the
                                         record's last field */
    KRABKA_ERR_TRAILING_BYTES = 11, /**< a decoder's bytes go on after the
                                         record's last field */
    KRABKA_ERR_UNSUPPORTED_VERSION = 12, /**< a record's version field is
                                         not 0 (decoders) */
    KRABKA_ERR_UNKNOWN_KIND = 13,   /**< a key kind other than 0
                                         (registration) or 1 (lease): key
                                         encode and decode */
    KRABKA_ERR_NEGATIVE_LENGTH = 14,/**< a string length inside a record is
                                         negative (decoders) */
    KRABKA_ERR_INVALID_UTF8 = 15,   /**< a role or member id, given to a call
                                         or read from a record, is not valid
                                         UTF-8 */
    KRABKA_ERR_LEASE_KEY_HAS_MEMBER = 16, /**< a lease key (kind 1) read
                                         from a record names a member */
    KRABKA_ERR_EMPTY_ROLE = 17,     /**< a role of 0 bytes */
    KRABKA_ERR_EMPTY_MEMBER = 18,   /**< a member id (or successor) of 0
                                         bytes */
    KRABKA_ERR_ROLE_TOO_LONG = 19,  /**< a role longer than KRABKA_NAME_MAX
                                         (249) bytes */
    KRABKA_ERR_MEMBER_TOO_LONG = 20,/**< a member id longer than
                                         KRABKA_NAME_MAX (249) bytes */
    KRABKA_ERR_NEGATIVE_TOKEN = 21, /**< a token with a negative producer id
                                         or epoch: krabka_token_validate,
                                         _token_parse, lease encode/decode */
    KRABKA_ERR_TOKEN_FORM = 22,     /**< token text that is not
                                         "<id>:<epoch>" in decimal (not one
                                         colon, not a number, out of range):
                                         krabka_token_parse */
    KRABKA_ERR_INVALID_PARTITION_COUNT = 23, /**< a partition count below 1:
                                         krabka_role_partition */
    KRABKA_ERR_INVALID_LEASE_CONFIG = 24, /**< lease extents that break the
                                         lease clock's rules (not positive,
                                         or a renew interval not shorter
                                         than the lease); krabka_client_new
                                         reports such settings as
                                         INVALID_CONFIG naming the key */

    /* Leadership and cluster outcomes. */
    KRABKA_ERR_FENCED = 30,         /**< the cluster superseded this leadership;
                                         stop dispatching at once */
    KRABKA_ERR_LEASE_EXPIRED = 31,  /**< renewal failed until the lease deadline;
                                         the leadership ended by itself */
    KRABKA_ERR_NOT_LEADER = 32,     /**< the leadership was resigned or destroyed */
    KRABKA_ERR_TIMEOUT = 33,        /**< timeout_ms passed */
    KRABKA_ERR_AUTHORIZATION = 34,  /**< an ACL is missing (errstr names it) */
    KRABKA_ERR_UNSUPPORTED = 35,    /**< the cluster lacks transactions or
                                         DescribeTransactions */
    KRABKA_ERR_TRANSPORT = 36,      /**< network or broker error; may pass */
    KRABKA_ERR_CLOSED = 37,         /**< the client was destroyed */
    KRABKA_ERR_AUTHENTICATION = 38, /**< the cluster refused the SASL
                                         credentials (not a missing ACL:
                                         that is AUTHORIZATION) */
    KRABKA_ERR_MESSAGE_TOO_LARGE = 39, /**< a record is larger than the broker
                                         or topic accepts; permanent */
    KRABKA_ERR_UNKNOWN_TOPIC_OR_PARTITION = 40, /**< a guarded write names a
                                         topic or partition that does not
                                         exist (after a metadata refresh) */
    KRABKA_ERR_TLS = 41,            /**< TLS handshake failed for a lasting
                                         reason: broker certificate not
                                         trusted, expired or for another
                                         host, or client certificate refused */
    KRABKA_ERR_FORKED = 42,         /**< called in a child after fork(); the
                                         library works only in the process
                                         that loaded it (see the conventions) */
    KRABKA_ERR_INTERNAL = 50        /**< a bug in the library (a recovered panic) */
} krabka_err_t;

/** Human-readable description of an error code ("the cluster superseded
 *  this leadership"). Unknown codes give "unknown error". Static, never free. */
const char *krabka_err2str(krabka_err_t err);
/** Stable symbolic name of an error code without the prefix ("FENCED",
 *  "TIMEOUT"); unknown codes give "UNKNOWN". Static, never free. */
const char *krabka_err2name(krabka_err_t err);
/** 1 if the same call may succeed when repeated later (TIMEOUT, TRANSPORT),
 *  else 0. */
int krabka_err_is_retriable(krabka_err_t err);
/** 1 if the object the call was made on can no longer be used for that
 *  purpose (FENCED, LEASE_EXPIRED, NOT_LEADER, CLOSED, INTERNAL), else 0. */
int krabka_err_is_fatal(krabka_err_t err);

/** One error code as the four functions above describe it. */
typedef struct krabka_err_desc {
    krabka_err_t code;
    const char *name; /**< krabka_err2name: "FENCED" (no prefix) */
    const char *desc; /**< krabka_err2str's text */
    int retriable;    /**< krabka_err_is_retriable */
    int fatal;        /**< krabka_err_is_fatal */
} krabka_err_desc_t;

/** The whole error table, every code in numeric order (KRABKA_OK first):
 *  *descs points at *count entries. Static, never free. Never blocks;
 *  answers in a child after fork() too. NULL descs or count: nothing is
 *  written there. */
void krabka_get_err_descs(const krabka_err_desc_t **descs, size_t *count);

/* ------------------------------------------------------------------------ */
/* Small value types                                                         */
/* ------------------------------------------------------------------------ */

/** Pass as a name length for a NUL-terminated name. */
#define KRABKA_NTS ((size_t)-1)
/** Longest role or member id in bytes. */
#define KRABKA_NAME_MAX 249
/** Size of the name buffers inside value structs (KRABKA_NAME_MAX + NUL,
 *  rounded up). */
#define KRABKA_NAME_BUF 256
/** Buffer size that always holds a formatted token and its NUL. */
#define KRABKA_TOKEN_TEXT_MAX 32
/** Pass as timeout_ms for the default timeout (see the conventions). */
#define KRABKA_TIMEOUT_DEFAULT 0
/** Pass as a message partition to let Kafka's key hashing choose. */
#define KRABKA_PARTITION_ANY (-1)

/** A fencing token: (producer id, producer epoch), ordered lexicographically.
 *  Never compare epochs alone. */
typedef struct krabka_token {
    int64_t producer_id;
    int16_t producer_epoch;
} krabka_token_t;

/** Record kinds of the coordination topic. */
typedef enum krabka_kind {
    KRABKA_KIND_REGISTRATION = 0,
    KRABKA_KIND_LEASE = 1
} krabka_kind_t;

/** A record key. role/member hold role_len/member_len bytes followed by a
 *  NUL. A lease key has member_len 0. */
typedef struct krabka_key {
    int32_t kind; /**< krabka_kind_t */
    uint32_t role_len;
    char role[KRABKA_NAME_BUF];
    uint32_t member_len;
    char member[KRABKA_NAME_BUF];
} krabka_key_t;

/** A registration value. */
typedef struct krabka_registration {
    uint32_t member_len;
    char member[KRABKA_NAME_BUF];
    int64_t registered_at; /**< epoch milliseconds */
} krabka_registration_t;

/** A lease value. */
typedef struct krabka_lease {
    uint32_t member_len;
    char member[KRABKA_NAME_BUF];
    krabka_token_t token;
    int64_t granted_at; /**< epoch milliseconds */
    int64_t deadline;   /**< epoch milliseconds; live while now < deadline */
} krabka_lease_t;

/* ------------------------------------------------------------------------ */
/* Pure functions: tokens, names, partitions, the record format              */
/* None of these blocks or allocates anything the caller must free.         */
/* ------------------------------------------------------------------------ */

/** The token of a role nobody has taken: (-1, -1). */
krabka_token_t krabka_token_no_epoch(void);
/** Checks that both halves of a token are non-negative
 *  (KRABKA_ERR_NEGATIVE_TOKEN otherwise). */
krabka_err_t krabka_token_validate(krabka_token_t token, char *errstr,
                                   size_t errstr_size);
/** -1, 0 or 1 as a is below, equal to or above b (producer id first, then
 *  epoch). */
int krabka_token_compare(krabka_token_t a, krabka_token_t b);
/** 1 if a supersedes b (compare(a, b) == 1), else 0. */
int krabka_token_supersedes(krabka_token_t a, krabka_token_t b);
/** Writes "<producer_id>:<producer_epoch>" and a NUL into buf (copied into
 *  the caller's buffer). KRABKA_ERR_BUFFER_TOO_SMALL if buf_size is below
 *  the text length + 1; KRABKA_TOKEN_TEXT_MAX always suffices. */
krabka_err_t krabka_token_format(krabka_token_t token, char *buf,
                                 size_t buf_size);
/** Parses the text form (text_len bytes, or KRABKA_NTS): exactly one colon,
 *  a 64-bit id and a 16-bit epoch in ASCII decimal, both non-negative.
 *  KRABKA_ERR_TOKEN_FORM or KRABKA_ERR_NEGATIVE_TOKEN on failure. */
krabka_err_t krabka_token_parse(const char *text, size_t text_len,
                                krabka_token_t *out, char *errstr,
                                size_t errstr_size);

/** Checks a role name: KRABKA_ERR_EMPTY_ROLE, KRABKA_ERR_ROLE_TOO_LONG or
 *  KRABKA_ERR_INVALID_UTF8 on failure. */
krabka_err_t krabka_role_validate(const char *role, size_t role_len,
                                  char *errstr, size_t errstr_size);
/** Checks a member id: KRABKA_ERR_EMPTY_MEMBER, KRABKA_ERR_MEMBER_TOO_LONG or
 *  KRABKA_ERR_INVALID_UTF8 on failure. */
krabka_err_t krabka_member_validate(const char *member, size_t member_len,
                                    char *errstr, size_t errstr_size);

/** Kafka's murmur2 hash of len bytes (data may be NULL when len is 0). */
int32_t krabka_murmur2(const uint8_t *data, size_t len);
/** The coordination partition of a role:
 *  (murmur2(role) & 0x7fffffff) % partitions. */
krabka_err_t krabka_role_partition(const char *role, size_t role_len,
                                   int32_t partitions, int32_t *out,
                                   char *errstr, size_t errstr_size);

/** 1 if a record value read from the log is a tombstone (NULL or empty). */
int krabka_value_is_tombstone(const uint8_t *value, size_t len);

/* Encoders write into buf (copied into the caller's buffer) and set *out_len
 * to the encoded length. If buf_size is too small they return
 * KRABKA_ERR_BUFFER_TOO_SMALL with *out_len set to the size needed (pass
 * buf NULL and buf_size 0 to ask). A lease key is always written with an
 * empty member, whatever key->member holds. A tombstone is written as a null
 * value: there is no encoder for it.
 *
 * Decoders read len bytes and fill *out; on failure they return one of the
 * data error codes (KRABKA_ERR_TRUNCATED ... KRABKA_ERR_NEGATIVE_TOKEN) and
 * leave *out unspecified. They never read past len. */
krabka_err_t krabka_key_encode(const krabka_key_t *key, uint8_t *buf,
                               size_t buf_size, size_t *out_len, char *errstr,
                               size_t errstr_size);
krabka_err_t krabka_key_decode(const uint8_t *data, size_t len,
                               krabka_key_t *out, char *errstr,
                               size_t errstr_size);
krabka_err_t krabka_registration_encode(const krabka_registration_t *value,
                                        uint8_t *buf, size_t buf_size,
                                        size_t *out_len, char *errstr,
                                        size_t errstr_size);
krabka_err_t krabka_registration_decode(const uint8_t *data, size_t len,
                                        krabka_registration_t *out,
                                        char *errstr, size_t errstr_size);
krabka_err_t krabka_lease_encode(const krabka_lease_t *value, uint8_t *buf,
                                 size_t buf_size, size_t *out_len,
                                 char *errstr, size_t errstr_size);
krabka_err_t krabka_lease_decode(const uint8_t *data, size_t len,
                                 krabka_lease_t *out, char *errstr,
                                 size_t errstr_size);

/* ------------------------------------------------------------------------ */
/* Configuration                                                             */
/* ------------------------------------------------------------------------ */

/** Opaque configuration: Kafka client properties (bootstrap.servers,
 *  client.id, security.protocol, sasl.mechanism, sasl.username,
 *  sasl.password, ssl.ca.location, request.timeout.ms) and krabka.*
 *  coordination settings. docs/CONFIGURATION.md lists every key. */
typedef struct krabka_conf krabka_conf_t;

/** A new configuration holding the defaults. Destroy with
 *  krabka_conf_destroy. Returns NULL only if the library is unusable. */
krabka_conf_t *krabka_conf_new(void);
/** Sets one property (name and value NUL-terminated). The value is checked
 *  at once: KRABKA_ERR_UNKNOWN_CONFIG for an unknown name,
 *  KRABKA_ERR_INVALID_CONFIG for a bad value; errstr names the key. Not
 *  safe to call concurrently with another call on the same conf. */
krabka_err_t krabka_conf_set(krabka_conf_t *conf, const char *name,
                             const char *value, char *errstr,
                             size_t errstr_size);
/** Reads one property as text (copied into the caller's buffer, with a NUL).
 *  *value_size is in/out: the size of value on entry, the size needed
 *  (text length + 1) on return. value may be NULL to ask for the size.
 *  KRABKA_ERR_BUFFER_TOO_SMALL when it does not fit. Secrets
 *  (sasl.password) read back as "[redacted]". */
krabka_err_t krabka_conf_get(const krabka_conf_t *conf, const char *name,
                             char *value, size_t *value_size);
/** Destroys a configuration. A client made from it is unaffected. */
krabka_err_t krabka_conf_destroy(krabka_conf_t *conf);

/* ------------------------------------------------------------------------ */
/* Client                                                                    */
/* ------------------------------------------------------------------------ */

typedef struct krabka_client krabka_client_t;
typedef struct krabka_leadership krabka_leadership_t;
typedef struct krabka_status krabka_status_t;
/* Described under "Watching a role" and "Watch events" below. */
typedef struct krabka_watch krabka_watch_t;
typedef struct krabka_watch_event krabka_watch_event_t;

/** Creates a client from a configuration (the configuration is copied; the
 *  caller keeps and destroys conf). Validates the configuration; does not
 *  connect (the first blocking call does). Destroy with
 *  krabka_client_destroy. */
krabka_err_t krabka_client_new(const krabka_conf_t *conf,
                               krabka_client_t **out, char *errstr,
                               size_t errstr_size);
/** Closes the client: calls blocked in other threads return
 *  KRABKA_ERR_CLOSED, its leaderships end without resigning (their
 *  handles stay valid until destroyed and answer KRABKA_ERR_CLOSED).
 *  Blocks until background work has stopped (bounded by request.timeout.ms). */
krabka_err_t krabka_client_destroy(krabka_client_t *client);

/** Takes the role for this member, waiting as long as the succession rules
 *  say (registers the member, waits for its turn, then mints a new epoch and
 *  writes a lease that also prunes the members that let their turn pass).
 *  The client follows the role's partition meanwhile: the wait ends as soon
 *  as a record changes the answer. On success *out is a new leadership:
 *  destroy with krabka_leadership_destroy. Blocks up to timeout_ms
 *  (KRABKA_TIMEOUT_DEFAULT: no limit; a value beyond what the clock holds
 *  means no limit too); KRABKA_ERR_TIMEOUT when it passes, with the last
 *  reason in errstr. Failures that may pass (a broker down, nothing
 *  listening yet: TRANSPORT) are logged and retried with backoff until the
 *  timeout, with or without one; KRABKA_ERR_CLOSED when the client is
 *  destroyed meanwhile. */
krabka_err_t krabka_client_acquire(krabka_client_t *client, const char *role,
                                   size_t role_len, const char *member,
                                   size_t member_len, int64_t timeout_ms,
                                   krabka_leadership_t **out, char *errstr,
                                   size_t errstr_size);
/** One pass of acquire that never waits for another member's lease: on
 *  KRABKA_OK, *out is either a new leadership (destroy with
 *  krabka_leadership_destroy) or NULL when the role was not won, and then
 *  *retry_at_ms (epoch milliseconds, may be NULL) says when the answer can
 *  change. Registers the member if needed. Blocks for the round trips of one
 *  pass, up to timeout_ms. */
krabka_err_t krabka_client_try_acquire(krabka_client_t *client,
                                       const char *role, size_t role_len,
                                       const char *member, size_t member_len,
                                       int64_t timeout_ms,
                                       krabka_leadership_t **out,
                                       int64_t *retry_at_ms, char *errstr,
                                       size_t errstr_size);
/** Removes member's registration of role (writes a tombstone of it,
 *  docs/PROTOCOL.md 10.4): the member leaves the succession order; a later
 *  acquire registers it again, at the tail. Does not end a leadership: a
 *  holder that leaves keeps its lease until it resigns, is destroyed or the
 *  lease runs out. Closing a client leaves by itself the roles it registered
 *  in and does not hold (krabka.leave.on.close, default true). Blocks for
 *  one write, up to timeout_ms (KRABKA_TIMEOUT_DEFAULT:
 *  request.timeout.ms). Thread-safe. */
krabka_err_t krabka_client_leave(krabka_client_t *client, const char *role,
                                 size_t role_len, const char *member,
                                 size_t member_len, int64_t timeout_ms,
                                 char *errstr, size_t errstr_size);
/** The third-party check: asks the transaction coordinator for the role's
 *  current token and reads the role's partition. Takes no epoch and joins no
 *  group. *out: destroy with krabka_status_destroy. Blocks up to
 *  timeout_ms. */
krabka_err_t krabka_client_describe(krabka_client_t *client, const char *role,
                                    size_t role_len, int64_t timeout_ms,
                                    krabka_status_t **out, char *errstr,
                                    size_t errstr_size);

/* ------------------------------------------------------------------------ */
/* Leadership                                                                */
/* ------------------------------------------------------------------------ */

typedef enum krabka_leadership_state {
    KRABKA_LEADERSHIP_ACTIVE = 0,
    KRABKA_LEADERSHIP_FENCED = 1,   /**< the cluster superseded it */
    KRABKA_LEADERSHIP_EXPIRED = 2,  /**< a renewal was failing at the deadline */
    KRABKA_LEADERSHIP_RESIGNED = 3,
    KRABKA_LEADERSHIP_CLOSED = 4    /**< its client was destroyed */
} krabka_leadership_state_t;

/** One record header of a guarded write. key: NUL-terminated UTF-8; names
 *  starting with "krabka." are reserved (INVALID_ARG). value NULL: empty. */
typedef struct krabka_header {
    const char *key;
    const uint8_t *value;
    size_t value_len;
} krabka_header_t;

/** A message for a guarded write. Start from KRABKA_MESSAGE_INIT (it sets
 *  size) and fill in the rest. key NULL = null key; value NULL = null value.
 *  partition KRABKA_PARTITION_ANY lets Kafka's key hashing choose.
 *
 *  size is sizeof(krabka_message_t) as the caller was compiled: the library
 *  reads only the fields size covers (a later header may append fields; a
 *  library older than the caller ignores what it does not know) and steps
 *  through an array by messages[0].size. Every element must carry the same
 *  size, at least this header's sizeof(krabka_message_t), at most 4096 and
 *  a multiple of the struct's alignment: KRABKA_ERR_INVALID_ARG otherwise,
 *  errstr naming the index. */
typedef struct krabka_message {
    size_t size;        /**< sizeof(krabka_message_t): KRABKA_MESSAGE_INIT */
    const char *topic;  /**< NUL-terminated */
    int32_t partition;
    const uint8_t *key;
    size_t key_len;
    const uint8_t *value;
    size_t value_len;
    /** header_count record headers of this message (NULL with 0: none).
     *  With krabka.produce.token.header (default true) every message also
     *  carries krabka.token = "<producer id>:<epoch>" of the token it is
     *  written with. */
    const krabka_header_t *headers;
    size_t header_count;
} krabka_message_t;

/** Initialiser of a krabka_message_t: the size of this header's struct,
 *  partition KRABKA_PARTITION_ANY, everything else NULL or 0. */
#define KRABKA_MESSAGE_INIT                                                     \
    { sizeof(krabka_message_t), NULL, KRABKA_PARTITION_ANY, NULL, 0, NULL, 0,   \
      NULL, 0 }

/** Where one message of a guarded write landed. */
typedef struct krabka_produce_result {
    int32_t partition;
    int64_t offset;
} krabka_produce_result_t;

/** The fencing token this leadership holds. Never blocks. It is the minted
 *  token, or, after an own epoch recovery (the producer re-initialised
 *  itself after a failed transaction and the coordinator granted it because
 *  nobody else minted in between; docs/PROTOCOL.md 10.5), the new one: the
 *  next lease carries it and a log line says so. Read it again after an
 *  error if commands carry it. A timeout of a call never changes it. */
krabka_err_t krabka_leadership_token(const krabka_leadership_t *leadership,
                                     krabka_token_t *out);
/** The lease this leadership last wrote (copied into *out). Never blocks. */
krabka_err_t krabka_leadership_lease(const krabka_leadership_t *leadership,
                                     krabka_lease_t *out);
/** The state of this leadership. Never blocks. ACTIVE means only that the
 *  library has not seen the leadership end; it is no proof of leadership.
 *  The proof is a guarded write that succeeded (the broker accepted this
 *  token), so dispatch only what krabka_leadership_produce committed. */
krabka_err_t krabka_leadership_state(const krabka_leadership_t *leadership,
                                     krabka_leadership_state_t *out);
/** *due = 1 when the renew interval has passed since the lease was granted
 *  (or the deadline is near), else 0. Never blocks. */
krabka_err_t krabka_leadership_renew_due(const krabka_leadership_t *leadership,
                                         int *due);
/** Writes a fresh lease under the same token. KRABKA_ERR_FENCED: the
 *  cluster superseded this leadership (stop at once).
 *  KRABKA_ERR_LEASE_EXPIRED: a renewal failed and the deadline passed before
 *  one succeeded (for example the host is cut off from the cluster): the
 *  leadership ended by itself. A renewal started before the deadline never
 *  runs past it; one started after it (the host was late, or was paused) is
 *  still sent, and the broker rejects it (FENCED) if a standby took over.
 *  Other errors (TIMEOUT, TRANSPORT) leave the leadership active: retry
 *  until the deadline; a timeout is never turned into FENCED (the
 *  transaction in flight is finished or aborted in the background).
 *  Blocks up to timeout_ms. */
krabka_err_t krabka_leadership_renew(krabka_leadership_t *leadership,
                                     int64_t timeout_ms, char *errstr,
                                     size_t errstr_size);
/** The guarded write: writes count messages in one transaction of the
 *  role's transactional producer, so the broker rejects them if this
 *  leadership was superseded (KRABKA_ERR_FENCED). On success each message is
 *  durable per the topic's settings (acks=all) and, if results is not NULL,
 *  results[i] says where message i landed (copied into the caller's array
 *  of count entries). Past the lease deadline the write is still sent (the
 *  broker decides) unless a renewal is failing, in which case the leadership
 *  has ended: KRABKA_ERR_LEASE_EXPIRED. Blocks up to timeout_ms.
 *  Thread-safe: concurrent calls on one leadership (from many threads) are
 *  committed together, the calls made while a transaction commits going
 *  into the next one (group commit, krabka.produce.group.*). Each call gets
 *  its own results or the error of the transaction that carried its
 *  messages (FENCED fails all of that transaction's calls; any other
 *  failure, e.g. a message too large, only them); a call's messages are
 *  never split and keep their order. Messages carry their record headers
 *  (krabka_message_t: a "krabka." name, a NULL key or a NULL headers array
 *  with a count is INVALID_ARG before anything is written). */
krabka_err_t krabka_leadership_produce(krabka_leadership_t *leadership,
                                       const krabka_message_t *messages,
                                       size_t count, int64_t timeout_ms,
                                       krabka_produce_result_t *results,
                                       char *errstr, size_t errstr_size);
/** Gives the role up and steps aside: one transaction under this token
 *  with an expired lease and a tombstone of this member's registration, so
 *  the first standby challenges at once (the others keep their stagger). A
 *  courtesy, not a fence: stop guarded writes first. The leadership is
 *  RESIGNED afterwards even if the write failed; an acquire registers the
 *  member again, at the tail. Blocks up to timeout_ms. */
krabka_err_t krabka_leadership_resign(krabka_leadership_t *leadership,
                                      int64_t timeout_ms, char *errstr,
                                      size_t errstr_size);
/** Releases the leadership's resources without resigning (standbys take
 *  over at the lease deadline). Blocks briefly while the producer closes. */
krabka_err_t krabka_leadership_destroy(krabka_leadership_t *leadership);

/** Blocks until the leadership leaves ACTIVE (it was fenced, expired,
 *  resigned, destroyed, or its client was destroyed) or timeout_ms passes.
 *  KRABKA_OK: it ended and *state is the final state. KRABKA_ERR_TIMEOUT: it
 *  is still ACTIVE (*state = KRABKA_LEADERSHIP_ACTIVE). KRABKA_TIMEOUT_DEFAULT
 *  waits without limit. Any number of threads may wait on one leadership.
 *  Blocks up to timeout_ms (no network I/O of its own). */
krabka_err_t krabka_leadership_wait(krabka_leadership_t *leadership,
                                    int64_t timeout_ms,
                                    krabka_leadership_state_t *state);
/** A file descriptor (Linux eventfd) for poll/epoll/select main loops: it
 *  becomes readable when the leadership leaves ACTIVE (its only state
 *  change; at once if it already has), then read the state with
 *  krabka_leadership_state. Once a call (state, wait, end_error) has
 *  reported the end, the fd is already readable. Ownership: the fd belongs to the leadership;
 *  never close it yourself: krabka_leadership_destroy closes it (remove it
 *  from your poll set first). Every call returns the same fd. Reset: read 8
 *  bytes from it (it is non-blocking); since a leadership ends only once,
 *  the library never signals it again, so a host usually just stops
 *  polling it. Never blocks. */
krabka_err_t krabka_leadership_event_fd(krabka_leadership_t *leadership,
                                        int *fd);
/** How the leadership ended: *code is KRABKA_OK while it is ACTIVE, else
 *  the error its calls now return (FENCED, LEASE_EXPIRED, NOT_LEADER or
 *  CLOSED) and the reason is copied into the caller's buffer (truncated to
 *  reason_size - 1 bytes; reason may be NULL). Never blocks. */
krabka_err_t krabka_leadership_end_error(const krabka_leadership_t *leadership,
                                         krabka_err_t *code, char *reason,
                                         size_t reason_size);
/** The check before a leader-only read (etcd's Txn on the election key):
 *  one request (DescribeTransactions) asks the transaction coordinator for
 *  the role's current token; *current = 1 when it is still this
 *  leadership's token (nobody minted the role since), 0 when another
 *  member (or a fence) minted a newer epoch: the broker refuses this
 *  leadership's writes, so do not serve the read. The comparison is
 *  equality, as krabka_status_current's (docs/PROTOCOL.md 8: the library
 *  keeps the coordinator's epoch at the minted one under transaction
 *  protocol version 2 too). A 0 answer does not end the leadership: the
 *  broker's refusal of its next write does (FENCED), or the live view once
 *  the successor's lease arrives. Waits for the renewal, guarded write or
 *  resignation in flight on this leadership first (an own epoch recovery,
 *  docs/PROTOCOL.md 10.5, is never taken for another member's mint). An
 *  ended leadership answers the error it ended with (FENCED,
 *  LEASE_EXPIRED, NOT_LEADER, CLOSED) and *current = 0; TIMEOUT,
 *  TRANSPORT or AUTHORIZATION (the DESCRIBE ACL on the role's
 *  transactional id) leave it as it was. current: written on KRABKA_OK and
 *  on those ends (never NULL: INVALID_ARG). Blocks for one round trip, up
 *  to timeout_ms (KRABKA_TIMEOUT_DEFAULT: request.timeout.ms).
 *  Thread-safe. */
krabka_err_t krabka_leadership_confirm(krabka_leadership_t *leadership,
                                       int64_t timeout_ms, int *current,
                                       char *errstr, size_t errstr_size);

/* ------------------------------------------------------------------------ */
/* Event queues: completions without a waiting thread                        */
/* ------------------------------------------------------------------------ */

/** An event queue collects the results of the *_async calls (and, if
 *  configured, log lines) so that a host waits for any number of them with
 *  one file descriptor and no thread per call: the library's own threads do
 *  the waiting and post one event per call. librdkafka's queue + io event
 *  fd is the model; the Python and Node bindings are built on it. */
typedef struct krabka_queue krabka_queue_t;

/** What an event is the result of, and so which data it carries. New types
 *  get new numbers; a host ignores (and destroys) types it does not know. */
typedef enum krabka_event_type {
    KRABKA_EVENT_NONE = 0,         /**< never posted (reserved) */
    KRABKA_EVENT_ACQUIRE = 1,      /**< krabka_client_acquire_async:
                                        take_leadership */
    KRABKA_EVENT_ENDED = 2,        /**< krabka_leadership_ended_async: state */
    KRABKA_EVENT_LOG = 3,          /**< a log line (krabka_conf_set_log_queue):
                                        log */
    KRABKA_EVENT_WATCH = 4,        /**< krabka_watch_next_async:
                                        take_watch_event */
    KRABKA_EVENT_PRODUCE = 5,      /**< krabka_leadership_produce_async:
                                        results */
    KRABKA_EVENT_RENEW = 6,        /**< krabka_leadership_renew_async */
    KRABKA_EVENT_RESIGN = 7,       /**< krabka_leadership_resign_async */
    KRABKA_EVENT_DESCRIBE = 8,     /**< krabka_client_describe_async:
                                        take_status */
    KRABKA_EVENT_TRY_ACQUIRE = 9,  /**< krabka_client_try_acquire_async:
                                        take_leadership, retry_at */
    KRABKA_EVENT_LEAVE = 10,       /**< krabka_client_leave_async */
    KRABKA_EVENT_WATCH_OPEN = 11,  /**< krabka_client_watch_async: take_watch */
    KRABKA_EVENT_SET_METADATA = 12, /**< krabka_leadership_set_metadata_async */
    KRABKA_EVENT_TERM = 13,        /**< an elector's term event
                                        (krabka_elector_new): term_kind, term,
                                        token, holder, deadline,
                                        stop_reason, take_leadership */
    KRABKA_EVENT_LEASE = 14,       /**< krabka_leadership_events_async:
                                        lease_kind, deadline, state */
    KRABKA_EVENT_CONFIRM = 15,     /**< krabka_leadership_confirm_async:
                                        confirmed */
    KRABKA_EVENT_CONSUME = 16,     /**< krabka_leadership_consume_async:
                                        take_input */
    KRABKA_EVENT_POLL = 17,        /**< krabka_input_poll_async:
                                        take_records */
    KRABKA_EVENT_GROUP = 18,       /**< a group member's shard event
                                        (krabka_group_join): group_kind,
                                        shard, token, deadline,
                                        take_leadership (ASSIGNED), error
                                        (REVOKED) */
    KRABKA_EVENT_GROUP_STOPPED = 19, /**< a group member stopped: its last
                                        event; error: OK after
                                        krabka_group_leave or
                                        krabka_group_destroy, else why
                                        (CLOSED: the client was destroyed) */
    KRABKA_EVENT_SET_TERM = 20     /**< a term event of one role of an
                                        elector set
                                        (krabka_elector_set_new): role, and
                                        what TERM carries: term_kind, term,
                                        token, holder, deadline,
                                        stop_reason, take_leadership */
} krabka_event_type_t;

/** Log levels (syslog numbers, as librdkafka). */
typedef enum krabka_log_level {
    KRABKA_LOG_ERROR = 3,
    KRABKA_LOG_WARNING = 4,
    KRABKA_LOG_INFO = 6,
    KRABKA_LOG_DEBUG = 7
} krabka_log_level_t;

/** One event taken from a queue: opaque, read with the krabka_event_*
 *  accessors, destroy with krabka_event_destroy. An event belongs to the
 *  caller from krabka_queue_poll on: it stays valid after the queue is
 *  destroyed. Accessors answer KRABKA_ERR_INVALID_HANDLE for a NULL,
 *  destroyed or foreign event, KRABKA_ERR_INVALID_ARG for a NULL out
 *  pointer, and the data accessors KRABKA_ERR_INVALID_ARG when the event's
 *  type does not carry that data (errstr names both types). Never block. */
typedef struct krabka_event krabka_event_t;

/** A new, empty queue. Destroy with krabka_queue_destroy. Never blocks. */
krabka_err_t krabka_queue_new(krabka_queue_t **out);
/** A file descriptor (the read end of a non-blocking pipe) that is
 *  readable exactly while events wait in the queue; poll it, then call
 *  krabka_queue_poll until it gives NULL (which also clears the fd).
 *  Reading bytes from it is allowed and harmless (an event loop such as
 *  libuv may do so), closing it is not: it belongs to the queue and
 *  krabka_queue_destroy closes it. Never blocks. */
krabka_err_t krabka_queue_fd(krabka_queue_t *queue, int *fd);
/** Takes the oldest event: *out is a new event (destroy it with
 *  krabka_event_destroy), or NULL when the queue is empty (which also
 *  clears the queue's fd). Never blocks. Thread-safe: each event goes to
 *  exactly one caller. */
krabka_err_t krabka_queue_poll(krabka_queue_t *queue, krabka_event_t **out);
/** Destroys a queue. Events still in it are dropped as krabka_event_destroy
 *  drops them (a leadership, watch, status or watch event they carry is
 *  destroyed); calls still pending that were to post to it complete without
 *  posting, and what they win is destroyed the same way (a leadership is
 *  released without resigning: standbys take over at its lease deadline).
 *  Events already taken stay valid. Never blocks. */
krabka_err_t krabka_queue_destroy(krabka_queue_t *queue);

/** Releases the event and whatever it still owns: a leadership, watch,
 *  status or watch event nobody took is destroyed (a leadership without
 *  resigning). */
krabka_err_t krabka_event_destroy(krabka_event_t *ev);
/** The event's type. */
krabka_err_t krabka_event_type(const krabka_event_t *ev,
                               krabka_event_type_t *out);
/** The tag given to the *_async call (or to krabka_conf_set_log_queue). */
krabka_err_t krabka_event_tag(const krabka_event_t *ev, uint64_t *out);
/** How the call ended: *code is KRABKA_OK or the error the blocking call
 *  would have returned, and its reason is copied into errstr (truncated to
 *  errstr_size - 1 bytes; "" on success; errstr may be NULL). ENDED: why the
 *  leadership ended (FENCED, LEASE_EXPIRED, NOT_LEADER, CLOSED). LOG: OK. */
krabka_err_t krabka_event_error(const krabka_event_t *ev, krabka_err_t *code,
                                char *errstr, size_t errstr_size);
/** ACQUIRE, TRY_ACQUIRE: the leadership won, which passes to the caller
 *  (destroy with krabka_leadership_destroy); NULL when the call failed, when
 *  TRY_ACQUIRE did not win, or when it was taken already (a leadership is
 *  taken once). TERM and SET_TERM (STARTED), GROUP (SHARD_ASSIGNED): a
 *  handle to the elector's, set's or group's leadership (see
 *  krabka_elector_new, krabka_elector_set_add, krabka_group_join). */
krabka_err_t krabka_event_take_leadership(krabka_event_t *ev,
                                          krabka_leadership_t **out,
                                          char *errstr, size_t errstr_size);
/** TRY_ACQUIRE: when the answer can change (epoch milliseconds) if the
 *  role was not won, else 0. */
krabka_err_t krabka_event_retry_at(const krabka_event_t *ev,
                                   int64_t *retry_at_ms, char *errstr,
                                   size_t errstr_size);
/** ENDED: the final state (krabka_event_error says why). */
krabka_err_t krabka_event_state(const krabka_event_t *ev,
                                krabka_leadership_state_t *out, char *errstr,
                                size_t errstr_size);
/** LOG: the level and one line without a newline (*line NUL-terminated,
 *  library-owned, valid until the event is destroyed). */
krabka_err_t krabka_event_log(const krabka_event_t *ev,
                              krabka_log_level_t *level, const char **line,
                              char *errstr, size_t errstr_size);
/** WATCH: the watch event, which passes to the caller (destroy with
 *  krabka_watch_event_destroy); NULL when the call failed (TIMEOUT, CLOSED)
 *  or when it was taken already. */
krabka_err_t krabka_event_take_watch_event(krabka_event_t *ev,
                                           krabka_watch_event_t **out,
                                           char *errstr, size_t errstr_size);
/** WATCH_OPEN: the new watch, which passes to the caller (destroy with
 *  krabka_watch_destroy); NULL when the call failed or it was taken
 *  already. */
krabka_err_t krabka_event_take_watch(krabka_event_t *ev, krabka_watch_t **out,
                                     char *errstr, size_t errstr_size);
/** DESCRIBE: the describe result, which passes to the caller (destroy with
 *  krabka_status_destroy); NULL when the call failed or it was taken
 *  already. */
krabka_err_t krabka_event_take_status(krabka_event_t *ev,
                                      krabka_status_t **out, char *errstr,
                                      size_t errstr_size);
/** PRODUCE: *count is the number of messages written (0 when the call
 *  failed) and where each landed is copied into out[0 .. min(cap, *count))
 *  (out may be NULL when cap is 0). */
krabka_err_t krabka_event_results(const krabka_event_t *ev,
                                  krabka_produce_result_t *out, size_t cap,
                                  size_t *count, char *errstr,
                                  size_t errstr_size);

/* The asynchronous forms. Each checks its arguments at once (an error is
 * returned here, errstr says why, and nothing is posted), copies what it
 * needs (messages, names, metadata) before it returns, then runs the same
 * code as the blocking call on the library's own threads and posts exactly
 * one event with tag to queue when that completes, with the same outcomes
 * and timeout semantics as the blocking call (krabka_event_error). A queue
 * destroyed first: the call completes without posting and whatever it won
 * is destroyed. Destroying the client (or the leadership) makes a pending
 * call complete with the error the blocking call gets then (CLOSED,
 * NOT_LEADER). None of them blocks. */

/** krabka_client_acquire: posts KRABKA_EVENT_ACQUIRE. timeout_ms as for
 *  krabka_client_acquire (KRABKA_TIMEOUT_DEFAULT: no limit). Destroying the
 *  client makes it post KRABKA_ERR_CLOSED. */
krabka_err_t krabka_client_acquire_async(krabka_client_t *client,
                                         const char *role, size_t role_len,
                                         const char *member,
                                         size_t member_len,
                                         int64_t timeout_ms,
                                         krabka_queue_t *queue, uint64_t tag,
                                         char *errstr, size_t errstr_size);
/** krabka_client_try_acquire: posts KRABKA_EVENT_TRY_ACQUIRE (a leadership,
 *  or none and retry_at). Uses the metadata set when it was called. */
krabka_err_t krabka_client_try_acquire_async(krabka_client_t *client,
                                             const char *role, size_t role_len,
                                             const char *member,
                                             size_t member_len,
                                             int64_t timeout_ms,
                                             krabka_queue_t *queue,
                                             uint64_t tag, char *errstr,
                                             size_t errstr_size);
/** krabka_client_describe: posts KRABKA_EVENT_DESCRIBE (take_status). */
krabka_err_t krabka_client_describe_async(krabka_client_t *client,
                                          const char *role, size_t role_len,
                                          int64_t timeout_ms,
                                          krabka_queue_t *queue, uint64_t tag,
                                          char *errstr, size_t errstr_size);
/** krabka_client_leave: posts KRABKA_EVENT_LEAVE. */
krabka_err_t krabka_client_leave_async(krabka_client_t *client,
                                       const char *role, size_t role_len,
                                       const char *member, size_t member_len,
                                       int64_t timeout_ms,
                                       krabka_queue_t *queue, uint64_t tag,
                                       char *errstr, size_t errstr_size);
/** krabka_client_watch: posts KRABKA_EVENT_WATCH_OPEN (take_watch). */
krabka_err_t krabka_client_watch_async(krabka_client_t *client,
                                       const char *role, size_t role_len,
                                       int flags, int64_t timeout_ms,
                                       krabka_queue_t *queue, uint64_t tag,
                                       char *errstr, size_t errstr_size);
/** krabka_leadership_produce: posts KRABKA_EVENT_PRODUCE (results). The
 *  messages (topic, key, value, headers) are copied before it returns. */
krabka_err_t krabka_leadership_produce_async(krabka_leadership_t *leadership,
                                             const krabka_message_t *messages,
                                             size_t count, int64_t timeout_ms,
                                             krabka_queue_t *queue,
                                             uint64_t tag, char *errstr,
                                             size_t errstr_size);
/** krabka_leadership_renew: posts KRABKA_EVENT_RENEW. */
krabka_err_t krabka_leadership_renew_async(krabka_leadership_t *leadership,
                                           int64_t timeout_ms,
                                           krabka_queue_t *queue, uint64_t tag,
                                           char *errstr, size_t errstr_size);
/** krabka_leadership_set_metadata: posts KRABKA_EVENT_SET_METADATA; over
 *  KRABKA_MAX_METADATA_BYTES is INVALID_ARG here. */
krabka_err_t krabka_leadership_set_metadata_async(
    krabka_leadership_t *leadership, const uint8_t *data, size_t len,
    int64_t timeout_ms, krabka_queue_t *queue, uint64_t tag, char *errstr,
    size_t errstr_size);
/** krabka_leadership_resign (successor NULL, length 0) or
 *  krabka_leadership_resign_to (a successor: a preference, see there):
 *  posts KRABKA_EVENT_RESIGN. */
krabka_err_t krabka_leadership_resign_async(krabka_leadership_t *leadership,
                                            const char *successor,
                                            size_t successor_len,
                                            int64_t timeout_ms,
                                            krabka_queue_t *queue,
                                            uint64_t tag, char *errstr,
                                            size_t errstr_size);
/** Posts exactly one KRABKA_EVENT_ENDED with tag to queue when the
 *  leadership leaves ACTIVE (at once if it already has; destroying the
 *  leadership ends it CLOSED). Never blocks. */
krabka_err_t krabka_leadership_ended_async(krabka_leadership_t *leadership,
                                           krabka_queue_t *queue,
                                           uint64_t tag);
/** krabka_leadership_confirm: posts KRABKA_EVENT_CONFIRM (confirmed). */
krabka_err_t krabka_leadership_confirm_async(krabka_leadership_t *leadership,
                                             int64_t timeout_ms,
                                             krabka_queue_t *queue,
                                             uint64_t tag, char *errstr,
                                             size_t errstr_size);
/** CONFIRM: *current = 1 when the coordinator's current token was the
 *  leadership's, else 0 (also when the call failed: krabka_event_error). */
krabka_err_t krabka_event_confirmed(const krabka_event_t *ev, int *current,
                                    char *errstr, size_t errstr_size);

/* ------------------------------------------------------------------------ */
/* Logs and statistics                                                       */
/* ------------------------------------------------------------------------ */

/** A log callback: level, and one line of text without a newline (valid
 *  during the call only; copy it to keep it), for example
 *  "krabka: leadership ended client=host-1 role=controller ... state=FENCED
 *  reason=...". */
typedef void (*krabka_log_cb)(void *opaque, krabka_log_level_t level,
                              const char *line);

/** Sets the log callback of clients made from conf (NULL: none). Threads:
 *  it is called from a library thread that does nothing else (one per
 *  client), never from inside another call of the library, in order, one
 *  line at a time; it may call the library (even krabka_client_destroy).
 *  If it blocks, lines queue up (at most 10000; older ones are then dropped
 *  and a line says how many). The level filter is the property
 *  krabka.log.level, default "warn": a host sees warnings and errors (a
 *  leadership FENCED or EXPIRED, renewals failing, topic settings that let
 *  it grow), info and debug lines only when it asks (krabka.debug=true:
 *  debug, with franz-go's own lines). Without a callback or queue, lines go
 *  to stderr. Secrets never appear in
 *  lines. Not safe concurrently with other calls on the same conf. */
krabka_err_t krabka_conf_set_log_cb(krabka_conf_t *conf, krabka_log_cb cb,
                                    void *opaque);
/** Sends the log lines of clients made from conf to queue as
 *  KRABKA_EVENT_LOG events carrying tag (to tell clients sharing a queue
 *  apart) instead: for hosts and bindings that must not be called on
 *  foreign threads; drain the queue from your main loop.
 *  queue NULL: no queue. The queue must outlive those clients (lines posted
 *  after its destroy are dropped). At most 10000 lines wait; older ones are
 *  then dropped and a line says how many. Not safe concurrently with other
 *  calls on the same conf. */
krabka_err_t krabka_conf_set_log_queue(krabka_conf_t *conf,
                                       krabka_queue_t *queue, uint64_t tag);

/** The client's statistics as one JSON object (schema: docs/STATISTICS.md;
 *  counters and gauges per client and per role). *json is NUL-terminated
 *  and *len its length without the NUL (len may be NULL); free it with
 *  krabka_free. Never blocks. */
krabka_err_t krabka_client_stats_json(krabka_client_t *client, char **json,
                                      size_t *len);
/** Frees memory the library allocated for the caller (krabka_free(NULL)
 *  does nothing). */
void krabka_free(void *ptr);

/* ------------------------------------------------------------------------ */
/* Describe results                                                          */
/* ------------------------------------------------------------------------ */

/** One member of the succession order. */
typedef struct krabka_roster_entry {
    uint32_t member_len;
    char member[KRABKA_NAME_BUF];
    int64_t offset;        /**< offset of its registration record */
    int64_t registered_at; /**< epoch milliseconds */
    int32_t rank;          /**< 0 = lease holder or first standby */
} krabka_roster_entry_t;

/** The member named by the last lease: *has_holder = 0 when there is no
 *  lease; otherwise the name is copied into the caller's buffer with a NUL
 *  and *len set to its byte length (KRABKA_NAME_BUF always suffices). */
krabka_err_t krabka_status_holder(const krabka_status_t *status,
                                  int *has_holder, char *buf, size_t buf_size,
                                  size_t *len);
/** The coordinator's current token for the role (NO_EPOCH if nobody ever
 *  took it). */
krabka_err_t krabka_status_token(const krabka_status_t *status,
                                 krabka_token_t *out);
/** *current = 1 when a lease exists and its token is the coordinator's
 *  current token. */
krabka_err_t krabka_status_current(const krabka_status_t *status,
                                   int *current);
/** The last lease (*has_lease = 0 when there is none). */
krabka_err_t krabka_status_lease(const krabka_status_t *status, int *has_lease,
                                 krabka_lease_t *out);
/** The role's partition of the coordination topic. */
krabka_err_t krabka_status_partition(const krabka_status_t *status,
                                     int32_t *out);
/** How many undecodable records the read skipped. */
krabka_err_t krabka_status_skipped(const krabka_status_t *status,
                                   int64_t *out);
/** How many registrations were removed by a tombstone (members that
 *  resigned, were pruned by a winner or left); they are not in the roster. */
krabka_err_t krabka_status_removed(const krabka_status_t *status,
                                   int64_t *out);
/** Number of registered members. */
krabka_err_t krabka_status_roster_count(const krabka_status_t *status,
                                        size_t *count);
/** Member index (0-based, succession order) copied into *out;
 *  KRABKA_ERR_INVALID_ARG when index >= count. */
krabka_err_t krabka_status_roster_entry(const krabka_status_t *status,
                                        size_t index,
                                        krabka_roster_entry_t *out);
/** Destroys a describe result. */
krabka_err_t krabka_status_destroy(krabka_status_t *status);

/* ------------------------------------------------------------------------ */
/* Watch events                                                              */
/* ------------------------------------------------------------------------ */

typedef enum krabka_watch_event_kind {
    /** the lease names another member, or carries another token, than
     *  before (the first event of a watch when a lease exists) */
    KRABKA_WATCH_HOLDER_CHANGED = 0,
    /** same member and token, later deadline (only with
     *  KRABKA_WATCH_RENEWALS) */
    KRABKA_WATCH_LEASE_RENEWED = 1,
    /** the roster (members or order) changed */
    KRABKA_WATCH_ROSTER_CHANGED = 2,
    /** the lease expired by the clock, or was cleared, and nobody took the
     *  role yet */
    KRABKA_WATCH_ROLE_FREE = 3
} krabka_watch_event_kind_t;

/* A krabka_watch_event_t (declared with the client) is one change of a
 * watched role: the same fields as Go's coord.Event, Python's WatchEvent
 * and Node's watch events. It is opaque: read it with the accessors below,
 * destroy it with krabka_watch_event_destroy. It owns its data (the roster
 * and metadata included) and stays valid after its watch is destroyed. The
 * accessors answer KRABKA_ERR_INVALID_HANDLE for a NULL, destroyed or
 * foreign event and KRABKA_ERR_INVALID_ARG for a NULL out pointer. Names
 * are copied into buf with a NUL and *len set to their byte length
 * (KRABKA_NAME_BUF always suffices; a smaller buffer is
 * KRABKA_ERR_BUFFER_TOO_SMALL with *len set; len may be NULL). Never
 * block. */

/** Releases a watch event. */
krabka_err_t krabka_watch_event_destroy(krabka_watch_event_t *ev);
/** What changed. */
krabka_err_t krabka_watch_event_kind(const krabka_watch_event_t *ev,
                                     krabka_watch_event_kind_t *out);
/** The watched role. */
krabka_err_t krabka_watch_event_role(const krabka_watch_event_t *ev,
                                     char *buf, size_t buf_size, size_t *len);
/** The member the current lease names: *has = 0 (and "" copied, *len 0)
 *  when there is no lease. */
krabka_err_t krabka_watch_event_holder(const krabka_watch_event_t *ev,
                                       int *has, char *buf, size_t buf_size,
                                       size_t *len);
/** The current lease's token (NO_EPOCH without a lease). */
krabka_err_t krabka_watch_event_token(const krabka_watch_event_t *ev,
                                      krabka_token_t *out);
/** HOLDER_CHANGED: the member the previous lease named (*has = 0 when
 *  there was none, and for the other kinds). */
krabka_err_t krabka_watch_event_prev_holder(const krabka_watch_event_t *ev,
                                            int *has, char *buf,
                                            size_t buf_size, size_t *len);
/** HOLDER_CHANGED: the previous lease's token (NO_EPOCH if none). */
krabka_err_t krabka_watch_event_prev_token(const krabka_watch_event_t *ev,
                                           krabka_token_t *out);
/** The current lease, copied into *out when *has = 1. */
krabka_err_t krabka_watch_event_lease(const krabka_watch_event_t *ev, int *has,
                                      krabka_lease_t *out);
/** Number of members in the roster after the change. */
krabka_err_t krabka_watch_event_roster_count(const krabka_watch_event_t *ev,
                                             size_t *count);
/** Roster member index (0-based, succession order) copied into *out;
 *  KRABKA_ERR_INVALID_ARG when index >= count. Roster entries of a watch
 *  event carry no metadata: describe reports it
 *  (krabka_status_roster_metadata). */
krabka_err_t krabka_watch_event_roster_entry(const krabka_watch_event_t *ev,
                                             size_t index,
                                             krabka_roster_entry_t *out);
/** The term's metadata with the current lease (see krabka_status_metadata
 *  for buf, buf_size and *len; *len 0: none). */
krabka_err_t krabka_watch_event_metadata(const krabka_watch_event_t *ev,
                                         uint8_t *buf, size_t buf_size,
                                         size_t *len);
/** Offset of the record after which the change was seen (-1: ROLE_FREE by
 *  the clock). */
krabka_err_t krabka_watch_event_offset(const krabka_watch_event_t *ev,
                                       int64_t *out);
/** When this client observed the change (epoch milliseconds). */
krabka_err_t krabka_watch_event_at(const krabka_watch_event_t *ev,
                                   int64_t *at_ms);

/* ------------------------------------------------------------------------ */
/* Watching a role                                                           */
/* ------------------------------------------------------------------------ */

/* A krabka_watch_t (declared with the client) is a subscription to the
 * changes of one role. It holds no epoch and registers nothing: it follows
 * the client's live view of the role's partition. */

/** krabka_client_watch flag: also deliver KRABKA_WATCH_LEASE_RENEWED. */
#define KRABKA_WATCH_RENEWALS 1

/** Starts watching role (flags: 0 or KRABKA_WATCH_RENEWALS). The first
 *  events describe the current state: a HOLDER_CHANGED from no holder when a
 *  lease exists (then a ROLE_FREE if it has expired), and a ROSTER_CHANGED
 *  when the roster is not empty. *out: destroy with krabka_watch_destroy.
 *  Blocks up to timeout_ms while the view catches up with the partition
 *  (KRABKA_TIMEOUT_DEFAULT: request.timeout.ms). */
krabka_err_t krabka_client_watch(krabka_client_t *client, const char *role,
                                 size_t role_len, int flags,
                                 int64_t timeout_ms, krabka_watch_t **out,
                                 char *errstr, size_t errstr_size);
/** The next event: *out is a new watch event (destroy with
 *  krabka_watch_event_destroy). KRABKA_ERR_TIMEOUT when no event came
 *  within timeout_ms (KRABKA_TIMEOUT_DEFAULT: no limit); KRABKA_ERR_CLOSED
 *  once the watch ended (its client was destroyed) and every event was
 *  taken; *out is NULL on any error. Events are buffered without bound: a
 *  slow reader never holds the library up. Blocks up to timeout_ms. */
krabka_err_t krabka_watch_next(krabka_watch_t *watch, int64_t timeout_ms,
                               krabka_watch_event_t **out, char *errstr,
                               size_t errstr_size);
/** A file descriptor (eventfd) that is readable exactly while events wait
 *  (or the watch has ended): poll it, then call krabka_watch_next with a
 *  short timeout until it answers KRABKA_ERR_TIMEOUT. Taking the last
 *  waiting event clears it. Owned by the watch: never close it;
 *  krabka_watch_destroy does. Never blocks. */
krabka_err_t krabka_watch_event_fd(krabka_watch_t *watch, int *fd);
/** krabka_watch_next without a waiting thread: posts exactly one
 *  KRABKA_EVENT_WATCH with tag to queue (OK with the watch event to take,
 *  TIMEOUT, or CLOSED). Any number may be in flight; each takes one event.
 *  Never blocks. */
krabka_err_t krabka_watch_next_async(krabka_watch_t *watch, int64_t timeout_ms,
                                     krabka_queue_t *queue, uint64_t tag);
/** Ends the watch and releases it (its fd is closed; pending
 *  krabka_watch_next calls answer CLOSED). Watch events already taken stay
 *  valid. Blocks briefly. */
krabka_err_t krabka_watch_destroy(krabka_watch_t *watch);

/* ------------------------------------------------------------------------ */
/* Record headers: metadata, named successor, verifier (docs/PROTOCOL.md    */
/* section 11; the headers of guarded writes are in krabka_message_t)        */
/* ------------------------------------------------------------------------ */

/** Most bytes of metadata (krabka.meta) of a term or of a member. */
#define KRABKA_MAX_METADATA_BYTES 4096

/** (The earlier way, kept unchanged: krabka_acquire_options_t passes
 *  metadata with each call instead.) The metadata this client writes when
 *  member acquires role from now on
 *  (krabka_client_acquire, _try_acquire and their _async forms): term_meta on every
 *  lease record of the term it wins (an address clients should use, say),
 *  member_meta on its registration (what a candidate advertises before it
 *  leads). NULL with length 0: none. Over KRABKA_MAX_METADATA_BYTES:
 *  INVALID_ARG, nothing stored. An acquire uses the metadata set when it
 *  was called (krabka_client_acquire_async included). Never blocks; writes
 *  nothing itself. */
krabka_err_t krabka_client_set_metadata(krabka_client_t *client,
                                        const char *role, size_t role_len,
                                        const char *member, size_t member_len,
                                        const uint8_t *term_meta,
                                        size_t term_meta_len,
                                        const uint8_t *member_meta,
                                        size_t member_meta_len, char *errstr,
                                        size_t errstr_size);

/** Per-call options of an acquire (librdkafka's rd_kafka_AdminOptions_t is
 *  the model; Go's AcquireOption): an opaque object the caller fills with
 *  setters and passes to krabka_client_acquire_opts,
 *  krabka_client_try_acquire_opts, their _async forms and
 *  krabka_elector_new_opts. Each of those copies what the options hold
 *  before it returns (the async forms and the elector included), so the
 *  caller may change, reuse or destroy the options right after; the
 *  client's metadata of krabka_client_set_metadata is not consulted by
 *  them. Ownership: the caller's, destroy with
 *  krabka_acquire_options_destroy. Thread-safety: the calls on one options
 *  object are serialised inside (safe from several threads), but a call
 *  that takes the options sees whichever setters finished before it. A
 *  NULL or destroyed options object is KRABKA_ERR_INVALID_HANDLE (errstr
 *  names krabka_acquire_options_t) wherever one is taken. */
typedef struct krabka_acquire_options krabka_acquire_options_t;

/** New options holding the defaults (no metadata). *out: destroy with
 *  krabka_acquire_options_destroy. Never blocks. */
krabka_err_t krabka_acquire_options_new(krabka_acquire_options_t **out);
/** Destroys options; calls that took them earlier keep their copy. Never
 *  blocks. */
krabka_err_t krabka_acquire_options_destroy(krabka_acquire_options_t *options);
/** The term's metadata (krabka.meta on every lease record of the term the
 *  acquire wins): data is copied (NULL with len 0: none). Over
 *  KRABKA_MAX_METADATA_BYTES, or NULL with a length: INVALID_ARG, errstr
 *  naming it, the options unchanged. Never blocks. */
krabka_err_t krabka_acquire_options_set_metadata(
    krabka_acquire_options_t *options, const uint8_t *data, size_t len,
    char *errstr, size_t errstr_size);
/** The member's metadata (krabka.meta on its registration: what a
 *  candidate advertises before it leads; a member already registered keeps
 *  the registration it has). As krabka_acquire_options_set_metadata. */
krabka_err_t krabka_acquire_options_set_member_metadata(
    krabka_acquire_options_t *options, const uint8_t *data, size_t len,
    char *errstr, size_t errstr_size);

/** krabka_client_acquire with per-call options (see
 *  krabka_acquire_options_t; NULL is INVALID_HANDLE). Otherwise the same
 *  call: blocks up to timeout_ms (KRABKA_TIMEOUT_DEFAULT: no limit); *out:
 *  destroy with krabka_leadership_destroy. Thread-safe. */
krabka_err_t krabka_client_acquire_opts(krabka_client_t *client,
                                        const char *role, size_t role_len,
                                        const char *member, size_t member_len,
                                        const krabka_acquire_options_t *options,
                                        int64_t timeout_ms,
                                        krabka_leadership_t **out,
                                        char *errstr, size_t errstr_size);
/** krabka_client_try_acquire with per-call options. Blocks for one pass,
 *  up to timeout_ms (KRABKA_TIMEOUT_DEFAULT: request.timeout.ms).
 *  Thread-safe. */
krabka_err_t krabka_client_try_acquire_opts(
    krabka_client_t *client, const char *role, size_t role_len,
    const char *member, size_t member_len,
    const krabka_acquire_options_t *options, int64_t timeout_ms,
    krabka_leadership_t **out, int64_t *retry_at_ms, char *errstr,
    size_t errstr_size);
/** krabka_client_acquire_opts: posts KRABKA_EVENT_ACQUIRE. The options are
 *  copied before it returns. Never blocks. */
krabka_err_t krabka_client_acquire_opts_async(
    krabka_client_t *client, const char *role, size_t role_len,
    const char *member, size_t member_len,
    const krabka_acquire_options_t *options, int64_t timeout_ms,
    krabka_queue_t *queue, uint64_t tag, char *errstr, size_t errstr_size);
/** krabka_client_try_acquire_opts: posts KRABKA_EVENT_TRY_ACQUIRE. The
 *  options are copied before it returns. Never blocks. */
krabka_err_t krabka_client_try_acquire_opts_async(
    krabka_client_t *client, const char *role, size_t role_len,
    const char *member, size_t member_len,
    const krabka_acquire_options_t *options, int64_t timeout_ms,
    krabka_queue_t *queue, uint64_t tag, char *errstr, size_t errstr_size);
/** Changes the term's metadata: a renewal whose lease record carries data
 *  (NULL with len 0: no metadata from now on). The lease and its metadata
 *  change in one record, so no reader sees the metadata with another term's
 *  lease. Errors as krabka_leadership_renew; over KRABKA_MAX_METADATA_BYTES:
 *  INVALID_ARG before anything is written. Blocks up to timeout_ms. */
krabka_err_t krabka_leadership_set_metadata(krabka_leadership_t *leadership,
                                            const uint8_t *data, size_t len,
                                            int64_t timeout_ms, char *errstr,
                                            size_t errstr_size);
/** The term's metadata as last written: copied into buf (at most buf_size
 *  bytes; KRABKA_MAX_METADATA_BYTES always suffices), *len set to its full
 *  length (0: none). KRABKA_ERR_INVALID_ARG when buf_size < *len (nothing
 *  copied, *len still set). Never blocks. */
krabka_err_t krabka_leadership_metadata(const krabka_leadership_t *leadership,
                                        uint8_t *buf, size_t buf_size,
                                        size_t *len);
/** krabka_leadership_resign naming the member to hand over to (header
 *  krabka.successor on the expired lease): if it is in the roster it
 *  challenges at once and every other standby one stagger later than its
 *  rank alone; a member that is not registered is ignored by readers.
 *  A preference, not a promise (docs/PROTOCOL.md 11.3): a member of
 *  another implementation (a registration without krabka.rejoin) ignores
 *  the header and challenges at its own rank, so when the successor is
 *  one, or one ranks ahead of it, another member may take the role (one
 *  mint wins: never two holders). Watch the role to learn who did.
 *  Blocks up to timeout_ms. */
krabka_err_t krabka_leadership_resign_to(krabka_leadership_t *leadership,
                                         const char *successor,
                                         size_t successor_len,
                                         int64_t timeout_ms, char *errstr,
                                         size_t errstr_size);

/** The term's metadata of a describe result (see
 *  krabka_leadership_metadata for buf, buf_size and *len; *len 0: none). */
krabka_err_t krabka_status_metadata(const krabka_status_t *status,
                                    uint8_t *buf, size_t buf_size, size_t *len);
/** The registration metadata of roster entry index (as
 *  krabka_status_metadata; INVALID_ARG when index >= count). */
krabka_err_t krabka_status_roster_metadata(const krabka_status_t *status,
                                           size_t index, uint8_t *buf,
                                           size_t buf_size, size_t *len);
/** A verifier of consumed guarded writes (docs/PROTOCOL.md 11.5): it keeps
 *  the highest token seen per scope (a role, or what the consumer groups
 *  writers by). Safe for concurrent use. Destroy with
 *  krabka_verifier_destroy. */
typedef struct krabka_verifier krabka_verifier_t;

/** Verdicts of krabka_verifier_judge. */
typedef enum krabka_verdict {
    /** krabka.token names the record batch's producer id and epoch, not
     *  older than the highest seen */
    KRABKA_VERDICT_OK = 0,
    /** the batch's token is older than the highest seen for the scope */
    KRABKA_VERDICT_STALE = 1,
    /** krabka.token is not a token, or not the batch's */
    KRABKA_VERDICT_MISMATCH = 2,
    /** no krabka.token header (the batch still counts for staleness) */
    KRABKA_VERDICT_UNSTAMPED = 3
} krabka_verdict_t;

krabka_err_t krabka_verifier_new(krabka_verifier_t **out);
/** Judges one consumed record of scope (UTF-8, scope_len bytes): header is
 *  its krabka.token value (NULL: the record has none), batch the producer
 *  id and epoch of its record batch. Checked in order: MISMATCH, STALE,
 *  UNSTAMPED, OK; a record neither MISMATCH nor STALE raises the scope's
 *  highest token. Never blocks. */
krabka_err_t krabka_verifier_judge(krabka_verifier_t *verifier,
                                   const char *scope, size_t scope_len,
                                   const uint8_t *header, size_t header_len,
                                   krabka_token_t batch, krabka_verdict_t *out);
/** The highest token seen for scope (*has = 0: none yet). */
krabka_err_t krabka_verifier_highest(krabka_verifier_t *verifier,
                                     const char *scope, size_t scope_len,
                                     int *has, krabka_token_t *out);
krabka_err_t krabka_verifier_destroy(krabka_verifier_t *verifier);

/* ------------------------------------------------------------------------ */
/* The elector (docs/ELECTOR.md): campaign, renew, stop, campaign again      */
/* ------------------------------------------------------------------------ */

/** An elector runs the election loop of one member for one role on the
 *  library's threads (Go's coord.Elector) and posts its events to a queue
 *  as KRABKA_EVENT_TERM events. Destroy with krabka_elector_destroy. */
typedef struct krabka_elector krabka_elector_t;

/** What a KRABKA_EVENT_TERM reports (Go's TermEventKind, same numbers). */
typedef enum krabka_term_event_kind {
    KRABKA_TERM_STARTED = 1,   /**< the member won the role: a term begins */
    KRABKA_TERM_AT_RISK = 2,   /**< the term's lease is at risk */
    KRABKA_TERM_RECOVERED = 3, /**< a renewal succeeded after AT_RISK */
    KRABKA_TERM_STOPPED = 4,   /**< the term ended (stop_reason, error);
                                    exactly one follows every STARTED */
    KRABKA_TERM_NEW_LEADER = 5, /**< the log shows another holder or token
                                    (anyone's term, this member's too) */
    KRABKA_TERM_SUSPENDED = 6, /**< krabka.elector.ride.outage only: no
                                    broker answers and the stop margin came:
                                    the term is kept (same token, renewals
                                    go on) but the host stops dispatching
                                    until RECOVERED; STOPPED (FENCED) follows
                                    instead if another member minted */
    KRABKA_TERM_ELECTOR_STOPPED = 7 /**< the election loop ended; the last
                                    event. krabka_event_error: OK when
                                    krabka_elector_destroy ended it, else
                                    why (CLOSED: the client was destroyed;
                                    the lost term's error with
                                    KRABKA_ELECT_NO_RECAMPAIGN; a refusal
                                    for good such as AUTHORIZATION) */
} krabka_term_event_kind_t;

/** Why a term stopped (Go's StopReason, same numbers). */
typedef enum krabka_stop_reason {
    KRABKA_STOP_NONE = 0,        /**< not a STOPPED event */
    KRABKA_STOP_FENCED = 1,      /**< the cluster superseded the token */
    KRABKA_STOP_EXPIRED = 2,     /**< renewals failed until the deadline */
    KRABKA_STOP_RESIGNED = 3,    /**< the elector resigned (destroy,
                                      set_eligible off) */
    KRABKA_STOP_CLOSED = 4,      /**< closed without resigning (the client
                                      destroyed, the leadership destroyed) */
    KRABKA_STOP_LOST_AT_RISK = 5 /**< at risk until the stop margin: ended
                                      before the deadline */
} krabka_stop_reason_t;

/** Where an elector's loop is (krabka_elector_state; Go's ElectorState,
 *  same numbers). */
typedef enum krabka_elector_state {
    KRABKA_ELECTOR_NOT_STARTED = 0, /**< never reported here (the loop runs
                                         from krabka_elector_new on) */
    KRABKA_ELECTOR_CAMPAIGNING = 1, /**< between terms: campaigning,
                                         standing by or withdrawn */
    KRABKA_ELECTOR_HOLDING = 2,     /**< a term runs, its lease renewed on
                                         time */
    KRABKA_ELECTOR_AT_RISK = 3,     /**< a term runs with its lease at risk */
    KRABKA_ELECTOR_SUSPENDED = 4,   /**< a term rides out an outage
                                         (KRABKA_TERM_SUSPENDED): do not
                                         dispatch */
    KRABKA_ELECTOR_STOPPED = 5      /**< the loop ended
                                         (KRABKA_TERM_ELECTOR_STOPPED says
                                         why) */
} krabka_elector_state_t;

/** Do not campaign again after a lost term (the loop ends after the first
 *  STOPPED; Go's ElectRecampaign(false)). */
#define KRABKA_ELECT_NO_RECAMPAIGN 1
/** Start withdrawn (Go's ElectEligible(false)): krabka_elector_set_eligible
 *  turns the candidacy on. */
#define KRABKA_ELECT_INELIGIBLE 2

/** Starts the election loop of member (member_len bytes) for role
 *  (role_len bytes) on client; every term event is posted to queue with tag
 *  (KRABKA_EVENT_TERM). The client's metadata for role and member
 *  (krabka_client_set_metadata, as set now) goes with every acquire.
 *  flags: 0 or KRABKA_ELECT_* or'ed; an unknown bit is INVALID_ARG.
 *  Ownership: the leadership of a STARTED event stays the elector's (the
 *  elector renews it, resigns it, closes it); krabka_event_take_leadership
 *  hands out a handle to it for guarded writes, valid until the caller
 *  destroys it, and its calls fail (NOT_LEADER, CLOSED) once the term is
 *  over. Destroying a taken handle does not end the term; destroy it after
 *  the term's STOPPED. Release: the elector campaigns again after a
 *  STOPPED only once that event was destroyed (krabka_event_destroy, or
 *  with its queue), so the host never sees a STARTED before it dealt with
 *  the previous STOPPED. A queue destroyed before the elector: later
 *  events are dropped (a dropped STOPPED releases its term). Returns once
 *  the loop runs (microseconds); never waits on the cluster. */
krabka_err_t krabka_elector_new(krabka_client_t *client, const char *role,
                                size_t role_len, const char *member,
                                size_t member_len, int flags,
                                krabka_queue_t *queue, uint64_t tag,
                                krabka_elector_t **out, char *errstr,
                                size_t errstr_size);
/** krabka_elector_new with per-call acquire options (see
 *  krabka_acquire_options_t; NULL is INVALID_HANDLE): they go with every
 *  acquire of the loop, copied before it returns; the client's metadata
 *  (krabka_client_set_metadata) is not consulted. Otherwise the same call:
 *  returns once the loop runs; never waits on the cluster. */
krabka_err_t krabka_elector_new_opts(krabka_client_t *client,
                                     const char *role, size_t role_len,
                                     const char *member, size_t member_len,
                                     const krabka_acquire_options_t *options,
                                     int flags, krabka_queue_t *queue,
                                     uint64_t tag, krabka_elector_t **out,
                                     char *errstr, size_t errstr_size);
/** Withdraws (eligible 0) or restores (1) the candidacy: a holder resigns
 *  (its term STOPPED, RESIGNED), a standby leaves the roster; restored, the
 *  member registers again at the tail of the roster. Returns once that was
 *  written (or failed: errstr says why) within timeout_ms
 *  (KRABKA_TIMEOUT_DEFAULT: request.timeout.ms). */
krabka_err_t krabka_elector_set_eligible(krabka_elector_t *elector,
                                         int eligible, int64_t timeout_ms,
                                         char *errstr, size_t errstr_size);
/** *healthy 1 while campaigning, standing by, withdrawn or holding the role
 *  with its lease renewed on time; 0 (reason copied, truncated, into
 *  reason; reason may be NULL) while the held lease is at risk, while a
 *  term is suspended and after the loop ended. The reason is for people:
 *  krabka_elector_state gives the state as a code. Never blocks. */
krabka_err_t krabka_elector_healthy(krabka_elector_t *elector, int *healthy,
                                    char *reason, size_t reason_size);
/** *out is where the loop is now (a snapshot: the TERM events say when it
 *  changes; KRABKA_ELECTOR_STOPPED once the loop ended, whose
 *  KRABKA_TERM_ELECTOR_STOPPED event says why). Never blocks; thread-safe.
 *  INVALID_HANDLE for a NULL or destroyed elector, INVALID_ARG for a NULL
 *  out. */
krabka_err_t krabka_elector_state(krabka_elector_t *elector,
                                  krabka_elector_state_t *out);
/** Ends the loop: a held term is resigned (its STOPPED, RESIGNED, is still
 *  posted), and waits until the loop ended. Events still in the queue stay
 *  there and are destroyed with it (or by the host). Blocks. */
krabka_err_t krabka_elector_destroy(krabka_elector_t *elector);

/** TERM, SET_TERM: the kind. */
krabka_err_t krabka_event_term_kind(const krabka_event_t *ev,
                                    krabka_term_event_kind_t *out,
                                    char *errstr, size_t errstr_size);
/** TERM, SET_TERM: the term number (1, 2, ... per elector, and per role
 *  of a set; the STARTED, AT_RISK, RECOVERED and STOPPED of one term share
 *  it; 0 on NEW_LEADER). */
krabka_err_t krabka_event_term(const krabka_event_t *ev, uint64_t *out,
                               char *errstr, size_t errstr_size);
/** TERM, SET_TERM: the term's token (NEW_LEADER: the new holder's).
 *  GROUP: the shard's term's token. */
krabka_err_t krabka_event_token(const krabka_event_t *ev, krabka_token_t *out,
                                char *errstr, size_t errstr_size);
/** TERM, SET_TERM: the holder (this member on term events, the new holder
 *  on NEW_LEADER), copied with a NUL; *len its byte length (KRABKA_NAME_BUF
 *  suffices; a smaller buffer: KRABKA_ERR_BUFFER_TOO_SMALL with *len set;
 *  len may be NULL). */
krabka_err_t krabka_event_holder(const krabka_event_t *ev, char *buf,
                                 size_t buf_size, size_t *len, char *errstr,
                                 size_t errstr_size);
/** TERM, SET_TERM, LEASE, GROUP: the lease deadline (epoch ms; 0 when
 *  unknown). */
krabka_err_t krabka_event_deadline(const krabka_event_t *ev,
                                   int64_t *deadline_ms, char *errstr,
                                   size_t errstr_size);
/** TERM, SET_TERM: why the term stopped (KRABKA_STOP_NONE unless STOPPED;
 *  the error is krabka_event_error's). */
krabka_err_t krabka_event_stop_reason(const krabka_event_t *ev,
                                      krabka_stop_reason_t *out, char *errstr,
                                      size_t errstr_size);

/** What a KRABKA_EVENT_LEASE reports (Go's LeadershipEventKind). */
typedef enum krabka_lease_event_kind {
    KRABKA_LEASE_AT_RISK = 1,   /**< the deadline is within
                                     krabka.lease.risk.margin.ms and no
                                     renewal succeeded since it fell due */
    KRABKA_LEASE_RECOVERED = 2, /**< a renewal succeeded after AT_RISK */
    KRABKA_LEASE_ENDED = 3      /**< the leadership ended (the last event;
                                     krabka_event_error says why) */
} krabka_lease_event_kind_t;

/** Subscribes to the lease events of a leadership: each is posted to queue
 *  with tag as a KRABKA_EVENT_LEASE (AT_RISK and RECOVERED as they happen,
 *  ENDED last; a subscription made while at risk starts with AT_RISK, one
 *  made after the end gets ENDED only). Nothing is posted after ENDED.
 *  Never blocks. */
krabka_err_t krabka_leadership_events_async(krabka_leadership_t *leadership,
                                            krabka_queue_t *queue,
                                            uint64_t tag, char *errstr,
                                            size_t errstr_size);
/** LEASE: the kind (ENDED: krabka_event_state gives the final state). */
krabka_err_t krabka_event_lease_kind(const krabka_event_t *ev,
                                     krabka_lease_event_kind_t *out,
                                     char *errstr, size_t errstr_size);

/* ------------------------------------------------------------------------ */
/* Pipelines: consumed offsets committed with the guarded write              */
/* ------------------------------------------------------------------------ */

/* A leader that turns input records (requests, desired state) into commands
 * reads its input under the term and commits what it consumed in the same
 * transaction as the commands it dispatched (AddOffsetsToTxn +
 * TxnOffsetCommit under the role's producer epoch, which is the token). A
 * deposed leader's offsets are refused by the broker with its writes
 * (KRABKA_ERR_FENCED); a successor's input starts exactly after the last
 * request whose commands were committed. The offsets are committed for the
 * role's pipeline group (krabka_client_pipeline_group), without group
 * membership. See docs/PIPELINES.md for the guarantee and what it does not
 * cover (side effects outside Kafka). */

/** Input partitions read under a leadership (opaque; destroy with
 *  krabka_input_destroy). */
typedef struct krabka_input krabka_input_t;
/** The records one poll returned (opaque; read with krabka_records_count
 *  and krabka_records_get, destroy with krabka_records_destroy). */
typedef struct krabka_records krabka_records_t;

/** A position in an input partition: offset is the next offset to read
 *  (the last consumed + 1), as Kafka commits it. topic: topic_len bytes of
 *  UTF-8 (1 to KRABKA_NAME_MAX), NUL-terminated when the library writes
 *  it; when the caller fills it, the library reads topic_len bytes. */
typedef struct krabka_offset {
    uint32_t topic_len;
    char topic[KRABKA_NAME_BUF];
    int32_t partition;
    int64_t offset;
} krabka_offset_t;

/** One input record, as krabka_records_get copies it out. The pointers
 *  point into the records object (library-owned) and stay valid until
 *  krabka_records_destroy. topic is NUL-terminated; key and value NULL:
 *  a null key or value (an empty one is a non-NULL pointer with length 0);
 *  headers: header_count record headers (keys NUL-terminated). */
typedef struct krabka_input_record {
    const char *topic;
    int32_t partition;
    int64_t offset;
    const uint8_t *key;
    size_t key_len;
    const uint8_t *value;
    size_t value_len;
    const krabka_header_t *headers;
    size_t header_count;
} krabka_input_record_t;

/** The consumer group id whose offsets the pipelines of role are committed
 *  under (derived from the role and the client's coordination topic),
 *  copied with a NUL into buf; *len its byte length (len may be NULL).
 *  KRABKA_NAME_BUF does not always suffice: a smaller buffer than needed is
 *  KRABKA_ERR_BUFFER_TOO_SMALL with *len set. Never blocks. */
krabka_err_t krabka_client_pipeline_group(krabka_client_t *client,
                                          const char *role, size_t role_len,
                                          char *buf, size_t buf_size,
                                          size_t *len, char *errstr,
                                          size_t errstr_size);

/** Starts reading topics (topic_count NUL-terminated UTF-8 names, each 1 to
 *  KRABKA_NAME_MAX bytes; every partition of each) read_committed, from
 *  the offsets committed for the role's pipeline group (a partition
 *  without one starts at its earliest offset). *out: a new input (destroy
 *  with krabka_input_destroy before or after the leadership). A NULL
 *  array or name, an empty, over-long or invalid UTF-8 name:
 *  KRABKA_ERR_INVALID_ARG, errstr naming topics[i]; a topic that does not
 *  exist: KRABKA_ERR_UNKNOWN_TOPIC_OR_PARTITION naming it. Works on the
 *  leadership of an elector's term too (krabka_event_take_leadership).
 *  Blocks up to timeout_ms (KRABKA_TIMEOUT_DEFAULT: request.timeout.ms)
 *  while it fetches the committed offsets. */
krabka_err_t krabka_leadership_consume(krabka_leadership_t *leadership,
                                       const char **topics,
                                       size_t topic_count, int64_t timeout_ms,
                                       krabka_input_t **out, char *errstr,
                                       size_t errstr_size);
/** krabka_leadership_consume: posts KRABKA_EVENT_CONSUME (take_input). The
 *  topic names are copied before it returns. */
krabka_err_t krabka_leadership_consume_async(krabka_leadership_t *leadership,
                                             const char **topics,
                                             size_t topic_count,
                                             int64_t timeout_ms,
                                             krabka_queue_t *queue,
                                             uint64_t tag, char *errstr,
                                             size_t errstr_size);
/** CONSUME: the new input, which passes to the caller (destroy with
 *  krabka_input_destroy); NULL when the call failed or it was taken
 *  already. */
krabka_err_t krabka_event_take_input(krabka_event_t *ev, krabka_input_t **out,
                                     char *errstr, size_t errstr_size);

/** Reads up to max (1 to 1000000) records: blocks until at least one
 *  committed record arrives, timeout_ms passes (KRABKA_ERR_TIMEOUT; no
 *  records; KRABKA_TIMEOUT_DEFAULT: request.timeout.ms) or the leadership
 *  ends (its error: FENCED, LEASE_EXPIRED, NOT_LEADER, CLOSED). Records of
 *  one partition come in offset order; the input's position advances past
 *  them. *out: the records (destroy with krabka_records_destroy). One poll
 *  at a time per input. */
krabka_err_t krabka_input_poll(krabka_input_t *input, size_t max,
                               int64_t timeout_ms, krabka_records_t **out,
                               char *errstr, size_t errstr_size);
/** krabka_input_poll: posts KRABKA_EVENT_POLL (take_records). */
krabka_err_t krabka_input_poll_async(krabka_input_t *input, size_t max,
                                     int64_t timeout_ms,
                                     krabka_queue_t *queue, uint64_t tag,
                                     char *errstr, size_t errstr_size);
/** POLL: the records, which pass to the caller (destroy with
 *  krabka_records_destroy); NULL when the call failed or they were taken
 *  already. */
krabka_err_t krabka_event_take_records(krabka_event_t *ev,
                                       krabka_records_t **out, char *errstr,
                                       size_t errstr_size);
/** The number of records. Never blocks. */
krabka_err_t krabka_records_count(const krabka_records_t *records,
                                  size_t *count);
/** Record index (0 to count - 1; beyond: KRABKA_ERR_INVALID_ARG) copied
 *  into *out; its pointers stay valid until krabka_records_destroy. Never
 *  blocks. */
krabka_err_t krabka_records_get(const krabka_records_t *records, size_t index,
                                krabka_input_record_t *out);
/** Frees the records (and the memory krabka_records_get pointed into). */
krabka_err_t krabka_records_destroy(krabka_records_t *records);

/** Where the input reads next, one entry per partition read:
 *  out[0 .. min(cap, *count)) (out may be NULL when cap is 0); *count is
 *  the number of partitions. Pass these (or the entries of the partitions a
 *  guarded write handled) to krabka_leadership_produce_offsets. Never
 *  blocks. */
krabka_err_t krabka_input_position(const krabka_input_t *input,
                                   krabka_offset_t *out, size_t cap,
                                   size_t *count);
/** The offsets committed for the role's pipeline group when the input
 *  started, per partition read (as krabka_input_position). Never blocks. */
krabka_err_t krabka_input_committed(const krabka_input_t *input,
                                    krabka_offset_t *out, size_t cap,
                                    size_t *count);
/** Stops reading and frees the input (a poll in flight on another thread
 *  ends with an error; the offsets of what it read can still be committed
 *  by krabka_leadership_produce_offsets while the leadership lasts). The
 *  leadership's end closes its inputs too. Never blocks on the cluster. */
krabka_err_t krabka_input_destroy(krabka_input_t *input);

/** krabka_leadership_produce carrying consumed offsets: the count messages
 *  and the offset_count offsets (each the next offset to read of a
 *  partition this leadership's input read) commit in one transaction, or
 *  neither does. Concurrent calls share the transaction (group commit);
 *  their offsets merge per partition, the highest wins. The broker refuses
 *  the offsets of a deposed leader with its writes (KRABKA_ERR_FENCED).
 *  Before anything is written: a NULL offsets array with a count, a
 *  topic_len of 0 or over KRABKA_NAME_MAX, a topic that is not UTF-8, a
 *  negative partition or offset (KRABKA_ERR_INVALID_ARG, errstr naming
 *  offsets[i]), an offset for a partition no input of this leadership
 *  read or one that goes backwards (INVALID_ARG naming it). count may be 0
 *  (offsets alone); offset_count may be 0 (a plain guarded write).
 *  results as for krabka_leadership_produce. Blocks up to timeout_ms. */
krabka_err_t krabka_leadership_produce_offsets(
    krabka_leadership_t *leadership, const krabka_offset_t *offsets,
    size_t offset_count, const krabka_message_t *messages, size_t count,
    int64_t timeout_ms, krabka_produce_result_t *results, char *errstr,
    size_t errstr_size);
/** krabka_leadership_produce_offsets: posts KRABKA_EVENT_PRODUCE
 *  (results). Offsets and messages are copied before it returns. */
krabka_err_t krabka_leadership_produce_offsets_async(
    krabka_leadership_t *leadership, const krabka_offset_t *offsets,
    size_t offset_count, const krabka_message_t *messages, size_t count,
    int64_t timeout_ms, krabka_queue_t *queue, uint64_t tag, char *errstr,
    size_t errstr_size);
/* Role groups and semaphores (docs/GROUPS.md)                              */
/* ------------------------------------------------------------------------ */

/** A member of a role group: N shards, each an ordinary role, spread over
 *  the group's members by weight (Go's coord.Group). The member campaigns
 *  for, holds, renews and hands over the shards the group's plan gives it,
 *  on the library's threads, and posts each change to a queue as a
 *  KRABKA_EVENT_GROUP. Destroy with krabka_group_destroy. */
typedef struct krabka_group krabka_group_t;

/** What a KRABKA_EVENT_GROUP reports (Go's GroupEventKind, same numbers). */
typedef enum krabka_group_event_kind {
    KRABKA_SHARD_ASSIGNED = 1, /**< the member holds the shard: a term
                                    begins (take_leadership: its
                                    leadership, for guarded writes) */
    KRABKA_SHARD_REVOKED = 2   /**< the member's term of the shard ended
                                    (handed over by the plan: NOT_LEADER;
                                    or FENCED, LEASE_EXPIRED, CLOSED):
                                    stop the shard's work; writes under its
                                    leadership fail from now on */
} krabka_group_event_kind_t;

/** The largest shard (or slot) count of a group (Go's MaxGroupShards). */
#define KRABKA_GROUP_MAX_SHARDS 4096
/** Join ineligible (Go's WithEligible(false)): a member that is assigned no
 *  shard until krabka_group_set_eligible turns it on. */
#define KRABKA_GROUP_INELIGIBLE 1

/** Joins member (member_len bytes) to group (group_len bytes, valid UTF-8)
 *  of shards shards (1 to KRABKA_GROUP_MAX_SHARDS; every member of a group
 *  names the same count) with weight (at least 1: the member's share of
 *  the shards is its weight over the sum of the eligible members'); every
 *  shard event is posted to queue with tag (KRABKA_EVENT_GROUP), and
 *  KRABKA_EVENT_GROUP_STOPPED last. flags: 0 or KRABKA_GROUP_INELIGIBLE; an
 *  unknown bit is INVALID_ARG. Errors name the argument: INVALID_HANDLE
 *  for a NULL or stale client or queue; INVALID_ARG for a NULL group or
 *  member, invalid UTF-8, a shard count out of range, a weight <= 0, a
 *  NULL out; ROLE_TOO_LONG when group is too long for its shards' role
 *  names ("<group>/shard/<k>", with krabka.role.prefix).
 *  Ownership (the elector's rule): the leadership of a SHARD_ASSIGNED
 *  event stays the group's (it renews it, hands it over, resigns it);
 *  krabka_event_take_leadership hands out a handle to it for guarded
 *  writes, valid until the caller destroys it, whose calls fail (FENCED,
 *  NOT_LEADER, CLOSED) once the shard was revoked. Destroying a taken
 *  handle does not give up the shard. Returns at once; never waits on the
 *  cluster. */
krabka_err_t krabka_group_join(krabka_client_t *client, const char *group,
                               size_t group_len, int32_t shards,
                               const char *member, size_t member_len,
                               int32_t weight, int flags,
                               krabka_queue_t *queue, uint64_t tag,
                               krabka_group_t **out, char *errstr,
                               size_t errstr_size);
/** Joins member to the semaphore name of slots slots (Go's
 *  coord.NewSemaphore): a group whose shards are slots
 *  ("<name>/slot/<k>") and whose members hold at most one slot each, so
 *  at most slots members hold one at a time, each under its own token.
 *  Events, errors and ownership as krabka_group_join's (a slot is a
 *  shard). */
krabka_err_t krabka_semaphore_join(krabka_client_t *client, const char *name,
                                   size_t name_len, int32_t slots,
                                   const char *member, size_t member_len,
                                   int32_t weight, int flags,
                                   krabka_queue_t *queue, uint64_t tag,
                                   krabka_group_t **out, char *errstr,
                                   size_t errstr_size);
/** Makes the member eligible for shards (1) or not (0): the next plan
 *  hands its shards over (REVOKED) or gives it its share. Never blocks. */
krabka_err_t krabka_group_set_eligible(krabka_group_t *group, int eligible,
                                       char *errstr, size_t errstr_size);
/** Changes the member's weight (at least 1, else INVALID_ARG naming it).
 *  Never blocks. */
krabka_err_t krabka_group_set_weight(krabka_group_t *group, int32_t weight,
                                     char *errstr, size_t errstr_size);
/** The shards the member holds now, ascending: the first cap are copied
 *  into shards (may be NULL when cap is 0), *count is how many it holds.
 *  Never blocks. */
krabka_err_t krabka_group_held(krabka_group_t *group, int32_t *shards,
                               size_t cap, size_t *count, char *errstr,
                               size_t errstr_size);
/** The role of shard (0 <= shard < the group's count, else INVALID_ARG),
 *  copied with a NUL into buf; *len its byte length (KRABKA_NAME_BUF
 *  suffices; a smaller buffer: KRABKA_ERR_BUFFER_TOO_SMALL; len may be
 *  NULL). Never blocks. */
krabka_err_t krabka_group_shard_role(krabka_group_t *group, int32_t shard,
                                     char *buf, size_t buf_size, size_t *len,
                                     char *errstr, size_t errstr_size);
/** Leaves the group: the member turns ineligible so that the plan hands
 *  its shards over to their new owners (REVOKED each), waits until it
 *  holds none for at most a third of krabka.lease.ms (not at all when no
 *  other live eligible member can take them), then resigns what it still
 *  holds, all at once, and leaves the membership: the time it takes does
 *  not grow with the shards held. GROUP_STOPPED follows the last REVOKED.
 *  TIMEOUT when timeout_ms (KRABKA_TIMEOUT_DEFAULT: request.timeout.ms)
 *  passed first (the rest is done anyway). Blocks. Destroy the handle
 *  afterwards. */
krabka_err_t krabka_group_leave(krabka_group_t *group, int64_t timeout_ms,
                                char *errstr, size_t errstr_size);
/** Ends the member: without krabka_group_leave before, what it holds is
 *  resigned at once (no handover: the plan moves the shards afterwards);
 *  waits until its last event was posted. Blocks. */
krabka_err_t krabka_group_destroy(krabka_group_t *group);

/** GROUP: the kind. */
krabka_err_t krabka_event_group_kind(const krabka_event_t *ev,
                                     krabka_group_event_kind_t *out,
                                     char *errstr, size_t errstr_size);
/** GROUP: the shard (or slot) index. krabka_event_token gives the term's
 *  token, krabka_event_deadline its lease deadline (epoch ms) when it
 *  began. */
krabka_err_t krabka_event_shard(const krabka_event_t *ev, int32_t *out,
                                char *errstr, size_t errstr_size);

/* ------------------------------------------------------------------------ */
/* Elector sets: one member's election loops over many roles                */
/* (docs/MANY-ROLES.md)                                                      */
/* ------------------------------------------------------------------------ */

/** An elector set runs one member's election loops over a set of roles
 *  (Go's coord.ElectorSet: an elector per role, each with the guarantees of
 *  krabka_elector_new) and posts every role's term events to one queue as
 *  KRABKA_EVENT_SET_TERM events, each carrying its role
 *  (krabka_event_role). Roles are added and removed while it runs. Destroy
 *  with krabka_elector_set_destroy. */
typedef struct krabka_elector_set krabka_elector_set_t;

/** A new, empty elector set of member (member_len bytes) on client; each
 *  role's term events are posted to queue with tag (KRABKA_EVENT_SET_TERM).
 *  flags: 0 or KRABKA_ELECT_NO_RECAMPAIGN (for every role: its loop ends
 *  after its first lost term); any other bit is INVALID_ARG (the set has
 *  no per-role eligibility: add and remove roles instead). Errors name the
 *  argument: INVALID_HANDLE for a NULL or stale client or queue;
 *  INVALID_ARG for a NULL or invalid member or a NULL out. Nothing touches
 *  the network until krabka_elector_set_add; never blocks. */
krabka_err_t krabka_elector_set_new(krabka_client_t *client,
                                    const char *member, size_t member_len,
                                    int flags, krabka_queue_t *queue,
                                    uint64_t tag, krabka_elector_set_t **out,
                                    char *errstr, size_t errstr_size);
/** Adds role (role_len bytes) to the set and starts its election loop:
 *  it campaigns at once with the client's metadata for role and member
 *  (krabka_client_set_metadata, as set now). Errors name the role:
 *  INVALID_ARG for a role already in the set (or still being removed), a
 *  role the client holds outside the set, a NULL or invalid role;
 *  ROLE_TOO_LONG for a role over KRABKA_NAME_MAX bytes (or too long with
 *  krabka.role.prefix); CLOSED once the client was destroyed. Ownership and
 *  release as krabka_elector_new's, per role: the leadership of a STARTED
 *  stays the set's, and a role campaigns again after a STOPPED only once
 *  that event was destroyed. Returns once the loop runs; never waits on
 *  the cluster. */
krabka_err_t krabka_elector_set_add(krabka_elector_set_t *set,
                                    const char *role, size_t role_len,
                                    char *errstr, size_t errstr_size);
/** Removes role from the set: its loop ends (a held term is resigned, its
 *  STOPPED, RESIGNED, posted; a standby leaves the race). Waits until the
 *  role's last event (ELECTOR_STOPPED, error OK) was posted to the queue,
 *  after its other events, or timeout_ms (KRABKA_TIMEOUT_DEFAULT:
 *  request.timeout.ms) passed (TIMEOUT: the removal finishes in the
 *  background and the role cannot be added again until it did).
 *  INVALID_ARG naming the role when it is not in the set. Blocks. */
krabka_err_t krabka_elector_set_remove(krabka_elector_set_t *set,
                                       const char *role, size_t role_len,
                                       int64_t timeout_ms, char *errstr,
                                       size_t errstr_size);
/** *out is where role's loop is now (as krabka_elector_state);
 *  INVALID_ARG naming the role when it is not in the set (never added,
 *  removed, or its loop ended by itself). Never blocks. */
krabka_err_t krabka_elector_set_state(krabka_elector_set_t *set,
                                      const char *role, size_t role_len,
                                      krabka_elector_state_t *out,
                                      char *errstr, size_t errstr_size);
/** *roles is how many roles are in the set now, *held how many of them it
 *  holds (a term runs); either may be NULL. Never blocks. */
krabka_err_t krabka_elector_set_count(krabka_elector_set_t *set,
                                      size_t *roles, size_t *held,
                                      char *errstr, size_t errstr_size);
/** Ends every role's loop: held terms are resigned (in parallel, each
 *  bounded by request.timeout.ms; their STOPPED, RESIGNED, still posted),
 *  standbys leave the race, and waits until every role's ELECTOR_STOPPED
 *  was posted. Events still in the queue stay there. Blocks. */
krabka_err_t krabka_elector_set_destroy(krabka_elector_set_t *set);
/** SET_TERM: the event's role, copied with a NUL; *len its byte length
 *  (KRABKA_NAME_BUF suffices; a smaller buffer:
 *  KRABKA_ERR_BUFFER_TOO_SMALL with *len set; len may be NULL). The other
 *  data of the event are read with the TERM accessors. */
krabka_err_t krabka_event_role(const krabka_event_t *ev, char *buf,
                               size_t buf_size, size_t *len, char *errstr,
                               size_t errstr_size);

#ifdef __cplusplus
}
#endif

#endif /* KRABKA_COORD_H */
