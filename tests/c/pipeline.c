/*
 * A pipeline step through the C ABI on real brokers (transaction.version 2:
 * $KRABKA_BOOTSTRAP, and 1: $KRABKA_BOOTSTRAP_TV1): input read under the
 * leadership, commands written with the consumed offsets in one
 * transaction, and the deposed leader's offsets refused by the broker.
 * $KRABKA_KTOPIC and $KRABKA_KREAD name built tests/kafka/cmd/ktopic and
 * kread; `make capi-pipeline` does all of that. A missing variable fails.
 *
 * Per cluster, with fresh topics REQ and CMD (two partitions each) and a
 * fresh role:
 *   1. A feeder role writes the requests "req-0" .. "req-99" to REQ
 *      (request n to partition n % 2) in one guarded write.
 *   2. A (client on coordination topic T1) acquires the role. Bad input is
 *      refused before anything happens, naming what is wrong: consume with
 *      no topics, a NULL name, an empty, over-long or non-UTF-8 name, a
 *      topic that does not exist; poll with max 0; produce_offsets with a
 *      NULL array, a topic_len over 249, a non-UTF-8 topic, a negative
 *      offset, a partition that does not exist, a topic A did not read, an
 *      offset beyond A's position.
 *   3. A consumes REQ (committed 0 on both partitions), polls 60 records
 *      (their topic, partition, offsets, value, null key and krabka.token
 *      header checked) and writes "cmd-<n>" for each to CMD (same
 *      partition) carrying its position: the committed offsets become the
 *      position.
 *   4. A polls the rest. B (client on coordination topic T2, so that A's
 *      view cannot see it: the blind holder) acquires the role, minting a
 *      newer epoch. A, still ACTIVE, writes the commands of what it polled
 *      with its offsets: KRABKA_ERR_FENCED with the broker's error.
 *   5. B consumes through the async forms (consume_async, poll_async,
 *      produce_offsets_async): its committed offsets are those of A's
 *      committed write (A's refused offsets left no trace), its first
 *      records start exactly there, and it writes the remaining commands.
 *   6. kread reads CMD back read_committed: cmd-0 .. cmd-99 exactly once
 *      each, in request order per partition; none of A's refused commands.
 * Then (tv2) examples/c/pipeline ($KRABKA_PIPELINE_EXAMPLE) runs as a child
 * process on fresh topics: every request's command once ("done req-<n>"),
 * and it exits 0 after SIGTERM.
 */
#include <fcntl.h>
#include <inttypes.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "krabka_coord.h"

#define CHECK_NAME "pipeline"
#include "check.h"

enum { NREQ = 100, FIRST = 60, PARTS = 2 };

static const char *ktopic, *kread, *example;
static struct timespec t0;

/* A progress line with the seconds since the cluster's run started. */
static void step(const char *tv, const char *what) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    printf("pipeline: %s: %.1f s: %s\n", tv, (double)(t.tv_sec - t0.tv_sec) + (t.tv_nsec - t0.tv_nsec) / 1e9, what);
    fflush(stdout);
}

static krabka_client_t *new_client(const char *bootstrap, const char *coord_topic, const char *id) {
    krabka_conf_t *conf = krabka_conf_new();
    krabka_client_t *c = NULL;
    OK(krabka_conf_set(conf, "bootstrap.servers", bootstrap, ES));
    OK(krabka_conf_set(conf, "client.id", id, ES));
    OK(krabka_conf_set(conf, "krabka.topic", coord_topic, ES));
    OK(krabka_conf_set(conf, "krabka.topic.partitions", "1", ES));
    OK(krabka_conf_set(conf, "krabka.renew.background", "false", ES));
    OK(krabka_conf_set(conf, "krabka.lease.ms", "60000", ES));
    OK(krabka_conf_set(conf, "krabka.renew.interval.ms", "20000", ES));
    OK(krabka_conf_set(conf, "krabka.challenge.stagger.ms", "500", ES));
    OK(krabka_conf_set(conf, "request.timeout.ms", "30000", ES));
    OK(krabka_client_new(conf, &c, ES));
    OK(krabka_conf_destroy(conf));
    return c;
}

