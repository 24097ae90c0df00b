/* SPDX-License-Identifier: MIT */
/* file_open.h — opening a file to read only when it is a regular file, so that a FIFO,
 * a device or a socket named as settings or data is refused at once instead of waited on. */
#ifndef GANCTL_BASE_FILE_OPEN_H
#define GANCTL_BASE_FILE_OPEN_H

#include <stdio.h>

/* Opens `path` read-only (close-on-exec) when it is a regular file. Returns the
 * descriptor; or -1 with errno set when it cannot be opened; or -1 with *kind set to what
 * it is instead ("a FIFO", "a folder", "a device", "a socket", "not a regular file") and
 * errno 0. *kind is NULL unless the file is not a regular one. */
int gan_open_regular(const char *path, const char **kind);

/* The kind a folder is given: a folder named where a file belongs is a plain mistake,
 * which callers may word apart from a FIFO's or a device's refusal. */
#define GAN_FILE_KIND_FOLDER "a folder"

/* Nonzero when `path` is /dev/null, under any name: the one device that is read as an
 * empty file, since GANCTL_CONFIG=/dev/null is the usual way to read no file. */
int gan_is_dev_null(const char *path);

/* As gan_open_regular, as a stdio stream ("rb"). */
FILE *gan_fopen_regular(const char *path, const char **kind);

#endif
