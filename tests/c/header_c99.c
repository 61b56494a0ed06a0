/* The public header compiles on its own as C99 with -Wall -Wextra -Werror
 * -pedantic, and its macros and types have the documented shapes. */
#include "krabka_coord.h"

typedef char check_nts[(KRABKA_NTS == (size_t)-1) ? 1 : -1];
typedef char check_name_buf[(KRABKA_NAME_BUF > KRABKA_NAME_MAX) ? 1 : -1];
typedef char check_version[(KRABKA_VERSION_NUMBER == 10000) ? 1 : -1];
typedef char check_ok[(KRABKA_OK == 0) ? 1 : -1];

int header_c99_uses(void);
int header_c99_uses(void) {
    krabka_token_t t = {1, 2};
    (void)sizeof(krabka_key_t);
    (void)sizeof(krabka_message_t);
    return (int)t.producer_epoch;
}