static void create_topic(const char *bootstrap, const char *t) {
    char cmd[1024];
    snprintf(cmd, sizeof cmd, "'%s' '%s' '%s' %d >/dev/null", ktopic, bootstrap, t, PARTS);
    int rc = system(cmd);
    CHECK(rc == 0, "%s gave %d", cmd, rc);
    if (rc != 0)
        exit(1);
}

/* The requests "req-0" .. "req-<NREQ-1>" (request n to partition n % PARTS),
 * written by a feeder role in one guarded write, which then resigns. */
static void feed(const char *bootstrap, const char *coord_topic, const char *feeder_role, const char *req) {
    krabka_client_t *fc = new_client(bootstrap, coord_topic, "pipe-feeder");
    krabka_leadership_t *feeder = NULL;
    OK(krabka_client_acquire(fc, feeder_role, KRABKA_NTS, "feeder", KRABKA_NTS, 60000, &feeder, ES));
    krabka_message_t msgs[NREQ];
    char vals[NREQ][16];
    for (int i = 0; i < NREQ; i++) {
        krabka_message_t m = KRABKA_MESSAGE_INIT;
        snprintf(vals[i], sizeof vals[i], "req-%d", i);
        m.topic = req;
        m.partition = i % PARTS;
        m.value = (const uint8_t *)vals[i];
        m.value_len = strlen(vals[i]);
        msgs[i] = m;
    }
    OK(krabka_leadership_produce(feeder, msgs, NREQ, 60000, NULL, ES));
    OK(krabka_leadership_resign(feeder, 30000, ES));
    OK(krabka_leadership_destroy(feeder));
    OK(krabka_client_destroy(fc));
}

static krabka_offset_t offset_of(const char *topic, int32_t partition, int64_t offset) {
    krabka_offset_t o;
    memset(&o, 0, sizeof o);
    o.topic_len = (uint32_t)strlen(topic);
    memcpy(o.topic, topic, o.topic_len);
    o.partition = partition;
    o.offset = offset;
    return o;
}

/* The input's positions (or committed offsets), by partition. */
static void offsets(const krabka_input_t *in, int committed, krabka_offset_t out[PARTS], const char *topic) {
    size_t n = 0;
    krabka_err_t e = committed ? krabka_input_committed(in, out, PARTS, &n) : krabka_input_position(in, out, PARTS, &n);
    CHECK(e == KRABKA_OK && n == PARTS, "%s: %s count %zu", krabka_err2name(e), committed ? "committed" : "position", n);
    for (size_t i = 0; i < n && i < PARTS; i++) {
        CHECK(out[i].partition == (int32_t)i && strcmp(out[i].topic, topic) == 0 && out[i].topic_len == strlen(topic),
              "entry %zu: %s/%d", i, out[i].topic, out[i].partition);
    }
}

/* What a poll returned, checked and appended to got[] (request numbers) and
 * offs[] (their offsets). */
static int take_records(krabka_records_t *recs, const char *topic, int *got, int64_t *offs, int have) {
    size_t n = 0;
    OK(krabka_records_count(recs, &n));
    CHECK(n >= 1, "a poll that succeeded returned %zu records", n);
    krabka_input_record_t r;
    CHECK(krabka_records_get(recs, n, &r) == KRABKA_ERR_INVALID_ARG, "index %zu of %zu", n, n);
    CHECK(krabka_records_get(recs, 0, NULL) == KRABKA_ERR_INVALID_ARG, "NULL out");
    for (size_t i = 0; i < n; i++) {
        OK(krabka_records_get(recs, i, &r));
        int num = -1;
        char val[64] = "";
        if (r.value && r.value_len < sizeof val) {
            memcpy(val, r.value, r.value_len);
            val[r.value_len] = 0;
        }
        CHECK(sscanf(val, "req-%d", &num) == 1 && num >= 0 && num < NREQ, "record value %s", val);
        CHECK(strcmp(r.topic, topic) == 0, "record topic %s", r.topic);
        CHECK(r.partition == num % PARTS, "req-%d came from partition %d", num, r.partition);
        CHECK(r.offset == num / PARTS, "req-%d at offset %" PRId64 ", expected %d", num, r.offset, num / PARTS);
        CHECK(r.key == NULL && r.key_len == 0, "req-%d has a key", num);
        int token = 0;
        for (size_t j = 0; j < r.header_count; j++)
            if (strcmp(r.headers[j].key, "krabka.token") == 0 && r.headers[j].value_len > 2)
                token = 1;
        CHECK(token, "req-%d carries no krabka.token header (%zu headers)", num, r.header_count);
        if (have < NREQ) {
            got[have] = num;
            offs[have] = r.offset;
            have++;
        }
    }
    OK(krabka_records_destroy(recs));
    CHECK(krabka_records_destroy(recs) == KRABKA_ERR_INVALID_HANDLE, "double destroy");
    return have;
}

