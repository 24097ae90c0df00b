/* SPDX-License-Identifier: MIT */
/* fuzz_common.c — the failure report and the scratch file the harnesses share. */
#include "config.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "fuzz.h"

void fuzz_fail(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fputs("fuzz: ", stderr);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
    /* abort, not exit: libFuzzer then saves the input as a crash, with a stack trace. */
    abort();
}

static char scratch_path[4096];
static int scratch_fd = -1;
static int scratch_named;        /* a file in a folder, to remove at exit */

static void scratch_remove(void)
{
    if (scratch_fd >= 0) {
        close(scratch_fd);
        if (scratch_named)
            unlink(scratch_path);
        scratch_fd = -1;
    }
}

/* An anonymous file in memory where the system has them (Linux): a reader opens it by
 * its /proc/self/fd name as it would open any file, and rewriting it thousands of times
 * a second costs no file system work (on ext4, three times the fuzzer's own time). */
static int scratch_in_memory(void)
{
#ifdef MFD_CLOEXEC
    int fd = memfd_create("ganctl-fuzz", MFD_CLOEXEC);
    if (fd >= 0) {
        snprintf(scratch_path, sizeof scratch_path, "/proc/self/fd/%d", fd);
        if (access(scratch_path, R_OK) == 0)
            return fd;
        close(fd);
    }
#endif
    return -1;
}

const char *fuzz_scratch_file(const uint8_t *data, size_t size)
{
    if (scratch_fd < 0) {
        scratch_fd = scratch_in_memory();
        if (scratch_fd < 0) {
            const char *dir = getenv("TMPDIR");
            snprintf(scratch_path, sizeof scratch_path, "%s/ganctl-fuzz.XXXXXX",
                     dir && *dir ? dir : "/tmp");
            scratch_fd = mkstemp(scratch_path);
            if (scratch_fd < 0)
                fuzz_fail("cannot make a scratch file %s: %s", scratch_path, strerror(errno));
            scratch_named = 1;
        }
        atexit(scratch_remove);
    }
    /* One file rewritten in place: no file is created per input, and the reader opens
     * it afresh by name, at offset 0, as it would open any file. */
    if (ftruncate(scratch_fd, 0) != 0)
        fuzz_fail("cannot truncate %s: %s", scratch_path, strerror(errno));
    size_t done = 0;
    while (done < size) {
        ssize_t n = pwrite(scratch_fd, data + done, size - done, (off_t)done);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            fuzz_fail("cannot write %s: %s", scratch_path, strerror(errno));
        done += (size_t)n;
    }
    return scratch_path;
}
