/* Internal to capi: const-qualified aliases used in //export signatures so
 * that the prototypes cgo generates match include/krabka_coord.h exactly.
 * Declarations only (cgo copies this into two C files). */
#ifndef KC_TYPES_H
#define KC_TYPES_H
#include <stdlib.h>
#include <string.h>
#include "krabka_coord.h"
#include "krabka_coord_testing.h"

typedef const char kc_cchar_t;
typedef const uint8_t kc_cuint8_t;
typedef const krabka_conf_t kc_cconf_t;
typedef const krabka_leadership_t kc_cleadership_t;
typedef const krabka_status_t kc_cstatus_t;
typedef const krabka_key_t kc_ckey_t;
typedef const krabka_registration_t kc_cregistration_t;
typedef const krabka_lease_t kc_clease_t;
typedef const krabka_message_t kc_cmessage_t;
typedef const krabka_client_t kc_cclient_t;
typedef const krabka_header_t kc_cheader_t;
typedef const krabka_event_t kc_cevent_t;
typedef const krabka_watch_event_t kc_cwatch_event_t;
typedef const krabka_err_desc_t kc_cerr_desc_t;
typedef const krabka_acquire_options_t kc_cacquire_options_t;
typedef const krabka_testing_cluster_t kc_ctesting_cluster_t;
typedef const krabka_input_t kc_cinput_t;
typedef const krabka_records_t kc_crecords_t;
typedef const krabka_offset_t kc_coffset_t;
typedef const char *kc_ccstr_t;

/* kc_fd.c */
int kc_eventfd(void);
void kc_eventfd_signal(int fd);
void kc_eventfd_reset(int fd);
int kc_pipe(int *rd, int *wr);
void kc_pipe_signal(int fd);
void kc_pipe_drain(int fd);
void kc_close(int fd);
void kc_call_log(krabka_log_cb cb, void *opaque, krabka_log_level_t level, const char *line);
#endif
