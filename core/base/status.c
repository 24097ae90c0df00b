/* SPDX-License-Identifier: MIT */
/* status.c — the words for each gan_status code.
 * Messages that explain a particular failure live with the context that failed. */
#include "config.h"

#include <ganctl/status.h>

const char *gan_status_string(gan_status status)
{
    switch (status) {
    case GAN_OK: return "success";
    case GAN_ERR_NOMEM: return "out of memory";
    case GAN_ERR_INVALID: return "invalid argument";
    case GAN_ERR_UNSUPPORTED: return "not supported";
    case GAN_ERR_NOT_FOUND: return "not found";
    case GAN_ERR_IO: return "input/output error";
    case GAN_ERR_FORMAT: return "malformed file";
    case GAN_ERR_ABI: return "incompatible plugin ABI";
    case GAN_ERR_CONFIG: return "configuration error";
    case GAN_ERR_DEVICE: return "device unavailable";
    case GAN_ERR_NUMERIC: return "non-finite value";
    case GAN_ERR_INTERNAL: return "internal error";
    }
    return "unknown status";
}
