/* SPDX-License-Identifier: MIT */
/* option_value.c — one option-with-a-value of a subcommand's argument list
 * (option_value.h), shared by `ganctl grads` and `ganctl classifier`. */
#include "config.h"
#include "option_value.h"

#include <string.h>

int gan_option_value(int argc, char **argv, int *i, const char *name, char letter,
                     const char **value)
{
    const char *a = argv[*i];
    size_t n = strlen(name);
    if (strncmp(a, "--", 2) == 0 && strncmp(a + 2, name, n) == 0) {
        if (a[2 + n] == '=') {
            *value = a + 3 + n;
            return 1;
        }
        if (a[2 + n] != '\0')
            return 0;   /* a longer option that starts with this name */
    } else if (letter && a[0] == '-' && a[1] == letter) {
        if (a[2]) {
            *value = a + 2;
            return 1;
        }
    } else {
        return 0;
    }
    if (*i + 1 >= argc)
        return -1;
    *value = argv[++*i];
    return 1;
}
