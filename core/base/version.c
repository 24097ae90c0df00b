/* SPDX-License-Identifier: MIT */
/* version.c — the version of the libganctl that is actually loaded, which a
 * program or plugin can compare with the headers it was built with. */
#include "config.h"

#include <ganctl/version.h>

const char *gan_version(void)
{
    return GAN_VERSION_STRING;
}
