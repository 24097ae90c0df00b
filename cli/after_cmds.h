/* SPDX-License-Identifier: MIT */
/* after_cmds.h — the commands that read a finished run: sample, eval, export, plot. */
#ifndef GANCTL_CLI_AFTER_CMDS_H
#define GANCTL_CLI_AFTER_CMDS_H

/* When argv[0] names one of them, runs it, sets *rc to its exit status and returns 1;
 * returns 0 for any other word. */
int gan_after_command(int argc, char **argv, int *rc);

#endif
