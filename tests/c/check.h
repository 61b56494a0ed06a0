/* Checks shared by the live C tests (live.c, events.c, fork.c). Define
 * CHECK_NAME (the program's name, for messages) before including. */
#ifndef KRABKA_TESTS_CHECK_H
#define KRABKA_TESTS_CHECK_H

#include <stdio.h>
#include <stdlib.h>

#include "krabka_coord.h"

static int failures, checks;
static char errstr[512];

/* Counts a check; prints the condition and a formatted reason when it fails. */
#define CHECK(cond, ...)                                                          \
    do {                                                                          \
        checks++;                                                                 \
        if (!(cond)) {                                                            \
            failures++;                                                           \
            printf("FAIL line %d: %s: ", __LINE__, #cond);                        \
            printf(__VA_ARGS__);                                                  \
            printf("\n");                                                         \
        }                                                                         \
    } while (0)

/* A step that must succeed: the program stops after a failed one. */
#define OK(call)                                                                  \
    do {                                                                          \
        errstr[0] = '\0';                                                         \
        krabka_err_t e_ = (call);                                                 \
        CHECK(e_ == KRABKA_OK, "%s: %s", krabka_err2name(e_), errstr);            \
        if (e_ != KRABKA_OK) {                                                    \
            printf(CHECK_NAME ": stopping after a failed step\n");                \
            exit(1);                                                              \
        }                                                                         \
    } while (0)

#define ES errstr, sizeof errstr

#endif
