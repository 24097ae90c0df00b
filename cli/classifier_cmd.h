/* SPDX-License-Identifier: MIT */
/* classifier_cmd.h — `ganctl classifier`: trains the image metrics' Fashion-MNIST classifier,
 * reports its test accuracy and saves it as safetensors. */
#ifndef GANCTL_CORE_CLASSIFIER_CMD_H
#define GANCTL_CORE_CLASSIFIER_CMD_H

#include <stddef.h>
#include <stdint.h>

#include "base/error.h"

struct gan_classifier_args {
    int help;
    const char *out;              /* NULL: the metrics' default (image_metrics.h) */
    const char *data;             /* NULL: GAN_IMAGE_DATA_DEFAULT_DIR */
    uint64_t seed;
    int epochs;
    const char *backend;          /* NULL: "cpu" */
    const char **assignments;     /* --set backend.KEY=VALUE, in order */
    size_t assignment_count;
    const char **plugin_dirs;
    size_t plugin_dir_count;
};

/* Reads the options that follow "classifier" (argv[0] is "classifier"). Strings point
 * into argv. GAN_ERR_CONFIG with a one-line reason for a usage mistake. Free with
 * gan_classifier_args_free, also after a failure. */
gan_status gan_classifier_parse_args(int argc, char **argv, struct gan_classifier_args *args,
                                     struct gan_error *err);
void gan_classifier_args_free(struct gan_classifier_args *args);

const char *gan_classifier_usage(void);

/* The whole command, as the program's entry for it: prints a line per epoch and the
 * result to stdout, an error to stderr, and returns the exit status (0, 1 for a
 * failure, 2 for a usage mistake). argv[0] is "classifier". */
int gan_classifier_command(int argc, char **argv);

#endif
