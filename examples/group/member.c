/*
 * A member of a role group in C: the C third of the mixed-language group
 * example (examples/group/README.md).
 *
 *   group_member BOOTSTRAP GROUP SHARDS MEMBER [WEIGHT]
 *
 * Joins GROUP (SHARDS shards) as MEMBER (krabka_group_join) and prints one
 * JSON line per change of its shards, as member.py and member.js do:
 * {"member","event":"assigned","shard","token","held"} and
 * {"member","event":"revoked","shard","reason","held"}, after
 * {"event":"ready"}. For each assigned shard it writes one guarded record,
 * "<member>:<shard>", to $KRABKA_GROUP_TOPIC (when set) under the shard's
 * own leadership (taken from the event). Leaves the group, handing its
 * shards over, when stdin closes.
 */
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "krabka_coord.h"

#define MAXSHARDS 4096

static char errstr[512];
static const char *member;
static int nshards;
static unsigned char held[MAXSHARDS];

static void print_held(void) {
    int first = 1;
    printf("[");
    for (int s = 0; s < nshards; s++) {
        if (held[s]) {
            printf("%s%d", first ? "" : ",", s);
            first = 0;
        }
    }
    printf("]");
}

/* Handles one event; returns 1 once the member stopped (GROUP_STOPPED). */
static int handle(krabka_event_t *ev, const char *topic) {
    krabka_event_type_t type = KRABKA_EVENT_NONE;
    krabka_event_type(ev, &type);
    if (type == KRABKA_EVENT_GROUP_STOPPED) {
        printf("{\"member\":\"%s\",\"event\":\"stopped\"}\n", member);
        fflush(stdout);
        return 1;
    }
    if (type != KRABKA_EVENT_GROUP)
        return 0;
    krabka_group_event_kind_t kind = 0;
    int32_t shard = -1;
    krabka_token_t token = {0, 0};
    if (krabka_event_group_kind(ev, &kind, errstr, sizeof errstr) || krabka_event_shard(ev, &shard, errstr, sizeof errstr) ||
        krabka_event_token(ev, &token, errstr, sizeof errstr) || shard < 0 || shard >= nshards) {
        fprintf(stderr, "group_member: reading an event: %s\n", errstr);
        return 0;
    }
    if (kind == KRABKA_SHARD_ASSIGNED) {
        krabka_leadership_t *l = NULL;
        held[shard] = 1;
        printf("{\"member\":\"%s\",\"event\":\"assigned\",\"shard\":%d,\"token\":\"%lld:%d\",\"held\":", member, (int)shard,
               (long long)token.producer_id, (int)token.producer_epoch);
        print_held();
        printf("}\n");
        fflush(stdout);
        if (topic && krabka_event_take_leadership(ev, &l, errstr, sizeof errstr) == KRABKA_OK && l) {
            char value[300];
            krabka_message_t msg = KRABKA_MESSAGE_INIT;
            snprintf(value, sizeof value, "%s:%d", member, (int)shard);
            msg.topic = topic;
            msg.value = (const uint8_t *)value;
            msg.value_len = strlen(value);
            krabka_err_t e = krabka_leadership_produce(l, &msg, 1, KRABKA_TIMEOUT_DEFAULT, NULL, errstr, sizeof errstr);
            if (e != KRABKA_OK) {
                printf("{\"member\":\"%s\",\"event\":\"write-refused\",\"shard\":%d,\"error\":\"%s\"}\n", member, (int)shard,
                       krabka_err2name(e));
                fflush(stdout);
            }
            krabka_leadership_destroy(l); /* the handle only: the group keeps the shard */
        }
    } else if (kind == KRABKA_SHARD_REVOKED) {
        krabka_err_t code = KRABKA_OK;
        krabka_event_error(ev, &code, NULL, 0);
        held[shard] = 0;
        printf("{\"member\":\"%s\",\"event\":\"revoked\",\"shard\":%d,\"reason\":\"%s\",\"held\":", member, (int)shard,
               krabka_err2name(code));
        print_held();
        printf("}\n");
        fflush(stdout);
    }
    return 0;
}

int main(int argc, char **argv) {
    if (argc < 5) {
        fprintf(stderr, "usage: group_member BOOTSTRAP GROUP SHARDS MEMBER [WEIGHT]\n");
        return 2;
    }
    const char *topic = getenv("KRABKA_GROUP_TOPIC");
    member = argv[4];
    nshards = atoi(argv[3]);
    int weight = argc > 5 ? atoi(argv[5]) : 1;
    if (nshards < 1 || nshards > MAXSHARDS) {
        fprintf(stderr, "group_member: SHARDS must be 1 to %d\n", MAXSHARDS);
        return 2;
    }
    krabka_conf_t *conf = krabka_conf_new();
    krabka_client_t *client = NULL;
    krabka_queue_t *queue = NULL;
    krabka_group_t *group = NULL;
    const char *settings[][2] = {{"bootstrap.servers", argv[1]},      {"client.id", member},
                                 {"krabka.lease.ms", "3000"},         {"krabka.renew.interval.ms", "1000"},
                                 {"krabka.challenge.stagger.ms", "500"}, {"krabka.poll.interval.ms", "200"}};
    for (size_t i = 0; i < sizeof settings / sizeof settings[0]; i++) {
        if (krabka_conf_set(conf, settings[i][0], settings[i][1], errstr, sizeof errstr)) {
            fprintf(stderr, "group_member: %s: %s\n", settings[i][0], errstr);
            return 1;
        }
    }
    krabka_err_t e = krabka_client_new(conf, &client, errstr, sizeof errstr);
    krabka_conf_destroy(conf);
    if (e || (e = krabka_queue_new(&queue)) ||
        (e = krabka_group_join(client, argv[2], KRABKA_NTS, nshards, member, KRABKA_NTS, weight, 0, queue, 0, &group, errstr,
                               sizeof errstr))) {
        fprintf(stderr, "group_member: %s: %s\n", krabka_err2name(e), errstr);
        return 1;
    }
    printf("{\"member\":\"%s\",\"event\":\"ready\"}\n", member);
    fflush(stdout);

    int qfd = -1, stopped = 0, leaving = 0;
    krabka_queue_fd(queue, &qfd);
    while (!stopped) {
        struct pollfd p[2] = {{qfd, POLLIN, 0}, {leaving ? -1 : STDIN_FILENO, POLLIN, 0}};
        poll(p, 2, 500);
        krabka_event_t *ev = NULL;
        while (!stopped && krabka_queue_poll(queue, &ev) == KRABKA_OK && ev) {
            stopped = handle(ev, topic);
            krabka_event_destroy(ev);
        }
        if (!leaving && (p[1].revents & (POLLIN | POLLHUP))) {
            char buf[256];
            if (read(STDIN_FILENO, buf, sizeof buf) <= 0) {
                leaving = 1; /* stdin closed: hand the shards over and leave */
                if (krabka_group_leave(group, 30000, errstr, sizeof errstr) != KRABKA_OK)
                    fprintf(stderr, "group_member: leave: %s\n", errstr);
            }
        }
    }
    krabka_group_destroy(group);
    krabka_queue_destroy(queue);
    krabka_client_destroy(client);
    return 0;
}
