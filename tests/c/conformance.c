/*
 * The C runner of the conformance vectors: every vector the C API can express
 * is run through libkrabka_coord's public functions and compared with its
 * expectation. Input is the line form written by flatten_vectors.py (one
 * vector per line, tab-separated key=value; text as _hex).
 *
 *   conformance_c [--json] [--verbose] FILE
 *
 * Prints one "FAIL <id>: ..." line per failed vector, the fixed "not run:"
 * list, and "N passed, N failed"; exits 1 if anything failed. With --json it
 * prints instead one JSON object of per-group counts:
 *   {"codec": {"passed": 22, "failed": 0, "not_run": 0}, ...}
 */
#include <ctype.h>
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "krabka_coord.h"

/* Operations the C API cannot express: no C function exists for them. This
 * list is written down, never computed from results. */
static const char *const NOT_RUN_OPS[] = {
    "encode_tombstone", /* a tombstone is a null value; there is no encoder */
    "fold", "fold_raw", "rank", "evaluate", /* no pure fold or rule in C */
    "lease_defaults", "lease_config", "lease_grant", "lease_live_at",
    "lease_remaining_at", "lease_renew_at", "lease_renew_due_at",
    "lease_challenge_delay", "lease_challenge_at", "lease_expires_at",
    /* no lease clock in C */
};
#define N_NOT_RUN (sizeof NOT_RUN_OPS / sizeof NOT_RUN_OPS[0])

/* ---- one vector: its key=value pairs ---- */

#define MAX_FIELDS 512
struct vec {
    int n;
    char *k[MAX_FIELDS];
    char *v[MAX_FIELDS];
};

static const char *get(const struct vec *x, const char *key) {
    for (int i = 0; i < x->n; i++)
        if (strcmp(x->k[i], key) == 0)
            return x->v[i];
    return NULL;
}

/* ---- problem reporting ---- */

static char problem[4096];

static int fail(const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(problem, sizeof problem, fmt, ap);
    va_end(ap);
    return 1;
}

/* ---- field readers: a missing or malformed field is a runner error ---- */

static int need(const struct vec *x, const char *key, const char **out) {
    *out = get(x, key);
    if (*out == NULL)
        return fail("vector has no field %s", key);
    return 0;
}

static int get_i64(const struct vec *x, const char *key, int64_t *out) {
    const char *s;
    if (need(x, key, &s))
        return 1;
    char *end;
    errno = 0;
    long long v = strtoll(s, &end, 10);
    if (errno || *s == '\0' || *end != '\0')
        return fail("field %s=%s is not a 64-bit integer", key, s);
    *out = (int64_t)v;
    return 0;
}

static int get_bool(const struct vec *x, const char *key, int *out) {
    const char *s;
    if (need(x, key, &s))
        return 1;
    if (strcmp(s, "true") == 0)
        *out = 1;
    else if (strcmp(s, "false") == 0)
        *out = 0;
    else
        return fail("field %s=%s is not a boolean", key, s);
    return 0;
}

/* Hex into a malloc'd buffer (NULL with *len 0 for the text "null"). */
static int get_hex(const struct vec *x, const char *key, uint8_t **out,
                   size_t *len, int *is_null) {
    const char *s;
    if (need(x, key, &s))
        return 1;
    *out = NULL;
    *len = 0;
    if (is_null)
        *is_null = strcmp(s, "null") == 0;
    if (strcmp(s, "null") == 0)
        return 0;
    size_t n = strlen(s);
    if (n % 2)
        return fail("field %s has odd hex length", key);
    *out = malloc(n / 2 + 1);
    for (size_t i = 0; i < n / 2; i++) {
        unsigned b;
        if (sscanf(s + 2 * i, "%2x", &b) != 1 || !isxdigit((unsigned char)s[2 * i]) ||
            !isxdigit((unsigned char)s[2 * i + 1])) {
            free(*out);
            *out = NULL;
            return fail("field %s is not hex", key);
        }
        (*out)[i] = (uint8_t)b;
    }
    *len = n / 2;
    return 0;
}

static void to_hex(const uint8_t *b, size_t n, char *out) {
    for (size_t i = 0; i < n; i++)
        sprintf(out + 2 * i, "%02x", b[i]);
    out[2 * n] = '\0';
}

