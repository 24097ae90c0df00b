/* SPDX-License-Identifier: MIT */
/* option_value.h — one option-with-a-value of a subcommand's argument list, in the
 * forms getopt_long accepts, for the subcommands that parse their own arguments. */
#ifndef GANCTL_CORE_OPTION_VALUE_H
#define GANCTL_CORE_OPTION_VALUE_H

/* Matches argv[*i] against an option that takes a value, given as "--name VALUE",
 * "--name=VALUE", "-x VALUE" or "-xVALUE" (letter 0: no short form). Returns 1 with
 * *value set (and *i moved past a separate value), 0 when argv[*i] is another option,
 * -1 when the value is missing. */
int gan_option_value(int argc, char **argv, int *i, const char *name, char letter,
                     const char **value);

#endif
