/* SPDX-License-Identifier: MIT */
/* text_file.h — whole files: written atomically, so that a crash leaves the old file or
 * the new one and never a part, and read back into one string. */
#ifndef GANCTL_IO_TEXT_FILE_H
#define GANCTL_IO_TEXT_FILE_H

#include <stddef.h>

#include "base/error.h"

/* Writes `size` bytes to `path` through a temporary file in the same folder, fsync and
 * rename, then syncs the folder so that the rename itself survives a crash. */
gan_status gan_file_write_atomic(const char *path, const char *data, size_t size,
                                 struct gan_error *err);

/* The whole file at `path` as a NUL-terminated string the caller frees.
 * GAN_ERR_NOT_FOUND when it does not exist. */
gan_status gan_file_read_text(const char *path, char **out, struct gan_error *err);

#endif
