/* The main thread's stack bounds, answered from memory.
 *
 * Go's cgo callback path (runtime.callbackUpdateSystemStack, for a thread
 * that Go did not create) asks runtime/cgo's x_cgo_getstackbound for the
 * calling thread's stack whenever the stack pointer is outside the bounds it
 * recorded, or those bounds were never confirmed. x_cgo_getstackbound calls
 * pthread_getattr_np, and for the process's main thread glibc answers that by
 * opening and reading /proc/self/maps (one openat and about a dozen reads,
 * 100 µs to 2 ms depending on the size of the address space). A host that
 * calls us on a stack of its own (Node's koffi runs native calls on one) is
 * never inside the main thread's bounds, so Go never confirms them and asks
 * again on every call.
 *
 * build.sh links the shared library with -Wl,-wrap=pthread_getattr_np:
 * the references to pthread_getattr_np inside the library (runtime/cgo's)
 * then call __wrap_pthread_getattr_np below; the host's own calls are not
 * affected (--wrap rebinds only the objects linked into this library, and the
 * version script exports only krabka_*). Without --wrap (go test, the
 * c-archive) nothing calls this function and __real_pthread_getattr_np is a
 * weak undefined reference that stays unresolved.
 *
 * What is answered from memory, and why it is never a wrong answer that Go
 * uses: only the main thread (gettid() == getpid(); that thread lives as long
 * as the process and its stack top never moves), and only when the caller is
 * NOT running inside the bounds remembered from glibc's first answer. When
 * it is inside (an ordinary C host calling on its own stack), glibc is asked
 * every time, so whatever bounds Go accepts as accurate are glibc's own
 * current answer (and Go asks only once then, since it marks them accurate).
 * Outside them, Go discards any answer that does not contain its stack
 * pointer and falls back to its estimate (SP-32KiB .. SP+1KiB), exactly as it
 * did with glibc's answer: glibc's answer can only grow downwards from the
 * same top (RLIMIT_STACK raised later) within the gap below the stack
 * mapping, never into another mapping such as koffi's stack, so a fresh
 * answer would not have contained that stack pointer either. Other threads,
 * and a child after fork (another process id), go to glibc.
 *
 * Only the main thread reads and writes the remembered answer, so no lock is
 * needed. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <errno.h>
#include <pthread.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/syscall.h>
#include <unistd.h>

int __real_pthread_getattr_np(pthread_t thread, pthread_attr_t *attr) __attribute__((weak));
int __wrap_pthread_getattr_np(pthread_t thread, pthread_attr_t *attr);

static pid_t kc_stack_pid;      /* the process whose main thread was asked; 0: none yet */
static uintptr_t kc_stack_lo;   /* glibc's first answer: lowest address */
static uintptr_t kc_stack_hi;   /* one past the highest */
static size_t kc_stack_guard;   /* and its guard size */
static unsigned long kc_stack_hits; /* answers given from memory (tests read it with a debugger) */

int __wrap_pthread_getattr_np(pthread_t thread, pthread_attr_t *attr) {
    if (__real_pthread_getattr_np == NULL) return ENOSYS; /* linked without --wrap: unreachable */
    pid_t pid = getpid();
    /* syscall(SYS_gettid): gettid() needs glibc 2.30, the release floor is 2.28. */
    if (!pthread_equal(thread, pthread_self()) || (pid_t)syscall(SYS_gettid) != pid)
        return __real_pthread_getattr_np(thread, attr);
    uintptr_t here = (uintptr_t)__builtin_frame_address(0);
    if (kc_stack_pid == pid && (here < kc_stack_lo || here >= kc_stack_hi)) {
        /* glibc's pthread_getattr_np initialises attr itself (the caller's
         * earlier pthread_attr_init is overwritten, nothing is leaked). */
        int r = pthread_attr_init(attr);
        if (r == 0) r = pthread_attr_setstack(attr, (void *)kc_stack_lo, kc_stack_hi - kc_stack_lo);
        if (r == 0) r = pthread_attr_setguardsize(attr, kc_stack_guard);
        if (r == 0) {
            kc_stack_hits++;
            return 0;
        }
        pthread_attr_destroy(attr);
    }
    int r = __real_pthread_getattr_np(thread, attr);
    if (r == 0 && kc_stack_pid != pid) {
        void *addr;
        size_t size, guard;
        if (pthread_attr_getstack(attr, &addr, &size) == 0 && pthread_attr_getguardsize(attr, &guard) == 0 &&
            addr != NULL && size > 0) {
            kc_stack_lo = (uintptr_t)addr;
            kc_stack_hi = (uintptr_t)addr + size;
            kc_stack_guard = guard;
            kc_stack_pid = pid;
        }
    }
    return r;
}
