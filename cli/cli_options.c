/* SPDX-License-Identifier: MIT */
/* cli_options.c — ganctl's option table and its parsing, --help's text and --version's
 * line. Errors are one "ganctl: " line each. */
#include "config.h"

#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <ganctl/ganctl.h>

#include "cli_options.h"

void gan_cli_usage(FILE *out)
{
    fputs("Usage: ganctl [OPTION]...\n"
          "Train a Wasserstein GAN with gradient penalty (WGAN-GP); without an action, train\n"
          "the configured run (by default the WGAN-GP paper's 8-Gaussians toy) into a new\n"
          "run folder: metrics.csv, summary.json, PNG pictures and a checkpoint.\n"
          "\n"
          "Actions:\n"
          "  -h, --help             show this help and exit\n"
          "  -V, --version          show the version and the plugin ABI; with --backend, also\n"
          "                         load that backend and show what it runs on\n"
          "      --list-plugins     list every plugin in the search path and its settings\n"
          "      --print-config     print every setting with its value and origin, and exit\n"
          "  -r, --resume DIR       continue the run in folder DIR from its checkpoint\n"
          "Commands (ganctl COMMAND --help for each):\n"
          "  grads                  one step's gradients and losses on a given batch\n"
          "  classifier             train the image metrics' Fashion-MNIST classifier\n"
          "  sample, eval, export, plot RUN\n"
          "                         a run's samples, quality, generator for torch, curves\n"
          "\n"
          "Settings (highest precedence first: these options, --config, $GANCTL_CONFIG,\n"
          "the installed ganctl.conf; a resumed run starts from its saved settings):\n"
          "      --backend NAME     the compute backend, backend-NAME.so (sets backend.name)\n"
          "      --precision MODE   fp32, fp16, bf16 or fp8 (sets precision.mode)\n"
          "      --scaler NAME      the loss scaler, scaler-NAME.so (sets scaler.name); one\n"
          "                         other than none implies --precision fp16 unless given\n"
          "      --debug-level N    1: per-tensor gradient statistics; 2: also true underflow\n"
          "                         against an FP32 shadow backward (sets run.debug_level)\n"
          "  -s, --set KEY=VALUE    set one setting, e.g. --set run.iterations=500; repeatable\n"
          "  -c, --config FILE      read settings from FILE (libconfig syntax); a name\n"
          "                         without a slash that is not here is looked for in\n"
          "                         " GAN_PKGDATADIR ", the installed examples\n"
          "      --plugin-dir DIR   look for plugins in DIR before $GANCTL_PLUGIN_PATH and\n"
          "                         " GAN_PKGLIBDIR "; repeatable\n"
          "\n"
          "Environment: GANCTL_PLUGIN_PATH (colon-separated plugin folders), GANCTL_CONFIG\n"
          "(a configuration file), OPENBLAS_CORETYPE (the cpu backend's OpenBLAS kernel).\n"
          "Exit status: 0 success, 1 a plugin, device or training failure, 2 usage or\n"
          "configuration error, 3 the run diverged, 130 or 143 stopped by SIGINT or SIGTERM.\n"
          "See ganctl(1), ganctl.conf(5) and ganctl-plugin(7).\n"
          "Report bugs to " PACKAGE_BUGREPORT ".\n",
          out);
}

void gan_cli_print_version(void)
{
    printf("ganctl %s (plugin ABI %d.%d)\n", gan_version(), GAN_ABI_MAJOR, GAN_ABI_MINOR);
}

enum {
    OPT_LIST_PLUGINS = 256, OPT_BACKEND, OPT_PLUGIN_DIR, OPT_PRINT_CONFIG, OPT_PRECISION,
    OPT_SCALER, OPT_DEBUG_LEVEL
};

