/* SPDX-License-Identifier: MIT */
/* status.h — the status codes every fallible ganctl call returns.
 * 0 is success; the message that goes with a failure lives in the context that produced it. */
#ifndef GANCTL_STATUS_H
#define GANCTL_STATUS_H

#include <ganctl/api.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef enum gan_status {
    GAN_OK = 0,
    GAN_ERR_NOMEM,       /* an allocation failed (host or device) */
    GAN_ERR_INVALID,     /* an argument, shape or setting is not acceptable */
    GAN_ERR_UNSUPPORTED, /* valid, but this implementation cannot do it (e.g. a dtype) */
    GAN_ERR_NOT_FOUND,   /* a file, plugin, symbol or setting does not exist */
    GAN_ERR_IO,          /* reading or writing a file failed */
    GAN_ERR_FORMAT,      /* a file exists but its contents are malformed */
    GAN_ERR_ABI,         /* a plugin was built for an incompatible ABI */
    GAN_ERR_CONFIG,      /* the configuration is wrong (unknown key, wrong type, bad value) */
    GAN_ERR_DEVICE,      /* the compute device is missing or failed */
    GAN_ERR_NUMERIC,     /* a non-finite value where none is allowed */
    GAN_ERR_INTERNAL     /* a broken invariant: a bug in ganctl or a plugin */
} gan_status;

/* A short, static, lower-case phrase for a status ("out of memory"). Never NULL. */
GAN_API const char *gan_status_string(gan_status status);

#ifdef __cplusplus
}
#endif
#endif
