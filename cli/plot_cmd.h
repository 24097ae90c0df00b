/* SPDX-License-Identifier: MIT */
/* plot_cmd.h — `ganctl plot`: a run's curves drawn again from its metrics.csv. */
#ifndef GANCTL_CLI_PLOT_CMD_H
#define GANCTL_CLI_PLOT_CMD_H

/* The whole command (argv[0] is "plot"): prints one line on success, returns the exit
 * status. */
int gan_plot_command(int argc, char **argv);

#endif
