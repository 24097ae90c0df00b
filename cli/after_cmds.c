/* SPDX-License-Identifier: MIT */
/* after_cmds.c — the dispatch of the commands that read a finished run, kept apart from
 * cli.c so that each has its own file. */
#include "config.h"

#include <string.h>

#include "after_cmds.h"
#include "eval_cmd.h"
#include "export_cmd.h"
#include "plot_cmd.h"
#include "sample_cmd.h"

int gan_after_command(int argc, char **argv, int *rc)
{
    static const struct {
        const char *word;
        int (*run)(int, char **);
    } commands[] = {
        { "sample", gan_sample_command }, { "eval", gan_eval_command },
        { "export", gan_export_command }, { "plot", gan_plot_command },
    };
    for (size_t i = 0; argc > 0 && i < sizeof commands / sizeof commands[0]; i++)
        if (strcmp(argv[0], commands[i].word) == 0) {
            *rc = commands[i].run(argc, argv);
            return 1;
        }
    return 0;
}
