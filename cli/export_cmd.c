/* SPDX-License-Identifier: MIT */
/* export_cmd.c — `ganctl export`: a run's generator as safetensors with the keys of the
 * torch.nn.Sequential of the same layers (core/train/after/generator_export.h). */
#include "config.h"

#include <stdio.h>

#include "export_cmd.h"
#include "run_args.h"
#include "train/after/after.h"

static const char usage_text[] =
    "Usage: ganctl export RUN_DIR|CHECKPOINT --out FILE [OPTION]...\n"
    "Write a run's generator alone as safetensors: each parameter under the key\n"
    "torch.nn.Sequential gives the same layers (\"0.weight\", ...), the layers as JSON in\n"
    "the metadata (torch_layers) with the run's configuration. ganctl(1) shows the lines\n"
    "of Python that rebuild the module and load it.\n"
    "\n"
    "  -o, --out FILE         the file to write (.safetensors)\n"
    "      --backend NAME     read the checkpoint with another backend than the run's\n"
    "  -s, --set KEY=VALUE    change a backend.* setting or log.level; repeatable\n"
    "      --plugin-dir DIR   look for plugins in DIR first; repeatable\n"
    "  -h, --help             show this help and exit\n"
    "\n"
    "See EXPORT in ganctl(1).\n";

int gan_export_command(int argc, char **argv)
{
    struct gan_log log;
    gan_run_log_init(&log);
    struct gan_error err;
    gan_error_clear(&err);
    struct gan_run_args args;
    gan_loader *loader = NULL;
    gan_generator_run *g = NULL;
    struct gan_export_report r;
    int rc = 0;
    if (gan_run_args_parse("export", GAN_RUN_OPT_OUT | GAN_RUN_OPT_BACKEND, 1, argc, argv, &args,
                           &err) != GAN_OK)
        rc = gan_run_fail(&err);
    else if (args.help)
        fputs(usage_text, stdout);
    else if (gan_run_out_check("export", args.out, ".safetensors", "a safetensors file", &err) != GAN_OK ||
             gan_run_args_open(&args, 0, &log, &loader, &g, &err) != GAN_OK ||
             gan_generator_export(g, args.out, &r, &err) != GAN_OK)
        rc = gan_run_fail(&err);
    else
        printf("wrote %s: the generator of iteration %lld, %zu tensors (%lld values) of a torch.nn.Sequential of %zu modules\n",
               args.out, (long long)gan_generator_run_iteration(g), r.tensors,
               (long long)r.parameters, r.modules);
    fflush(stdout);
    gan_generator_run_free(g);
    gan_loader_free(loader);
    gan_run_args_free(&args);
    return rc;
}
