/* The public header compiles on its own as C99 with -Wall -Wextra -Werror
 * -pedantic, and its macros and types have the documented shapes. */
#include <stddef.h>

#include "krabka_coord.h"
#include "krabka_coord_testing.h" /* the test aids header too (it includes the main one) */

typedef char check_nts[(KRABKA_NTS == (size_t)-1) ? 1 : -1];
typedef char check_name_buf[(KRABKA_NAME_BUF > KRABKA_NAME_MAX) ? 1 : -1];
typedef char check_version[(KRABKA_VERSION_NUMBER == 20000) ? 1 : -1];
typedef char check_abi[(KRABKA_ABI_VERSION == 2) ? 1 : -1];
typedef char check_ok[(KRABKA_OK == 0) ? 1 : -1];
/* krabka_message_t starts with its size (docs/ABI.md). */
typedef char check_message_size_first[(offsetof(krabka_message_t, size) == 0) ? 1 : -1];
typedef char check_event_types[(KRABKA_EVENT_SET_METADATA == 12) ? 1 : -1];
typedef char check_testing_name_max[(KRABKA_TESTING_NAME_MAX == 64) ? 1 : -1];
typedef char check_testing_start[(KRABKA_TESTING_CLOCK_START_MS == INT64_C(1767225600000)) ? 1 : -1];

int header_c99_uses(void);
int header_c99_uses(void) {
    krabka_token_t t = {1, 2};
    krabka_message_t m = KRABKA_MESSAGE_INIT;
    krabka_header_t h = {"k", NULL, 0};
    const krabka_err_desc_t *descs = NULL;
    size_t n = 0;
    (void)sizeof(krabka_key_t);
    (void)descs;
    (void)n;
    m.headers = &h;
    m.header_count = 1;
    return (int)t.producer_epoch + (int)(m.size == sizeof(krabka_message_t)) + (m.partition == KRABKA_PARTITION_ANY);
}
