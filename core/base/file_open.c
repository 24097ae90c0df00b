/* SPDX-License-Identifier: MIT */
/* file_open.c — opening a file to read only when it is a regular file. */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/file_open.h"

static const char *kind_of(mode_t mode)
{
    if (S_ISFIFO(mode))
        return "a FIFO";
    if (S_ISDIR(mode))
        return GAN_FILE_KIND_FOLDER;
    if (S_ISCHR(mode) || S_ISBLK(mode))
        return "a device";
    if (S_ISSOCK(mode))
        return "a socket";
    return "not a regular file";
}

int gan_open_regular(const char *path, const char **kind)
{
    *kind = NULL;
    /* O_NONBLOCK: opening a FIFO with no writer would otherwise wait for one, forever. */
    int fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
    if (fd < 0)
        return -1;
    struct stat sb;
    if (fstat(fd, &sb) != 0) {
        int e = errno;
        close(fd);
        errno = e;
        return -1;
    }
    if (!S_ISREG(sb.st_mode)) {
        *kind = kind_of(sb.st_mode);
        close(fd);
        errno = 0;
        return -1;
    }
    /* A regular file's reads never wait; clearing the flag keeps them ordinary reads. */
    int flags = fcntl(fd, F_GETFL);
    if (flags < 0 || fcntl(fd, F_SETFL, flags & ~O_NONBLOCK) != 0) {
        int e = errno;
        close(fd);
        errno = e;
        return -1;
    }
    return fd;
}

int gan_is_dev_null(const char *path)
{
    struct stat sb, null_sb;
    return stat(path, &sb) == 0 && S_ISCHR(sb.st_mode) && stat("/dev/null", &null_sb) == 0 &&
           S_ISCHR(null_sb.st_mode) && sb.st_rdev == null_sb.st_rdev;
}

FILE *gan_fopen_regular(const char *path, const char **kind)
{
    int fd = gan_open_regular(path, kind);
    if (fd < 0)
        return NULL;
    FILE *f = fdopen(fd, "rb");
    if (!f) {
        int e = errno;
        close(fd);
        errno = e;
    }
    return f;
}