static const struct option long_options[] = {
    { "help", no_argument, NULL, 'h' },
    { "version", no_argument, NULL, 'V' },
    { "list-plugins", no_argument, NULL, OPT_LIST_PLUGINS },
    { "print-config", no_argument, NULL, OPT_PRINT_CONFIG },
    { "resume", required_argument, NULL, 'r' },
    { "backend", required_argument, NULL, OPT_BACKEND },
    { "precision", required_argument, NULL, OPT_PRECISION },
    { "scaler", required_argument, NULL, OPT_SCALER },
    { "debug-level", required_argument, NULL, OPT_DEBUG_LEVEL },
    { "plugin-dir", required_argument, NULL, OPT_PLUGIN_DIR },
    { "config", required_argument, NULL, 'c' },
    { "set", required_argument, NULL, 's' },
    { NULL, 0, NULL, 0 },
};

/* Returns 0, or EXIT_USAGE after printing why. */
int gan_cli_parse_options(struct cli *c, int argc, char **argv)
{
    size_t n = argc > 0 ? (size_t)argc : 1;
    c->plugin_dirs = calloc(n, sizeof *c->plugin_dirs);
    c->assignments = calloc(n, sizeof *c->assignments);
    if (!c->plugin_dirs || !c->assignments) {
        fputs("ganctl: out of memory while reading the options\n", stderr);
        return EXIT_RUNTIME;
    }
    opterr = 0; /* getopt's own messages would name the libtool wrapper, not ganctl */
    int opt;
    while ((opt = getopt_long(argc, argv, ":hVc:s:r:", long_options, NULL)) != -1) {
        switch (opt) {
        case 'h': c->help = 1; break;
        case 'V': c->version = 1; break;
        case OPT_LIST_PLUGINS: c->list_plugins = 1; break;
        case OPT_PRINT_CONFIG: c->print_config = 1; break;
        case 'r': c->resume = optarg; break;
        case 'c': c->config_file = optarg; break;
        case OPT_PLUGIN_DIR: c->plugin_dirs[c->plugin_dir_count++] = optarg; break;
        case OPT_BACKEND:
            c->assignments[c->assignment_count++] =
                (struct assignment){ NULL, "--backend", "backend.name", optarg };
            c->backend_chosen = 1;
            break;
        case OPT_PRECISION:
            c->assignments[c->assignment_count++] =
                (struct assignment){ NULL, "--precision", "precision.mode", optarg };
            break;
        case OPT_SCALER:
            c->assignments[c->assignment_count++] =
                (struct assignment){ NULL, "--scaler", "scaler.name", optarg };
            break;
        case OPT_DEBUG_LEVEL:
            c->assignments[c->assignment_count++] =
                (struct assignment){ NULL, "--debug-level", "run.debug_level", optarg };
            break;
        case 's':
            c->assignments[c->assignment_count++].set = optarg;
            if (strncmp(optarg, "backend.name", 12) == 0 &&
                (optarg[12] == '=' || optarg[12] == ' '))
                c->backend_chosen = 1;
            break;
        case ':':
            fprintf(stderr, "ganctl: option %s needs a value: run ganctl --help for the options\n",
                    argv[optind - 1]);
            return EXIT_USAGE;
        default:
            if (optopt)
                fprintf(stderr, "ganctl: unknown option -%c: run ganctl --help for the options\n",
                        optopt);
            else
                fprintf(stderr, "ganctl: unknown option %s: run ganctl --help for the options\n",
                        argv[optind - 1]);
            return EXIT_USAGE;
        }
    }
    if (optind < argc) {
        fprintf(stderr,
                "ganctl: unexpected argument \"%s\": ganctl takes only options; run ganctl --help\n",
                argv[optind]);
        return EXIT_USAGE;
    }
    if (c->list_plugins + c->version + c->print_config + (c->resume != NULL) > 1) {
        fputs("ganctl: --list-plugins, --version, --print-config and --resume are separate actions: give one of them\n",
              stderr);
        return EXIT_USAGE;
    }
    return 0;
}
