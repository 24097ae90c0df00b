/* SPDX-License-Identifier: MIT */
/* cli.h — the ganctl program's front end: options, actions and everything it prints.
 * It is the only code in ganctl that writes to stdout or stderr. */
#ifndef GANCTL_CORE_CLI_H
#define GANCTL_CORE_CLI_H

/* Runs ganctl with these arguments; returns the exit status: 0 ok, 1 runtime failure
 * (a plugin or device), 2 usage or configuration error. */
int gan_cli_main(int argc, char **argv);

#endif
