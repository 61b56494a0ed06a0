/* File descriptors and callbacks of the C API (declared in kc_types.h):
 * kept out of the cgo preambles so that the header cgo generates holds
 * declarations only. */
#include <fcntl.h>
#include <stdint.h>
#include <unistd.h>
#include <sys/eventfd.h>
#include "kc_types.h"

int kc_eventfd(void) { return eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC); }

void kc_eventfd_signal(int fd) {
    uint64_t one = 1;
    ssize_t r = write(fd, &one, sizeof one);
    (void)r;
}

void kc_eventfd_reset(int fd) {
    uint64_t v;
    ssize_t r = read(fd, &v, sizeof v);
    (void)r;
}

static int kc_nonblock_cloexec(int fd) {
    int fl = fcntl(fd, F_GETFL);
    if (fl < 0 || fcntl(fd, F_SETFL, fl | O_NONBLOCK) < 0) return -1;
    return fcntl(fd, F_SETFD, FD_CLOEXEC);
}

int kc_pipe(int *rd, int *wr) {
    int fds[2];
    if (pipe(fds) != 0) return -1;
    if (kc_nonblock_cloexec(fds[0]) < 0 || kc_nonblock_cloexec(fds[1]) < 0) {
        close(fds[0]);
        close(fds[1]);
        return -1;
    }
    *rd = fds[0];
    *wr = fds[1];
    return 0;
}

void kc_pipe_signal(int fd) {
    char b = 1;
    ssize_t r = write(fd, &b, 1);
    (void)r;
}

void kc_pipe_drain(int fd) {
    char buf[64];
    while (read(fd, buf, sizeof buf) > 0) {
    }
}

void kc_close(int fd) { close(fd); }

void kc_call_log(krabka_log_cb cb, void *opaque, krabka_log_level_t level, const char *line) {
    cb(opaque, level, line);
}