/* The category word of a data error code: the lower-case of its name. */
static const char *category_of(krabka_err_t err, char *buf, size_t size) {
    const char *name = krabka_err2name(err);
    size_t i;
    for (i = 0; name[i] && i + 1 < size; i++)
        buf[i] = (char)tolower((unsigned char)name[i]);
    buf[i] = '\0';
    return buf;
}

/* Checks a failure against expect.category / expect.categories_allowed. */
static int check_failure(const struct vec *x, krabka_err_t err, const char *errstr) {
    char cat[64];
    if (err == KRABKA_OK)
        return fail("call succeeded, expected a failure");
    category_of(err, cat, sizeof cat);
    const char *want = get(x, "expect.category");
    if (want && strcmp(want, "null") != 0) {
        if (strcmp(want, cat) != 0)
            return fail("failed with %s (%s), expected %s", cat, errstr, want);
        return 0;
    }
    const char *allowed = get(x, "expect.categories_allowed");
    if (!allowed)
        return fail("vector names no expected category");
    size_t cl = strlen(cat);
    for (const char *p = allowed; *p;) {
        const char *comma = strchr(p, ',');
        size_t l = comma ? (size_t)(comma - p) : strlen(p);
        if (l == cl && strncmp(p, cat, l) == 0)
            return 0;
        p += l + (comma ? 1 : 0);
    }
    return fail("failed with %s (%s), expected one of %s", cat, errstr, allowed);
}

/* Common tail: compare err with expect.ok. Returns -1 when the caller should
 * go on comparing results (ok expected and got), else 0 / 1. */
static int expect_outcome(const struct vec *x, krabka_err_t err, const char *errstr) {
    int ok;
    if (get_bool(x, "expect.ok", &ok))
        return 1;
    if (!ok)
        return check_failure(x, err, errstr);
    if (err != KRABKA_OK)
        return fail("failed with %s: %s", krabka_err2name(err), errstr);
    return -1;
}

/* ---- building the C structs from fields ---- */

static int fill_name(const struct vec *x, const char *key, char *buf, uint32_t *len) {
    uint8_t *b;
    size_t n;
    if (get_hex(x, key, &b, &n, NULL))
        return 1;
    if (n >= KRABKA_NAME_BUF) {
        free(b);
        return fail("field %s longer than KRABKA_NAME_BUF", key);
    }
    if (n)
        memcpy(buf, b, n);
    buf[n] = '\0';
    *len = (uint32_t)n;
    free(b);
    return 0;
}

static int fill_token(const struct vec *x, const char *prefix, krabka_token_t *t) {
    char k1[128], k2[128];
    int64_t id, ep;
    snprintf(k1, sizeof k1, "%sproducer_id", prefix);
    snprintf(k2, sizeof k2, "%sproducer_epoch", prefix);
    if (get_i64(x, k1, &id) || get_i64(x, k2, &ep))
        return 1;
    t->producer_id = id;
    t->producer_epoch = (int16_t)ep;
    return 0;
}

union record {
    krabka_key_t key;
    krabka_registration_t reg;
    krabka_lease_t lease;
};

enum part { PART_KEY, PART_REG, PART_LEASE, PART_BAD };

static enum part part_of(const char *s) {
    if (!s)
        return PART_BAD;
    if (!strcmp(s, "key"))
        return PART_KEY;
    if (!strcmp(s, "registration_value"))
        return PART_REG;
    if (!strcmp(s, "lease_value"))
        return PART_LEASE;
    return PART_BAD;
}

static int fill_record(const struct vec *x, enum part p, const char *prefix, union record *r) {
    char k[128];
    int64_t v;
    memset(r, 0, sizeof *r);
#define K(name) (snprintf(k, sizeof k, "%s%s", prefix, name), k)
    switch (p) {
    case PART_KEY:
        if (get_i64(x, K("kind"), &v))
            return 1;
        r->key.kind = (int32_t)v;
        if (fill_name(x, K("role_hex"), r->key.role, &r->key.role_len))
            return 1;
        if (get(x, K("member_hex")) && fill_name(x, K("member_hex"), r->key.member, &r->key.member_len))
            return 1;
        return 0;
    case PART_REG:
        if (fill_name(x, K("member_hex"), r->reg.member, &r->reg.member_len) ||
            get_i64(x, K("registered_at"), &v))
            return 1;
        r->reg.registered_at = v;
        return 0;
    case PART_LEASE:
        if (fill_name(x, K("member_hex"), r->lease.member, &r->lease.member_len) ||
            fill_token(x, prefix, &r->lease.token) || get_i64(x, K("granted_at"), &v))
            return 1;
        r->lease.granted_at = v;
        if (get_i64(x, K("deadline"), &v))
            return 1;
        r->lease.deadline = v;
        return 0;
    default:
        return fail("unknown part");
    }
#undef K
}

