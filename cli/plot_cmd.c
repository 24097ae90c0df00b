/* SPDX-License-Identifier: MIT */
/* plot_cmd.c — `ganctl plot`: a run's curves.png drawn again from its metrics.csv
 * (core/io/plot/curves.h); nothing but the picture is written. */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "io/plot/curves.h"
#include "plot_cmd.h"
#include "run_args.h"
#include "train/run/run.h"

static const char usage_text[] =
    "Usage: ganctl plot RUN_DIR|METRICS_CSV [--out FILE]\n"
    "Draw a run's curves against iteration from its metrics.csv: losses and the\n"
    "Wasserstein estimate, the penalty, each network's log2 loss scale with overflows\n"
    "and skipped steps marked, the skipped steps, the underflow fractions and the\n"
    "quality metrics. A run writes the same picture, curves.png, at each evaluation.\n"
    "\n"
    "  -o, --out FILE         the PNG to write (default RUN_DIR/curves.png)\n"
    "  -h, --help             show this help and exit\n"
    "\n"
    "See CURVES in ganctl(1).\n";

int gan_plot_command(int argc, char **argv)
{
    struct gan_error err;
    gan_error_clear(&err);
    struct gan_run_args args;
    int rc = 0;
    char *csv = NULL, *out = NULL;
    if (gan_run_args_parse("plot", GAN_RUN_OPT_OUT, 0, argc, argv, &args, &err) != GAN_OK) {
        rc = gan_run_fail(&err);
    } else if (args.help) {
        fputs(usage_text, stdout);
    } else {
        struct stat sb;
        int is_dir = stat(args.run, &sb) == 0 && S_ISDIR(sb.st_mode);
        csv = is_dir ? gan_run_path(args.run, GAN_RUN_METRICS) : strdup(args.run);
        out = args.out ? strdup(args.out)
            : is_dir ? gan_run_path(args.run, GAN_RUN_CURVES) : NULL;
        int out_ok = 0;
        if (!out && csv)
            gan_error_set(&err, GAN_ERR_CONFIG,
                          "plot %s: a metrics file is drawn with --out FILE; give its run folder to draw its curves.png",
                          args.run);
        else if (!csv || !out)
            gan_error_nomem(&err, "the plot");
        else
            out_ok = gan_run_out_check("plot", out, ".png", "a PNG picture", &err) == GAN_OK;
        if (out_ok && gan_curves_draw(csv, out, args.run, &err) == GAN_OK)
            printf("wrote %s (%ux%u) from %s\n", out, GAN_CURVES_WIDTH, GAN_CURVES_HEIGHT, csv);
        else
            rc = gan_run_fail(&err);
    }
    fflush(stdout);
    free(csv);
    free(out);
    gan_run_args_free(&args);
    return rc;
}
