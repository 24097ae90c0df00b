/* SPDX-License-Identifier: MIT */
/* text_file.c — whole files: written atomically (temporary file, fsync, rename, and the
 * folder synced) and read back into one string. */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/file_open.h"
#include "io/text_file.h"

gan_status gan_file_write_atomic(const char *path, const char *data, size_t size,
                                 struct gan_error *err)
{
    size_t n = strlen(path);
    char *tmp = malloc(n + 16);
    if (!tmp)
        return gan_error_nomem(err, "writing a file");
    const char *slash = strrchr(path, '/');
    size_t dlen = slash ? (size_t)(slash - path) : 0;
    if (slash)
        snprintf(tmp, n + 16, "%.*s/.%s.XXXXXX", (int)dlen, path, slash + 1);
    else
        snprintf(tmp, n + 16, ".%s.XXXXXX", path);
    int fd = mkstemp(tmp);
    if (fd < 0) {
        gan_status st = gan_error_set(err, GAN_ERR_IO,
                                      "cannot write %s: cannot create a temporary file beside it (%s); "
                                      "create the folder, make it writable, or choose another path",
                                      path, strerror(errno));
        free(tmp);
        return st;
    }
    /* mkstemp makes the file 0600; results are for reading by others too. */
    mode_t mask = umask(0);
    umask(mask);
    fchmod(fd, 0666 & ~mask);
    const char *p = data;
    size_t left = size;
    int bad = 0;
    while (left > 0 && !bad) {
        ssize_t w = write(fd, p, left);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0)
            bad = 1;
        else {
            p += w;
            left -= (size_t)w;
        }
    }
    int saved = errno;
    if (!bad && fsync(fd) != 0) {
        bad = 1;
        saved = errno;
    }
    if (close(fd) != 0 && !bad) {
        bad = 1;
        saved = errno;
    }
    if (!bad && rename(tmp, path) != 0) {
        bad = 1;
        saved = errno;
    }
    if (bad) {
        unlink(tmp);
        free(tmp);
        return gan_error_set(err, GAN_ERR_IO, "cannot write %s: %s", path, strerror(saved));
    }
    free(tmp);
    char dir[4096];
    snprintf(dir, sizeof dir, "%.*s", slash ? (int)dlen : 1, slash ? path : ".");
    int dfd = open(dir, O_RDONLY | O_DIRECTORY);
    if (dfd >= 0) {
        fsync(dfd);
        close(dfd);
    }
    return GAN_OK;
}

gan_status gan_file_read_text(const char *path, char **out, struct gan_error *err)
{
    *out = NULL;
    const char *kind;
    FILE *f = gan_fopen_regular(path, &kind);
    if (!f && kind)
        return gan_error_set(err, GAN_ERR_CONFIG,
                             "cannot read %s: it is %s, not a regular file; only regular files are read",
                             path, kind);
    if (!f)
        return gan_error_set(err, errno == ENOENT ? GAN_ERR_NOT_FOUND : GAN_ERR_IO,
                             "cannot read %s: %s", path, strerror(errno));
    size_t cap = 4096, len = 0;
    char *buf = malloc(cap);
    gan_status st = GAN_OK;
    while (buf) {
        if (len + 1 >= cap) {
            char *grown = realloc(buf, cap * 2);
            if (!grown) {
                free(buf);
                buf = NULL;
                break;
            }
            buf = grown;
            cap *= 2;
        }
        size_t got = fread(buf + len, 1, cap - len - 1, f);
        len += got;
        if (got == 0)
            break;
    }
    if (!buf)
        st = gan_error_nomem(err, "writing a file");
    else if (ferror(f))
        st = gan_error_set(err, GAN_ERR_IO, "cannot read %s: %s", path, strerror(errno));
    fclose(f);
    if (st != GAN_OK) {
        free(buf);
        return st;
    }
    buf[len] = '\0';
    *out = buf;
    return GAN_OK;
}
