/* SPDX-License-Identifier: MIT */
/* eval_cmd.h — `ganctl eval`: a run's quality metrics beside their real-vs-real floors. */
#ifndef GANCTL_CLI_EVAL_CMD_H
#define GANCTL_CLI_EVAL_CMD_H

/* The whole command (argv[0] is "eval"): prints the metrics, optionally writes them as
 * JSON, returns the exit status. The run folder is only read. */
int gan_eval_command(int argc, char **argv);

#endif