/* The command messages of requests got[from .. to) with their values in
 * vals (kept alive by the caller). */
static size_t commands(const char *cmd, const int *got, int from, int to, krabka_message_t *msgs, char vals[][16]) {
    size_t n = 0;
    for (int i = from; i < to; i++, n++) {
        krabka_message_t m = KRABKA_MESSAGE_INIT;
        snprintf(vals[n], 16, "cmd-%d", got[i]);
        m.topic = cmd;
        m.partition = got[i] % PARTS;
        m.value = (const uint8_t *)vals[n];
        m.value_len = strlen(vals[n]);
        msgs[n] = m;
    }
    return n;
}

static krabka_event_t *wait_event(krabka_queue_t *q, krabka_event_type_t type) {
    int fd = -1;
    OK(krabka_queue_fd(q, &fd));
    for (int i = 0; i < 600; i++) {
        krabka_event_t *ev = NULL;
        OK(krabka_queue_poll(q, &ev));
        if (ev) {
            krabka_event_type_t t;
            OK(krabka_event_type(ev, &t));
            CHECK(t == type, "event type %d, expected %d", t, type);
            return ev;
        }
        struct pollfd p = {fd, POLLIN, 0};
        poll(&p, 1, 100);
    }
    CHECK(0, "no event of type %d within 60 s", type);
    exit(1);
}

static void expect_err(krabka_err_t got, krabka_err_t want, const char *needle, const char *what) {
    CHECK(got == want, "%s: %s (%s), expected %s", what, krabka_err2name(got), errstr, krabka_err2name(want));
    CHECK(strstr(errstr, needle) != NULL, "%s: errstr %s does not name %s", what, errstr, needle);
}

