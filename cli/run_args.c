/* SPDX-License-Identifier: MIT */
/* run_args.c — the shared command line of sample, eval, export and plot: the run, the
 * options each takes, the backend options, and opening the run they name. */
#include "config.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "option_value.h"
#include "run_args.h"

/* warnings and errors only: these commands print their own result on stdout. */
static void stderr_sink(void *ctx, enum gan_log_level level, const char *line)
{
    (void)ctx;
    fprintf(stderr, "ganctl: %s%s\n", level == GAN_LOG_ERROR ? "error: "
                                      : level == GAN_LOG_WARN ? "warning: " : "", line);
}

void gan_run_log_init(struct gan_log *log)
{
    gan_log_init(log, stderr_sink, NULL);
    log->level = GAN_LOG_WARN;
}

int gan_run_fail(const struct gan_error *err)
{
    fprintf(stderr, "ganctl: %s\n", err->message[0] ? err->message : gan_status_string(err->status));
    return err->status == GAN_ERR_CONFIG ? 2 : 1;
}

gan_status gan_run_out_check(const char *command, const char *out, const char *suffix,
                             const char *what, struct gan_error *err)
{
    size_t n = strlen(out), k = strlen(suffix);
    if (n > k && strcmp(out + n - k, suffix) == 0 && out[n - k - 1] != '/')
        return GAN_OK;
    return gan_error_set(err, GAN_ERR_CONFIG, "%s: --out %s: %s writes %s; give a name that ends in %s",
                         command, out, command, what, suffix);
}

static gan_status parse_number(const struct gan_run_args *a, const char *option, const char *text,
                               unsigned long long least, unsigned long long most,
                               unsigned long long *out, struct gan_error *err)
{
    char *end;
    errno = 0;
    unsigned long long v = strtoull(text, &end, 10);
    if (!*text || *end || errno || text[0] == '-' || v < least || v > most)
        return gan_error_set(err, GAN_ERR_CONFIG,
                             "%s: %s \"%s\" is not a whole number from %llu to %llu", a->command,
                             option, text, least, most);
    *out = v;
    return GAN_OK;
}

gan_status gan_run_args_parse(const char *command, unsigned options, int out_required, int argc,
                              char **argv, struct gan_run_args *args, struct gan_error *err)
{
    memset(args, 0, sizeof *args);
    args->command = command;
    args->count = -1;
    size_t n = argc > 0 ? (size_t)argc : 1;
    args->plugin_dirs = calloc(n, sizeof *args->plugin_dirs);
    args->settings = calloc(n, sizeof *args->settings);
    if (!args->plugin_dirs || !args->settings)
        return gan_error_set(err, GAN_ERR_NOMEM, "out of memory while reading the options");
    static const struct {
        const char *name;
        char letter;
        unsigned mask;
    } opts[] = {
        { "out", 'o', GAN_RUN_OPT_OUT }, { "count", 'n', GAN_RUN_OPT_COUNT },
        { "seed", 0, GAN_RUN_OPT_SEED }, { "samples", 0, GAN_RUN_OPT_SAMPLES },
        { "json", 0, GAN_RUN_OPT_JSON }, { "backend", 0, GAN_RUN_OPT_BACKEND },
        { "set", 's', GAN_RUN_OPT_BACKEND }, { "plugin-dir", 0, GAN_RUN_OPT_BACKEND },
    };
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = NULL;
        if (strcmp(a, "-h") == 0 || strcmp(a, "--help") == 0) {
            args->help = 1;
            continue;
        }
        if (a[0] != '-' || strcmp(a, "-") == 0) {
            if (args->run)
                return gan_error_set(err, GAN_ERR_CONFIG,
                                     "%s: unexpected argument \"%s\" after the run %s: run ganctl %s --help",
                                     command, a, args->run, command);
            args->run = a;
            continue;
        }
        size_t k;
        int r = 0;
        for (k = 0; k < sizeof opts / sizeof opts[0]; k++) {
            if (!(opts[k].mask & options))
                continue;
            if ((r = gan_option_value(argc, argv, &i, opts[k].name, opts[k].letter, &v)) != 0)
                break;
        }
        if (r < 0)
            return gan_error_set(err, GAN_ERR_CONFIG, "%s: option %s needs a value: run ganctl %s --help",
                                 command, a, command);
        if (r == 0)
            return gan_error_set(err, GAN_ERR_CONFIG, "%s: unknown option %s: run ganctl %s --help",
                                 command, a, command);
        unsigned long long num;
        gan_status st = GAN_OK;
        switch (k) {
        case 0: args->out = v; break;
        case 1:
        case 3:
            st = parse_number(args, k == 1 ? "-n/--count" : "--samples", v, k == 1 ? 1 : 2, 10000000ULL,
                              &num, err);
            args->count = (long long)num;
            break;
        case 2:
            st = parse_number(args, "--seed", v, 0, UINT64_MAX, &num, err);
            args->seed = num;
            args->has_seed = 1;
            break;
        case 4: args->json = v; break;
        case 5: args->settings[args->setting_count++].backend = v; break;
        case 6: args->settings[args->setting_count++].assignment = v; break;
        default: args->plugin_dirs[args->plugin_dir_count++] = v; break;
        }
        if (st != GAN_OK)
            return st;
    }
    if (args->help)
        return GAN_OK;
    if (!args->run)
        return gan_error_set(err, GAN_ERR_CONFIG,
                             "%s needs a run: give its run folder (run.dir) or checkpoint file: run ganctl %s --help",
                             command, command);
    if (out_required && !args->out)
        return gan_error_set(err, GAN_ERR_CONFIG, "%s needs --out FILE: run ganctl %s --help",
                             command, command);
    return GAN_OK;
}

void gan_run_args_free(struct gan_run_args *args)
{
    free(args->plugin_dirs);
    free(args->settings);
    memset(args, 0, sizeof *args);
}

gan_status gan_run_args_open(const struct gan_run_args *args, int metrics,
                             const struct gan_log *log, gan_loader **loader,
                             gan_generator_run **run, struct gan_error *err)
{
    *run = NULL;
    gan_status st = gan_loader_new(loader, args->plugin_dirs, args->plugin_dir_count,
                                   getenv("GANCTL_PLUGIN_PATH"), GAN_PKGLIBDIR, err);
    if (st == GAN_OK)
        st = gan_generator_run_open(args->run, args->settings, args->setting_count, metrics,
                                    *loader, log, run, err);
    return st;
}
