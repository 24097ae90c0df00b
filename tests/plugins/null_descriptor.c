/* SPDX-License-Identifier: MIT */
/* null_descriptor.c — backend-nulldesc.so: a module whose descriptor function returns
 * NULL. */
#include "config.h"

#include <stddef.h>
#include <ganctl/ganctl.h>

GAN_PLUGIN_EXPORT const struct gan_plugin *ganctl_plugin_descriptor(void);
GAN_PLUGIN_EXPORT const struct gan_plugin *ganctl_plugin_descriptor(void)
{
    return NULL;
}
