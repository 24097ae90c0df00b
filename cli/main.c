/* SPDX-License-Identifier: MIT */
/* main.c — the ganctl program's entry point. Everything it does is in cli.c, so that
 * main stays a single call. */
#include "config.h"

#include "cli.h"

int main(int argc, char **argv)
{
    return gan_cli_main(argc, argv);
}
