/* SPDX-License-Identifier: MIT */
/* grads_cmd.h — the command line of `ganctl grads`: reading its options into
 * struct gan_grads_args (train/after/grads.h), and its usage text. */
#ifndef GANCTL_CLI_GRADS_CMD_H
#define GANCTL_CLI_GRADS_CMD_H

#include "base/error.h"
#include "train/after/after.h"

/* Reads the options that follow "grads" (argv[0] is "grads" itself). --checkpoint,
 * --batch and --out are required unless --help is given. Strings point into argv.
 * GAN_ERR_CONFIG with a one-line reason for a usage mistake, GAN_ERR_NOMEM. Free with
 * gan_grads_args_free, also after a failure. */
gan_status gan_grads_parse_args(int argc, char **argv, struct gan_grads_args *args,
                                struct gan_error *err);
void gan_grads_args_free(struct gan_grads_args *args);

/* The text of `ganctl grads --help`. */
const char *gan_grads_usage(void);

#endif