static int names_equal(const char *a, uint32_t al, const char *b, uint32_t bl) {
    return al == bl && memcmp(a, b, al) == 0 && a[al] == '\0';
}

/* Compares a decoded record (got) with the expected one (want, from fields). */
static int compare_record(enum part p, const union record *got, const union record *want) {
    switch (p) {
    case PART_KEY:
        if (got->key.kind != want->key.kind)
            return fail("decoded kind %d, expected %d", got->key.kind, want->key.kind);
        if (!names_equal(got->key.role, got->key.role_len, want->key.role, want->key.role_len))
            return fail("decoded role differs (%u bytes, expected %u)", got->key.role_len, want->key.role_len);
        if (!names_equal(got->key.member, got->key.member_len, want->key.member, want->key.member_len))
            return fail("decoded member differs (%u bytes, expected %u)", got->key.member_len, want->key.member_len);
        return 0;
    case PART_REG:
        if (!names_equal(got->reg.member, got->reg.member_len, want->reg.member, want->reg.member_len))
            return fail("decoded member differs");
        if (got->reg.registered_at != want->reg.registered_at)
            return fail("decoded registered_at %" PRId64 ", expected %" PRId64,
                        got->reg.registered_at, want->reg.registered_at);
        return 0;
    case PART_LEASE:
        if (!names_equal(got->lease.member, got->lease.member_len, want->lease.member, want->lease.member_len))
            return fail("decoded member differs");
        if (krabka_token_compare(got->lease.token, want->lease.token) != 0)
            return fail("decoded token %" PRId64 ":%d, expected %" PRId64 ":%d",
                        got->lease.token.producer_id, got->lease.token.producer_epoch,
                        want->lease.token.producer_id, want->lease.token.producer_epoch);
        if (got->lease.granted_at != want->lease.granted_at || got->lease.deadline != want->lease.deadline)
            return fail("decoded granted_at/deadline differ");
        return 0;
    default:
        return fail("unknown part");
    }
}

static krabka_err_t encode(enum part p, const union record *r, uint8_t *buf, size_t size,
                           size_t *len, char *errstr, size_t es) {
    switch (p) {
    case PART_KEY:
        return krabka_key_encode(&r->key, buf, size, len, errstr, es);
    case PART_REG:
        return krabka_registration_encode(&r->reg, buf, size, len, errstr, es);
    default:
        return krabka_lease_encode(&r->lease, buf, size, len, errstr, es);
    }
}

static krabka_err_t decode(enum part p, const uint8_t *data, size_t n, union record *r,
                           char *errstr, size_t es) {
    switch (p) {
    case PART_KEY:
        return krabka_key_decode(data, n, &r->key, errstr, es);
    case PART_REG:
        return krabka_registration_decode(data, n, &r->reg, errstr, es);
    default:
        return krabka_lease_decode(data, n, &r->lease, errstr, es);
    }
}

/* Encodes r (asking for the size first) and compares with hex want. */
static int encode_and_compare(enum part p, const union record *r, const char *want) {
    char errstr[512] = "";
    size_t need = 0;
    krabka_err_t err = encode(p, r, NULL, 0, &need, errstr, sizeof errstr);
    if (err != KRABKA_ERR_BUFFER_TOO_SMALL && !(err == KRABKA_OK && need == 0))
        return fail("size query answered %s: %s", krabka_err2name(err), errstr);
    uint8_t *buf = malloc(need + 1);
    size_t len = 0;
    err = encode(p, r, buf, need, &len, errstr, sizeof errstr);
    if (err != KRABKA_OK) {
        free(buf);
        return fail("encode failed with %s: %s", krabka_err2name(err), errstr);
    }
    char *hex = malloc(2 * len + 1);
    to_hex(buf, len, hex);
    int bad = strcmp(hex, want) != 0 || len != need;
    if (bad)
        fail("encode gave %s, expected %s", hex, want);
    free(hex);
    free(buf);
    return bad;
}

