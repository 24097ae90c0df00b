/* SPDX-License-Identifier: MIT */
/* no_symbol.c — backend-nosym.so: a shared object that loads but exports no
 * ganctl_plugin_descriptor, as an unrelated library would. */
#include "config.h"

const char *nosym_purpose(void);

const char *nosym_purpose(void)
{
    return "a module without a descriptor";
}
