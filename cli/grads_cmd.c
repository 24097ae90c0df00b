/* SPDX-License-Identifier: MIT */
/* grads_cmd.c — the command line of `ganctl grads`: its options, its usage text; the
 * replay itself is core/train/after/grads.c. */
#include "config.h"

#include <stdlib.h>
#include <string.h>

#include "grads_cmd.h"
#include "option_value.h"

static const char usage_text[] =
    "Usage: ganctl grads --checkpoint FILE --batch FILE --out FILE [OPTION]...\n"
    "Compute one training step's objectives at a checkpoint's parameters on a given batch,\n"
    "with z and the gradient penalty's alpha from the batch instead of the run's stream,\n"
    "and write every parameter's gradient and the loss values as safetensors.\n"
    "\n"
    "  -C, --checkpoint FILE  the checkpoint (or the run folder holding it)\n"
    "  -b, --batch FILE       safetensors with real [B, D] (or [B, 1, 28, 28]), z [B, Z]\n"
    "                         and optionally alpha [B, 1], F32 or F64\n"
    "  -o, --out FILE         the output: critic.NAME and generator.NAME gradients and\n"
    "                         loss.critic, loss.generator, loss.penalty, ... ([1] each)\n"
    "      --backend NAME     compute on another backend than the run's\n"
    "  -s, --set KEY=VALUE    change a backend.* setting or log.level; repeatable\n"
    "      --plugin-dir DIR   look for plugins in DIR first; repeatable\n"
    "      --debug-level N    2: also compare each backward with an FP32 shadow of it\n"
    "                         and print each parameter's and op's true underflow\n"
    "  -h, --help             show this help and exit\n"
    "\n"
    "The run's configuration comes from the checkpoint. See GRADIENT DUMP in ganctl(1).\n";

const char *gan_grads_usage(void)
{
    return usage_text;
}

gan_status gan_grads_parse_args(int argc, char **argv, struct gan_grads_args *args,
                                struct gan_error *err)
{
    memset(args, 0, sizeof *args);
    size_t n = argc > 0 ? (size_t)argc : 1;
    args->plugin_dirs = calloc(n, sizeof *args->plugin_dirs);
    args->settings = calloc(n, sizeof *args->settings);
    if (!args->plugin_dirs || !args->settings)
        return gan_error_set(err, GAN_ERR_NOMEM, "out of memory while reading the options");
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = NULL;
        int r;
        if (strcmp(a, "-h") == 0 || strcmp(a, "--help") == 0) {
            args->help = 1;
            continue;
        }
        static const struct {
            const char *name;
            char letter;
        } opts[] = { { "checkpoint", 'C' }, { "batch", 'b' }, { "out", 'o' },
                     { "backend", 0 }, { "set", 's' }, { "plugin-dir", 0 },
                     { "debug-level", 0 } };
        size_t k;
        for (k = 0, r = 0; k < sizeof opts / sizeof opts[0]; k++)
            if ((r = gan_option_value(argc, argv, &i, opts[k].name, opts[k].letter, &v)) != 0)
                break;
        if (r < 0)
            return gan_error_set(err, GAN_ERR_CONFIG,
                                 "grads: option %s needs a value: run ganctl grads --help", a);
        if (r == 0)
            return gan_error_set(err, GAN_ERR_CONFIG,
                                 a[0] == '-' ? "grads: unknown option %s: run ganctl grads --help"
                                             : "grads: unexpected argument \"%s\": run ganctl grads --help",
                                 a);
        switch (k) {
        case 0: args->checkpoint = v; break;
        case 1: args->batch = v; break;
        case 2: args->out = v; break;
        case 3: args->settings[args->setting_count++].backend = v; break;
        case 4: args->settings[args->setting_count++].assignment = v; break;
        case 5: args->plugin_dirs[args->plugin_dir_count++] = v; break;
        default:
            if (!((v[0] >= '0' && v[0] <= '2') && v[1] == '\0'))
                return gan_error_set(err, GAN_ERR_CONFIG,
                                     "grads: --debug-level must be 0, 1 or 2, got \"%s\"", v);
            args->debug_level = v[0] - '0';
            break;
        }
    }
    if (args->help)
        return GAN_OK;
    if (!args->checkpoint || !args->batch || !args->out)
        return gan_error_set(err, GAN_ERR_CONFIG,
                             "grads needs --checkpoint FILE, --batch FILE and --out FILE; %s is missing: run ganctl grads --help",
                             !args->checkpoint ? "--checkpoint" : !args->batch ? "--batch" : "--out");
    return GAN_OK;
}

void gan_grads_args_free(struct gan_grads_args *args)
{
    free(args->plugin_dirs);
    free(args->settings);
    memset(args, 0, sizeof *args);
}