/* ---- operations ---- */

static int op_codec(const struct vec *x) {
    enum part p = part_of(get(x, "part"));
    const char *dir = get(x, "direction");
    int ok;
    if (p == PART_BAD || !dir)
        return fail("bad part or direction");
    if (get_bool(x, "expect.ok", &ok))
        return 1;
    if (!strcmp(dir, "both") || !strcmp(dir, "encode")) {
        union record r;
        if (fill_record(x, p, "fields.", &r))
            return 1;
        if (ok) {
            const char *want;
            if (need(x, "expect.hex", &want) || encode_and_compare(p, &r, want))
                return 1;
        } else {
            char errstr[512] = "";
            uint8_t buf[1024];
            size_t len;
            if (check_failure(x, encode(p, &r, buf, sizeof buf, &len, errstr, sizeof errstr), errstr))
                return 1;
        }
    }
    if (!strcmp(dir, "both") || !strcmp(dir, "decode")) {
        uint8_t *data;
        size_t n;
        union record got, want;
        char errstr[512] = "";
        if (get_hex(x, "hex", &data, &n, NULL))
            return 1;
        memset(&got, 0x5a, sizeof got);
        krabka_err_t err = decode(p, data, n, &got, errstr, sizeof errstr);
        free(data);
        int r = expect_outcome(x, err, errstr);
        if (r >= 0)
            return r;
        if (fill_record(x, p, "expect.fields.", &want) || compare_record(p, &got, &want))
            return 1;
        /* Re-encoding the decoded record gives the bytes back. */
        if (encode_and_compare(p, &got, get(x, "hex")))
            return 1;
    }
    return 0;
}

static int op_decode_failure(const struct vec *x) {
    enum part p = part_of(get(x, "part"));
    uint8_t *data;
    size_t n;
    union record out;
    char errstr[512] = "";
    if (p == PART_BAD)
        return fail("bad part");
    if (get_hex(x, "hex", &data, &n, NULL))
        return 1;
    krabka_err_t err = decode(p, data, n, &out, errstr, sizeof errstr);
    free(data);
    int r = expect_outcome(x, err, errstr);
    return r < 0 ? fail("decode succeeded, expected a failure") : r;
}

static int op_is_tombstone(const struct vec *x) {
    uint8_t *data;
    size_t n;
    int want;
    if (get_hex(x, "value_hex", &data, &n, NULL) || get_bool(x, "expect.tombstone", &want))
        return 1;
    int got = krabka_value_is_tombstone(data, n);
    free(data);
    return got != want ? fail("is_tombstone gave %d, expected %d", got, want) : 0;
}

static int op_read_value(const struct vec *x) {
    enum part p = part_of(get(x, "part"));
    uint8_t *data;
    size_t n;
    char errstr[512] = "";
    if (p != PART_REG && p != PART_LEASE)
        return fail("bad part");
    if (get_hex(x, "value_hex", &data, &n, NULL))
        return 1;
    if (krabka_value_is_tombstone(data, n)) {
        free(data);
        int ok, want;
        if (get_bool(x, "expect.ok", &ok))
            return 1;
        if (!ok)
            return fail("read a tombstone, expected a failure");
        if (get_bool(x, "expect.tombstone", &want))
            return 1;
        return want ? 0 : fail("read a tombstone, expected a value");
    }
    union record got, want;
    krabka_err_t err = decode(p, data, n, &got, errstr, sizeof errstr);
    free(data);
    int r = expect_outcome(x, err, errstr);
    if (r >= 0)
        return r;
    int ts;
    if (get_bool(x, "expect.tombstone", &ts))
        return 1;
    if (ts)
        return fail("decoded a value, expected a tombstone");
    if (fill_record(x, p, "expect.fields.", &want))
        return 1;
    return compare_record(p, &got, &want);
}

static int op_validate_name(const struct vec *x, int is_role) {
    uint8_t *b;
    size_t n;
    char errstr[512] = "";
    if (get_hex(x, "name_hex", &b, &n, NULL))
        return 1;
    /* Pass the length (names may hold NUL); never KRABKA_NTS here. */
    static const char empty[1] = "";
    const char *p = b ? (const char *)b : empty;
    krabka_err_t err = is_role ? krabka_role_validate(p, n, errstr, sizeof errstr)
                               : krabka_member_validate(p, n, errstr, sizeof errstr);
    free(b);
    int r = expect_outcome(x, err, errstr);
    return r < 0 ? 0 : r;
}