static void bad_input(krabka_leadership_t *a, const char *req, const char *cmd) {
    krabka_input_t *in = (krabka_input_t *)0x1;
    const char *none[1] = {NULL};
    char longname[300], bad[8] = "re\xffq";
    memset(longname, 't', sizeof longname - 1);
    longname[sizeof longname - 1] = 0;
    const char *lng[1] = {longname}, *badu[1] = {bad}, *empty[1] = {""}, *missing[1] = {"krabka-no-such-topic-x"};
    expect_err(krabka_leadership_consume(a, NULL, 1, 0, &in, ES), KRABKA_ERR_INVALID_ARG, "topics", "consume(NULL)");
    CHECK(in == NULL, "out not cleared");
    expect_err(krabka_leadership_consume(a, none, 0, 0, &in, ES), KRABKA_ERR_INVALID_ARG, "topic_count", "consume(0)");
    expect_err(krabka_leadership_consume(a, none, 1, 0, &in, ES), KRABKA_ERR_INVALID_ARG, "topics[0] is NULL", "NULL name");
    expect_err(krabka_leadership_consume(a, lng, 1, 0, &in, ES), KRABKA_ERR_INVALID_ARG, "topics[0] is longer than 249", "long");
    expect_err(krabka_leadership_consume(a, badu, 1, 0, &in, ES), KRABKA_ERR_INVALID_ARG, "UTF-8", "bad UTF-8");
    expect_err(krabka_leadership_consume(a, empty, 1, 0, &in, ES), KRABKA_ERR_INVALID_ARG, "topics[0]", "empty");
    expect_err(krabka_leadership_consume(a, missing, 1, 5000, &in, ES), KRABKA_ERR_UNKNOWN_TOPIC_OR_PARTITION,
               "krabka-no-such-topic-x", "missing topic");
    const char *twice[2] = {req, req};
    expect_err(krabka_leadership_consume(a, twice, 2, 0, &in, ES), KRABKA_ERR_INVALID_ARG, req, "a topic twice");
    CHECK(in == NULL, "out set by a failed consume");

    krabka_offset_t o[2];
    krabka_message_t m = KRABKA_MESSAGE_INIT;
    m.topic = cmd;
    expect_err(krabka_leadership_produce_offsets(a, NULL, 1, &m, 1, 0, NULL, ES), KRABKA_ERR_INVALID_ARG, "offsets",
               "NULL offsets");
    o[0] = offset_of(req, 0, 0);
    o[0].topic_len = 300;
    expect_err(krabka_leadership_produce_offsets(a, o, 1, &m, 1, 0, NULL, ES), KRABKA_ERR_INVALID_ARG,
               "offsets[0].topic_len 300", "long topic");
    o[0] = offset_of(req, 0, 0);
    o[1] = offset_of(bad, 0, 0);
    expect_err(krabka_leadership_produce_offsets(a, o, 2, &m, 1, 0, NULL, ES), KRABKA_ERR_INVALID_ARG, "offsets[1]",
               "bad UTF-8 topic");
    CHECK(strstr(errstr, "UTF-8") != NULL, "%s", errstr);
    o[1] = offset_of(req, 1, -1);
    expect_err(krabka_leadership_produce_offsets(a, o, 2, &m, 1, 0, NULL, ES), KRABKA_ERR_INVALID_ARG,
               "offsets[1].offset -1", "negative offset");
    o[0].topic_len = 0;
    expect_err(krabka_leadership_produce_offsets(a, o, 1, &m, 1, 0, NULL, ES), KRABKA_ERR_INVALID_ARG, "offsets[0]",
               "empty topic");
    /* Before any input: the request topic was not read. */
    o[0] = offset_of(req, 0, 1);
    expect_err(krabka_leadership_produce_offsets(a, o, 1, &m, 1, 0, NULL, ES), KRABKA_ERR_INVALID_ARG, req,
               "unread topic");
    CHECK(strstr(errstr, "not read") != NULL, "%s", errstr);
}

static void bad_offsets_after_consume(krabka_leadership_t *a, const char *req, const char *cmd, int64_t pos0) {
    krabka_offset_t o[1];
    krabka_message_t m = KRABKA_MESSAGE_INIT;
    m.topic = cmd;
    o[0] = offset_of(req, 7, 0);
    expect_err(krabka_leadership_produce_offsets(a, o, 1, &m, 1, 0, NULL, ES), KRABKA_ERR_UNKNOWN_TOPIC_OR_PARTITION,
               "partition 7", "missing partition");
    o[0] = offset_of(cmd, 0, 0);
    expect_err(krabka_leadership_produce_offsets(a, o, 1, &m, 1, 0, NULL, ES), KRABKA_ERR_INVALID_ARG, cmd,
               "a topic not read");
    o[0] = offset_of(req, 0, pos0 + 1);
    expect_err(krabka_leadership_produce_offsets(a, o, 1, &m, 1, 0, NULL, ES), KRABKA_ERR_INVALID_ARG, "beyond",
               "beyond the position");
    krabka_input_t *in = NULL;
    krabka_records_t *recs = NULL;
    CHECK(krabka_input_poll(in, 1, 0, &recs, ES) == KRABKA_ERR_INVALID_HANDLE, "NULL input");
}

