// A C++11 program includes the header, links against the library and calls
// it (g++ -std=c++11 -Wall -Wextra -Werror -pedantic).
#include <cstdio>
#include <cstdint>
#include <cstring>
#include <string>

#include "krabka_coord.h"
#include "krabka_coord_testing.h"

int main() {
    krabka_token_t a = {4242, 7}, b = krabka_token_no_epoch();
    char text[KRABKA_TOKEN_TEXT_MAX];
    if (krabka_token_format(a, text, sizeof text) != KRABKA_OK || std::string(text) != "4242:7") {
        std::printf("cxx_header: FAIL token_format\n");
        return 1;
    }
    if (krabka_token_compare(a, b) != 1 || !krabka_token_supersedes(a, b)) {
        std::printf("cxx_header: FAIL token_compare\n");
        return 1;
    }
    char errstr[128];
    // The test aids link and answer from C++ too.
    krabka_testing_cluster_t *cluster = nullptr;
    std::int64_t now = 0;
    if (krabka_testing_cluster_new("cxx", KRABKA_NTS, 1, 0, &cluster, errstr, sizeof errstr) != KRABKA_OK ||
        krabka_testing_clock_now(cluster, &now, errstr, sizeof errstr) != KRABKA_OK ||
        now != KRABKA_TESTING_CLOCK_START_MS || krabka_testing_cluster_destroy(cluster) != KRABKA_OK) {
        std::printf("cxx_header: FAIL testing cluster\n");
        return 1;
    }
    krabka_err_t err = krabka_role_validate("", 0, errstr, sizeof errstr);
    if (err != KRABKA_ERR_EMPTY_ROLE || std::strlen(errstr) == 0) {
        std::printf("cxx_header: FAIL role_validate gave %s\n", krabka_err2name(err));
        return 1;
    }
    krabka_conf_t *conf = krabka_conf_new();
    if (conf == nullptr || krabka_conf_destroy(conf) != KRABKA_OK) {
        std::printf("cxx_header: FAIL conf\n");
        return 1;
    }
    krabka_message_t m = KRABKA_MESSAGE_INIT;
    if (m.size != sizeof(krabka_message_t) || m.partition != KRABKA_PARTITION_ANY || m.headers != nullptr) {
        std::printf("cxx_header: FAIL KRABKA_MESSAGE_INIT\n");
        return 1;
    }
    const krabka_err_desc_t *descs = nullptr;
    size_t n = 0;
    krabka_get_err_descs(&descs, &n);
    if (descs == nullptr || n < 2 || descs[0].code != KRABKA_OK || std::string(descs[0].name) != "OK") {
        std::printf("cxx_header: FAIL krabka_get_err_descs\n");
        return 1;
    }
    krabka_queue_t *q = nullptr;
    krabka_event_t *ev = reinterpret_cast<krabka_event_t *>(&n);
    if (krabka_queue_new(&q) != KRABKA_OK || krabka_queue_poll(q, &ev) != KRABKA_OK || ev != nullptr ||
        krabka_queue_destroy(q) != KRABKA_OK) {
        std::printf("cxx_header: FAIL queue\n");
        return 1;
    }
    std::printf("cxx_header: ok (C++11, library %s)\n", krabka_version());
    return 0;
}
