/* SPDX-License-Identifier: MIT */
/* export_cmd.h — `ganctl export`: a run's generator alone, as torch.nn.Sequential keys it. */
#ifndef GANCTL_CLI_EXPORT_CMD_H
#define GANCTL_CLI_EXPORT_CMD_H

/* The whole command (argv[0] is "export"): prints one line on success, returns the exit
 * status. */
int gan_export_command(int argc, char **argv);

#endif
