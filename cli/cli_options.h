/* SPDX-License-Identifier: MIT */
/* cli_options.h — ganctl's own command line: its exit statuses, the options as parsed
 * (the actions asked for and the settings' changes in argv order), --help's text and
 * --version's line. What the options then do is cli.c's. */
#ifndef GANCTL_CLI_OPTIONS_H
#define GANCTL_CLI_OPTIONS_H

#include <stddef.h>
#include <stdio.h>

#define EXIT_RUNTIME 1
#define EXIT_USAGE 2
/* A run that completed but diverged (summary.json's status "diverged"). */
#define EXIT_DIVERGED 3
/* A run stopped by SIGINT or SIGTERM, after its checkpoint: the shell's 128 + signal. */
#define EXIT_SIGNAL_BASE 128

/* One command-line change to the configuration, kept in argv order so that a later
 * --set or --backend wins over an earlier one. */
struct assignment {
    const char *set;              /* --set KEY=VALUE, or NULL */
    const char *flag;             /* otherwise the flag, "--backend", with its */
    const char *key;              /* setting, "backend.name", */
    const char *value;            /* and its value */
};

struct cli {
    int help, version, list_plugins, print_config;
    const char *resume;           /* --resume DIR */
    int backend_chosen;           /* --backend or --set backend.name=… was given */
    const char *config_file;
    const char **plugin_dirs;
    size_t plugin_dir_count;
    struct assignment *assignments;
    size_t assignment_count;
};

/* --help's text, to `out`. */
void gan_cli_usage(FILE *out);

/* --version's line: the program's version and the plugin ABI, to stdout. */
void gan_cli_print_version(void);

/* Fills `c` (zeroed by the caller; its arrays are the caller's to free) from argv.
 * Returns 0, or EXIT_USAGE (EXIT_RUNTIME without memory) after printing why. */
int gan_cli_parse_options(struct cli *c, int argc, char **argv);

#endif
