/* A C host that calls the library on the main thread, first on the thread's
 * own stack and then on a stack of its own (as Node's koffi does, here with
 * makecontext/swapcontext), must not make the library read a file per call.
 * Go's cgo callback asks for the thread's stack bounds whenever the stack
 * pointer is outside the ones it recorded; for the main thread glibc's
 * pthread_getattr_np reads /proc/self/maps. capi/kc_stack.c answers those
 * from memory (build.sh links with -wrap=pthread_getattr_np). Counted, not
 * timed: the main thread's read() calls in /proc/thread-self/io.
 *   mainstack   (exit 0: every check passed) */
#define _GNU_SOURCE
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <ucontext.h>
#include <unistd.h>

#define CHECK_NAME "mainstack"
#include "check.h"

#define CALLS 1000
#define ALT_STACK_SIZE (1024 * 1024)

/* The calling thread's read() system calls so far (-1: unreadable). */
static long long thread_syscr(void) {
    FILE *f = fopen("/proc/thread-self/io", "r");
    if (f == NULL) return -1;
    char line[128];
    long long v = -1;
    while (fgets(line, sizeof line, f) != NULL)
        if (sscanf(line, "syscr: %lld", &v) == 1) break;
    fclose(f);
    return v;
}

static int bad_answers;

static void calls(void) {
    for (int i = 0; i < CALLS; i++) {
        if (krabka_abi_version() != KRABKA_ABI_VERSION) bad_answers++;
        int32_t p = -1;
        if (krabka_role_partition("controller", 10, 16, &p, ES) != KRABKA_OK || p < 0 || p >= 16) bad_answers++;
    }
}

/* Reads made by CALLS rounds of calls, after a first round (the answers
 * that are remembered, or Go's accurate bounds on the thread's own stack). */
static long long reads_during(void (*run)(void)) {
    run();
    long long before = thread_syscr();
    run();
    long long after = thread_syscr();
    CHECK(before >= 0 && after >= 0,
          "/proc/thread-self/io cannot be read: this test needs Linux with per-task I/O accounting");
    return after - before;
}

static ucontext_t main_ctx, alt_ctx;
static void (*alt_fn)(void);

static void alt_entry(void) { alt_fn(); } /* returns to main_ctx (uc_link) */

static void on_alt_stack(void) {
    swapcontext(&main_ctx, &alt_ctx);
}

static void alt_calls(void) { calls(); }

static void *alt_stack_mem(void) {
    static void *mem;
    if (mem == NULL && (mem = malloc(ALT_STACK_SIZE)) == NULL) {
        printf("mainstack: out of memory\n");
        exit(1);
    }
    return mem;
}

static void run_on_alt(void) {
    alt_fn = alt_calls;
    getcontext(&alt_ctx);
    alt_ctx.uc_link = &main_ctx;
    alt_ctx.uc_stack.ss_sp = alt_stack_mem();
    alt_ctx.uc_stack.ss_size = ALT_STACK_SIZE;
    makecontext(&alt_ctx, alt_entry, 0);
    on_alt_stack();
}

int main(void) {
    long long own = reads_during(calls);
    /* One fopen of /proc/thread-self/io reads it in one or two read() calls. */
    CHECK(own < 10, "%d calls on the main thread's own stack made %lld read() calls", 2 * CALLS, own);

    long long alt = reads_during(run_on_alt);
    CHECK(alt < 10,
          "%d calls on the main thread, on a stack of the host's own, made %lld read() calls: Go's cgo "
          "callback re-reads the stack bounds from /proc/self/maps on every call (the library must be linked "
          "with -Wl,-wrap=pthread_getattr_np; build.sh, capi/kc_stack.c)",
          2 * CALLS, alt);

    /* Back on the own stack after the other one: still answered, still no reads. */
    long long again = reads_during(calls);
    CHECK(again < 10, "%d calls on the own stack after the other stack made %lld read() calls", 2 * CALLS, again);
    CHECK(bad_answers == 0, "%d wrong answers from the library", bad_answers);

    printf("mainstack: %s: %d checks, %d failed (reads per %d calls: own stack %lld, other stack %lld, own again %lld)\n",
           failures ? "FAIL" : "ok", checks, failures, 2 * CALLS, own, alt, again);
    return failures ? 1 : 0;
}