static int op_murmur2(const struct vec *x) {
    uint8_t *b;
    size_t n;
    int64_t want;
    if (get_hex(x, "key_hex", &b, &n, NULL) || get_i64(x, "expect.murmur2", &want))
        return 1;
    int32_t got = krabka_murmur2(b, n);
    free(b);
    return got != want ? fail("murmur2 gave %" PRId32 ", expected %" PRId64, got, want) : 0;
}

static int op_partition(const struct vec *x) {
    uint8_t *b;
    size_t n;
    int64_t parts, want;
    char errstr[512] = "";
    if (get_hex(x, "role_hex", &b, &n, NULL) || get_i64(x, "partitions", &parts))
        return 1;
    int32_t got = -12345;
    static const char empty[1] = "";
    krabka_err_t err = krabka_role_partition(b ? (const char *)b : empty, n, (int32_t)parts,
                                             &got, errstr, sizeof errstr);
    free(b);
    int r = expect_outcome(x, err, errstr);
    if (r >= 0)
        return r;
    if (get_i64(x, "expect.partition", &want))
        return 1;
    return got != want ? fail("partition %" PRId32 ", expected %" PRId64, got, want) : 0;
}

static int op_token_compare(const struct vec *x) {
    krabka_token_t l, r;
    int64_t want;
    int want_sup;
    if (fill_token(x, "left.", &l) || fill_token(x, "right.", &r) ||
        get_i64(x, "expect.compare", &want) || get_bool(x, "expect.supersedes", &want_sup))
        return 1;
    int c = krabka_token_compare(l, r), s = krabka_token_supersedes(l, r);
    if (c != want)
        return fail("compare gave %d, expected %" PRId64, c, want);
    if (s != want_sup)
        return fail("supersedes gave %d, expected %d", s, want_sup);
    return 0;
}

static int op_token_validate(const struct vec *x) {
    krabka_token_t t;
    char errstr[512] = "";
    if (fill_token(x, "token.", &t))
        return 1;
    int r = expect_outcome(x, krabka_token_validate(t, errstr, sizeof errstr), errstr);
    return r < 0 ? 0 : r;
}

static int op_token_format(const struct vec *x) {
    krabka_token_t t;
    char buf[KRABKA_TOKEN_TEXT_MAX];
    const char *want;
    if (fill_token(x, "token.", &t) || need(x, "expect.text_hex", &want))
        return 1;
    krabka_err_t err = krabka_token_format(t, buf, sizeof buf);
    int r = expect_outcome(x, err, "");
    if (r >= 0)
        return r;
    char hex[2 * KRABKA_TOKEN_TEXT_MAX + 1];
    to_hex((const uint8_t *)buf, strlen(buf), hex);
    if (strcmp(hex, want) != 0)
        return fail("format gave \"%s\" (hex %s), expected hex %s", buf, hex, want);
    /* One byte short of the text and its NUL is refused. */
    if (krabka_token_format(t, buf, strlen(buf)) != KRABKA_ERR_BUFFER_TOO_SMALL)
        return fail("format into a buffer one byte short did not answer BUFFER_TOO_SMALL");
    return 0;
}

static int op_token_parse(const struct vec *x) {
    uint8_t *b;
    size_t n;
    char errstr[512] = "";
    krabka_token_t got = {0, 0}, want;
    if (get_hex(x, "text_hex", &b, &n, NULL))
        return 1;
    static const char empty[1] = "";
    krabka_err_t err = krabka_token_parse(b ? (const char *)b : empty, n, &got, errstr, sizeof errstr);
    free(b);
    int r = expect_outcome(x, err, errstr);
    if (r >= 0)
        return r;
    if (fill_token(x, "expect.token.", &want))
        return 1;
    if (krabka_token_compare(got, want) != 0)
        return fail("parse gave %" PRId64 ":%d", got.producer_id, got.producer_epoch);
    return 0;
}

