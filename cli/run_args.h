/* SPDX-License-Identifier: MIT */
/* run_args.h — the command lines of the commands that read a finished run (sample, eval,
 * export, plot): RUN_DIR|CHECKPOINT, their own options and the shared backend options. */
#ifndef GANCTL_CLI_RUN_ARGS_H
#define GANCTL_CLI_RUN_ARGS_H

#include <stddef.h>
#include <stdint.h>

#include "base/error.h"
#include "base/log.h"
#include "plugin/plugin_loader.h"
#include "train/after/after.h"

/* The options a command takes besides -h and the run (a mask). */
enum {
    GAN_RUN_OPT_OUT = 1u << 0,      /* -o, --out FILE */
    GAN_RUN_OPT_COUNT = 1u << 1,    /* -n, --count N */
    GAN_RUN_OPT_SEED = 1u << 2,     /* --seed S */
    GAN_RUN_OPT_SAMPLES = 1u << 3,  /* --samples N */
    GAN_RUN_OPT_JSON = 1u << 4,     /* --json FILE */
    GAN_RUN_OPT_BACKEND = 1u << 5,  /* --backend NAME, -s/--set KEY=VALUE, --plugin-dir DIR */
};

struct gan_run_args {
    const char *command;          /* "sample", for the messages */
    int help;
    const char *run;              /* RUN_DIR|CHECKPOINT */
    const char *out, *json;
    long long count;              /* -n or --samples; -1 when not given */
    int has_seed;
    uint64_t seed;
    const char **plugin_dirs;
    size_t plugin_dir_count;
    struct gan_saved_setting *settings;
    size_t setting_count;
};

/* Reads the options that follow the command word (argv[0]), those of `options` only;
 * the run is the one argument that is not an option, and required unless --help is
 * given, as is --out when `out_required`. Strings point into argv. GAN_ERR_CONFIG with a
 * one-line reason naming `--help`. Free with gan_run_args_free, also after a failure. */
gan_status gan_run_args_parse(const char *command, unsigned options, int out_required, int argc,
                              char **argv, struct gan_run_args *args, struct gan_error *err);
void gan_run_args_free(struct gan_run_args *args);

/* The loader of the options' plugin folders, and the run opened through it
 * (gan_generator_run_open; `metrics` for ganctl eval). Both the caller's to free. */
gan_status gan_run_args_open(const struct gan_run_args *args, int metrics,
                             const struct gan_log *log, gan_loader **loader,
                             gan_generator_run **run, struct gan_error *err);

/* The program's one-line report of a failure (stderr) and its exit status: 2 for a
 * configuration or usage error, 1 otherwise. */
int gan_run_fail(const struct gan_error *err);

/* GAN_OK when `out` ends in `suffix` (".png"), else GAN_ERR_CONFIG with a line naming
 * the option, what the command writes and the name to give. */
gan_status gan_run_out_check(const char *command, const char *out, const char *suffix,
                             const char *what, struct gan_error *err);

/* The log the commands give the core: warnings and errors on stderr. */
void gan_run_log_init(struct gan_log *log);

#endif