/* kread's record: partition and value (a flat JSON object a line). */
static int parse_line(const char *line, int *partition, char *value, size_t size) {
    const char *p = strstr(line, "\"partition\":");
    const char *v = strstr(line, "\"value\":\"");
    if (!p || !v)
        return 0;
    *partition = atoi(p + 12);
    v += 9;
    size_t n = 0;
    while (v[n] && v[n] != '"' && n + 1 < size)
        n++;
    memcpy(value, v, n);
    value[n] = 0;
    return 1;
}

static void read_back(const char *tv, const char *bootstrap, const char *cmd) {
    char line[4096], c[1024], value[64];
    int seen[NREQ] = {0}, last[PARTS] = {-1, -1}, lines = 0, dup = 0, order = 0, partition = -1;
    snprintf(c, sizeof c, "'%s' '%s' '%s'", kread, bootstrap, cmd);
    FILE *f = popen(c, "r");
    CHECK(f != NULL, "popen %s", c);
    if (!f)
        return;
    while (fgets(line, sizeof line, f)) {
        int num = -1;
        lines++;
        CHECK(parse_line(line, &partition, value, sizeof value), "%s: kread line %s", tv, line);
        CHECK(sscanf(value, "cmd-%d", &num) == 1 && num >= 0 && num < NREQ, "%s: value %s", tv, value);
        if (num < 0 || num >= NREQ || partition < 0 || partition >= PARTS)
            continue;
        CHECK(partition == num % PARTS, "%s: cmd-%d in partition %d", tv, num, partition);
        if (seen[num]++)
            dup++;
        if (num <= last[partition])
            order++;
        last[partition] = num;
    }
    CHECK(pclose(f) == 0, "%s: kread failed", tv);
    int missing = 0;
    for (int i = 0; i < NREQ; i++)
        if (!seen[i])
            missing++;
    CHECK(lines == NREQ && missing == 0 && dup == 0 && order == 0,
          "%s: %d commands read back, missing %d, duplicated %d, out of order %d", tv, lines, missing, dup, order);
    printf("pipeline: %s: %d requests, %d commands read back read_committed: missing %d, duplicated %d, out of order "
           "%d\n",
           tv, NREQ, lines, missing, dup, order);
}

/* The committed records of topic whose value starts with prefix, counted
 * per request number into seen[] (NULL: just counted). */
static int count_values(const char *bootstrap, const char *topic, const char *prefix, int *seen) {
    char line[4096], c[1024], value[64];
    int partition, n = 0;
    snprintf(c, sizeof c, "'%s' '%s' '%s'", kread, bootstrap, topic);
    FILE *f = popen(c, "r");
    if (!f)
        return -1;
    while (fgets(line, sizeof line, f)) {
        int num = -1;
        if (parse_line(line, &partition, value, sizeof value) && strncmp(value, prefix, strlen(prefix)) == 0 &&
            sscanf(value + strlen(prefix), "%d", &num) == 1 && num >= 0 && num < NREQ) {
            n++;
            if (seen)
                seen[num]++;
        }
    }
    pclose(f);
    return n;
}

static void run_example(const char *bootstrap) {
    char role[128], req[160], cmd[160], feeder_role[160];
    snprintf(role, sizeof role, "capi-pipe-example-%ld-%ld", (long)getpid(), (long)time(NULL));
    snprintf(req, sizeof req, "%s-req", role);
    snprintf(cmd, sizeof cmd, "%s-cmd", role);
    snprintf(feeder_role, sizeof feeder_role, "%s-feeder", role);
    create_topic(bootstrap, req);
    create_topic(bootstrap, cmd);
    feed(bootstrap, "krabka-coord", feeder_role, req);

    pid_t pid = fork();
    if (pid == 0) {
        int null = open("/dev/null", O_WRONLY);
        dup2(null, 1);
        execl(example, example, bootstrap, role, "node-1", req, cmd, (char *)NULL);
        _exit(127);
    }
    CHECK(pid > 0, "fork");
    int n = 0;
    for (int i = 0; i < 120 && n < NREQ; i++) {
        n = count_values(bootstrap, cmd, "done req-", NULL);
        if (n < NREQ) {
            struct timespec half = {0, 500000000};
            nanosleep(&half, NULL);
        }
    }
    CHECK(n == NREQ, "the example wrote %d commands of %d within 60 s", n, NREQ);
    kill(pid, SIGTERM);
    int status = 0;
    waitpid(pid, &status, 0);
    CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0, "the example exited with status %d after SIGTERM", status);
    int seen[NREQ] = {0}, once = 0;
    n = count_values(bootstrap, cmd, "done req-", seen);
    for (int i = 0; i < NREQ; i++)
        once += seen[i] == 1;
    CHECK(n == NREQ && once == NREQ, "examples/c/pipeline: %d commands, %d requests exactly once", n, once);
    printf("pipeline: examples/c/pipeline: %d requests, %d commands, %d exactly once; exit after SIGTERM %d\n", NREQ,
           n, once, WIFEXITED(status) ? WEXITSTATUS(status) : -1);
}