/* 1 = failed, 0 = passed, -1 = not run */
static int run(const struct vec *x) {
    const char *op = get(x, "op");
    problem[0] = '\0';
    if (!op)
        return fail("vector has no op");
    for (size_t i = 0; i < N_NOT_RUN; i++)
        if (!strcmp(op, NOT_RUN_OPS[i]))
            return -1;
    if (!strcmp(op, "codec"))
        return op_codec(x);
    if (!strcmp(op, "decode_failure"))
        return op_decode_failure(x);
    if (!strcmp(op, "is_tombstone"))
        return op_is_tombstone(x);
    if (!strcmp(op, "read_value"))
        return op_read_value(x);
    if (!strcmp(op, "validate_role"))
        return op_validate_name(x, 1);
    if (!strcmp(op, "validate_member"))
        return op_validate_name(x, 0);
    if (!strcmp(op, "murmur2"))
        return op_murmur2(x);
    if (!strcmp(op, "partition"))
        return op_partition(x);
    if (!strcmp(op, "token_compare"))
        return op_token_compare(x);
    if (!strcmp(op, "token_validate"))
        return op_token_validate(x);
    if (!strcmp(op, "token_format"))
        return op_token_format(x);
    if (!strcmp(op, "token_parse"))
        return op_token_parse(x);
    return fail("unknown op %s", op);
}

/* ---- per-group and per-op counts ---- */

#define MAX_GROUPS 64
static struct {
    char name[64];
    int passed, failed, not_run;
} groups[MAX_GROUPS];
static int n_groups;
static int not_run_count[N_NOT_RUN];

static int group_index(const char *name) {
    for (int i = 0; i < n_groups; i++)
        if (!strcmp(groups[i].name, name))
            return i;
    if (n_groups == MAX_GROUPS) {
        fprintf(stderr, "conformance_c: too many groups\n");
        exit(2);
    }
    snprintf(groups[n_groups].name, sizeof groups[n_groups].name, "%s", name);
    return n_groups++;
}

int main(int argc, char **argv) {
    int json = 0, verbose = 0;
    const char *file = NULL;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--json"))
            json = 1;
        else if (!strcmp(argv[i], "--verbose"))
            verbose = 1;
        else
            file = argv[i];
    }
    if (!file) {
        fprintf(stderr, "usage: conformance_c [--json] [--verbose] VECTORS.lines\n");
        return 2;
    }
    FILE *f = fopen(file, "r");
    if (!f) {
        perror(file);
        return 2;
    }
    int passed = 0, failed = 0;
    char *line = NULL;
    size_t cap = 0;
    ssize_t got;
    while ((got = getline(&line, &cap, f)) > 0) {
        if (line[got - 1] == '\n')
            line[--got] = '\0';
        if (got == 0)
            continue;
        struct vec x;
        x.n = 0;
        for (char *save = NULL, *tok = strtok_r(line, "\t", &save); tok;
             tok = strtok_r(NULL, "\t", &save)) {
            char *eq = strchr(tok, '=');
            if (!eq || x.n == MAX_FIELDS) {
                fprintf(stderr, "conformance_c: bad line\n");
                return 2;
            }
            *eq = '\0';
            x.k[x.n] = tok;
            x.v[x.n++] = eq + 1;
        }
        const char *id = get(&x, "id"), *group = get(&x, "group"), *op = get(&x, "op");
        int g = group_index(group ? group : "?");
        int r = run(&x);
        if (r < 0) {
            groups[g].not_run++;
            for (size_t i = 0; i < N_NOT_RUN; i++)
                if (op && !strcmp(op, NOT_RUN_OPS[i]))
                    not_run_count[i]++;
        } else if (r == 0) {
            groups[g].passed++;
            passed++;
            if (verbose)
                printf("ok   %s\n", id ? id : "?");
        } else {
            groups[g].failed++;
            failed++;
            if (!json)
                printf("FAIL %s: %s\n", id ? id : "?", problem);
        }
    }
    free(line);
    fclose(f);
    if (json) {
        printf("{");
        for (int i = 0; i < n_groups; i++)
            printf("%s\"%s\": {\"passed\": %d, \"failed\": %d, \"not_run\": %d}", i ? ", " : "",
                   groups[i].name, groups[i].passed, groups[i].failed, groups[i].not_run);
        printf("}\n");
    } else {
        printf("not run:");
        for (size_t i = 0; i < N_NOT_RUN; i++)
            printf("%s %s (%d)", i ? "," : "", NOT_RUN_OPS[i], not_run_count[i]);
        printf("\n%d passed, %d failed\n", passed, failed);
    }
    return failed ? 1 : 0;
}
