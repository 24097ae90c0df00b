/* SPDX-License-Identifier: MIT */
/* sample_cmd.h — `ganctl sample`: a run's generator's samples for a seed, to a file or folder. */
#ifndef GANCTL_CLI_SAMPLE_CMD_H
#define GANCTL_CLI_SAMPLE_CMD_H

/* The whole command (argv[0] is "sample"): prints one line on success, returns the exit
 * status. */
int gan_sample_command(int argc, char **argv);

#endif