static void run_cluster(const char *tv, const char *bootstrap) {
    char role[128], req[160], cmd[160], t1[160], t2[160], feeder_role[160], group[512];
    snprintf(role, sizeof role, "capi-pipe-%s-%ld-%ld", tv, (long)getpid(), (long)time(NULL));
    snprintf(req, sizeof req, "%s-req", role);
    snprintf(cmd, sizeof cmd, "%s-cmd", role);
    snprintf(t1, sizeof t1, "%s-t1", role);
    snprintf(t2, sizeof t2, "%s-t2", role);
    snprintf(feeder_role, sizeof feeder_role, "%s-feeder", role);
    clock_gettime(CLOCK_MONOTONIC, &t0);
    create_topic(bootstrap, req);
    create_topic(bootstrap, cmd);
    step(tv, "topics created");

    /* 1. The requests. */
    feed(bootstrap, t1, feeder_role, req);
    step(tv, "requests written");

    /* 2. A and bad input. */
    krabka_client_t *ca = new_client(bootstrap, t1, "pipe-a");
    size_t glen = 0;
    OK(krabka_client_pipeline_group(ca, role, KRABKA_NTS, group, sizeof group, &glen, ES));
    CHECK(strstr(group, role) != NULL && glen == strlen(group), "pipeline group %s of role %s", group, role);
    krabka_leadership_t *a = NULL;
    OK(krabka_client_acquire(ca, role, KRABKA_NTS, "a", KRABKA_NTS, 60000, &a, ES));
    step(tv, "A acquired");
    bad_input(a, req, cmd);
    step(tv, "bad input refused");

    /* 3. A's first step. */
    const char *topics[1] = {req};
    krabka_input_t *ia = NULL;
    OK(krabka_leadership_consume(a, topics, 1, 30000, &ia, ES));
    krabka_offset_t com[PARTS], pos[PARTS];
    offsets(ia, 1, com, req);
    CHECK(com[0].offset == 0 && com[1].offset == 0, "A starts at %" PRId64 "/%" PRId64, com[0].offset, com[1].offset);
    krabka_records_t *recs = NULL;
    expect_err(krabka_input_poll(ia, 0, 0, &recs, ES), KRABKA_ERR_INVALID_ARG, "max", "poll max 0");
    int got[NREQ];
    int64_t offs[NREQ];
    int have = 0;
    while (have < FIRST) {
        OK(krabka_input_poll(ia, (size_t)(FIRST - have), 30000, &recs, ES));
        have = take_records(recs, req, got, offs, have);
    }
    CHECK(have == FIRST, "A polled %d records, asked for %d", have, FIRST);
    step(tv, "A polled");
    offsets(ia, 0, pos, req);
    bad_offsets_after_consume(a, req, cmd, pos[0].offset);
    {
        krabka_message_t msgs[NREQ];
        char vals[NREQ][16];
        krabka_produce_result_t res[NREQ];
        size_t n = commands(cmd, got, 0, have, msgs, vals);
        OK(krabka_leadership_produce_offsets(a, pos, PARTS, msgs, n, 30000, res, ES));
        for (size_t i = 0; i < n; i++)
            CHECK(res[i].partition == got[i] % PARTS && res[i].offset >= 0, "cmd-%d at %d/%" PRId64, got[i],
                  res[i].partition, res[i].offset);
    }
    offsets(ia, 1, com, req);
    CHECK(com[0].offset == pos[0].offset && com[1].offset == pos[1].offset,
          "committed %" PRId64 "/%" PRId64 " after the write, position %" PRId64 "/%" PRId64, com[0].offset,
          com[1].offset, pos[0].offset, pos[1].offset);
    krabka_offset_t committed_by_a[PARTS] = {com[0], com[1]};
    step(tv, "A committed its step");
    /* Going backwards is refused now. */
    {
        krabka_offset_t back = offset_of(req, 0, com[0].offset - 1);
        krabka_message_t m = KRABKA_MESSAGE_INIT;
        m.topic = cmd;
        expect_err(krabka_leadership_produce_offsets(a, &back, 1, &m, 1, 0, NULL, ES), KRABKA_ERR_INVALID_ARG,
                   "backwards", "backwards");
    }

    /* 4. A polls the rest; B mints unseen; A's offsets are refused. */
    while (have < NREQ) {
        OK(krabka_input_poll(ia, (size_t)(NREQ - have), 30000, &recs, ES));
        have = take_records(recs, req, got, offs, have);
    }
    step(tv, "A polled the rest");
    krabka_client_t *cb = new_client(bootstrap, t2, "pipe-b");
    krabka_leadership_t *b = NULL;
    OK(krabka_client_acquire(cb, role, KRABKA_NTS, "b", KRABKA_NTS, 60000, &b, ES));
    krabka_leadership_state_t st;
    OK(krabka_leadership_state(a, &st));
    CHECK(st == KRABKA_LEADERSHIP_ACTIVE, "A is %d before its write: the view saw B", st);
    offsets(ia, 0, pos, req);
    {
        krabka_message_t msgs[NREQ];
        char vals[NREQ][16];
        size_t n = commands(cmd, got, FIRST, NREQ, msgs, vals);
        errstr[0] = 0;
        krabka_err_t e = krabka_leadership_produce_offsets(a, pos, PARTS, msgs, n, 30000, NULL, ES);
        CHECK(e == KRABKA_ERR_FENCED, "A's write with offsets: %s (%s), expected FENCED", krabka_err2name(e), errstr);
        CHECK(strstr(errstr, "PRODUCER_FENCED") != NULL || strstr(errstr, "INVALID_PRODUCER_EPOCH") != NULL,
              "not the broker's refusal: %s", errstr);
        printf("pipeline: %s: the deposed leader's commands and offsets refused: %s\n", tv, errstr);
    }
    step(tv, "A refused");
    OK(krabka_input_destroy(ia));
    CHECK(krabka_input_destroy(ia) == KRABKA_ERR_INVALID_HANDLE, "double destroy");

    /* 5. B: the async forms. */
    krabka_queue_t *q = NULL;
    OK(krabka_queue_new(&q));
    OK(krabka_leadership_consume_async(b, topics, 1, 30000, q, 7, ES));
    krabka_event_t *ev = wait_event(q, KRABKA_EVENT_CONSUME);
    krabka_err_t code;
    OK(krabka_event_error(ev, &code, ES));
    CHECK(code == KRABKA_OK, "B's consume: %s %s", krabka_err2name(code), errstr);
    krabka_input_t *ib = NULL;
    OK(krabka_event_take_input(ev, &ib, ES));
    krabka_input_t *again = (krabka_input_t *)0x1;
    OK(krabka_event_take_input(ev, &again, ES));
    CHECK(ib != NULL && again == NULL, "take_input gave %p then %p", (void *)ib, (void *)again);
    CHECK(krabka_event_take_records(ev, &recs, ES) == KRABKA_ERR_INVALID_ARG, "records of a CONSUME event");
    OK(krabka_event_destroy(ev));
    offsets(ib, 1, com, req);
    CHECK(com[0].offset == committed_by_a[0].offset && com[1].offset == committed_by_a[1].offset,
          "B starts at %" PRId64 "/%" PRId64 ", A committed %" PRId64 "/%" PRId64 " (its refused offsets must not "
          "count)",
          com[0].offset, com[1].offset, committed_by_a[0].offset, committed_by_a[1].offset);
    int bgot[NREQ];
    int64_t boffs[NREQ];
    int bhave = 0;
    while (bhave < NREQ - FIRST) {
        OK(krabka_input_poll_async(ib, 1000, 30000, q, 8, ES));
        ev = wait_event(q, KRABKA_EVENT_POLL);
        OK(krabka_event_error(ev, &code, ES));
        CHECK(code == KRABKA_OK, "B's poll: %s %s", krabka_err2name(code), errstr);
        if (code != KRABKA_OK)
            exit(1);
        OK(krabka_event_take_records(ev, &recs, ES));
        OK(krabka_event_destroy(ev));
        bhave = take_records(recs, req, bgot, boffs, bhave);
    }
    CHECK(bhave == NREQ - FIRST, "B read %d records, %d expected (what A's committed write left)", bhave, NREQ - FIRST);
    {
        /* The first record B reads of each partition is the committed one. */
        int64_t first[PARTS] = {-1, -1};
        for (int i = 0; i < bhave; i++)
            if (first[bgot[i] % PARTS] < 0)
                first[bgot[i] % PARTS] = boffs[i];
        for (int p = 0; p < PARTS; p++) /* none left when A's write covered the partition */
            CHECK(first[p] == (com[p].offset < NREQ / PARTS ? com[p].offset : -1),
                  "B's first record of partition %d is at %" PRId64 ", committed %" PRId64, p, first[p], com[p].offset);
    }
    {
        krabka_message_t msgs[NREQ];
        char vals[NREQ][16];
        size_t n = commands(cmd, bgot, 0, bhave, msgs, vals);
        offsets(ib, 0, pos, req);
        OK(krabka_leadership_produce_offsets_async(b, pos, PARTS, msgs, n, 30000, q, 9, ES));
        ev = wait_event(q, KRABKA_EVENT_PRODUCE);
        OK(krabka_event_error(ev, &code, ES));
        CHECK(code == KRABKA_OK, "B's write: %s %s", krabka_err2name(code), errstr);
        size_t count = 0;
        OK(krabka_event_results(ev, NULL, 0, &count, ES));
        CHECK(count == n, "B's write: %zu results for %zu commands", count, n);
        OK(krabka_event_destroy(ev));
    }
    offsets(ib, 1, com, req);
    CHECK(com[0].offset == NREQ / PARTS && com[1].offset == NREQ / PARTS, "B committed %" PRId64 "/%" PRId64,
          com[0].offset, com[1].offset);
    OK(krabka_input_destroy(ib));
    OK(krabka_queue_destroy(q));
    OK(krabka_leadership_resign(b, 30000, ES));
    OK(krabka_leadership_destroy(b));
    OK(krabka_leadership_destroy(a));
    OK(krabka_client_destroy(cb));
    OK(krabka_client_destroy(ca));

    step(tv, "B done");
    /* 6. The command log. */
    read_back(tv, bootstrap, cmd);
}

int main(void) {
    const char *tv2 = getenv("KRABKA_BOOTSTRAP"), *tv1 = getenv("KRABKA_BOOTSTRAP_TV1");
    ktopic = getenv("KRABKA_KTOPIC");
    kread = getenv("KRABKA_KREAD");
    example = getenv("KRABKA_PIPELINE_EXAMPLE");
    if (!tv2 || !tv1 || !ktopic || !kread || !example) {
        printf("pipeline: FAIL: set KRABKA_BOOTSTRAP, KRABKA_BOOTSTRAP_TV1, KRABKA_KTOPIC, KRABKA_KREAD and "
               "KRABKA_PIPELINE_EXAMPLE (make capi-pipeline)\n");
        return 1;
    }
    run_cluster("tv2", tv2);
    run_cluster("tv1", tv1);
    run_example(tv2);
    printf("pipeline: %d checks, %d passed, %d failed\n", checks, checks - failures, failures);
    return failures ? 1 : 0;
}
