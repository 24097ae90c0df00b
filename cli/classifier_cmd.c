/* SPDX-License-Identifier: MIT */
/* classifier_cmd.c — `ganctl classifier`: loads Fashion-MNIST and a backend, trains the image
 * metrics' classifier with a progress line per epoch, measures its test accuracy and saves it. */
#include "config.h"

#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "eval/classifier.h"
#include "classifier_cmd.h"
#include "config/configuration.h"
#include "data/image_data.h"
#include "eval/image_metrics.h"
#include "base/log.h"
#include "option_value.h"
#include "plugin/plugin_loader.h"
#include "tensor/tensor_core.h"
#include "train/state/state.h"

/* Part of the program, not the library: it prints. */

static const char usage_text[] =
    "Usage: ganctl classifier [OPTION]...\n"
    "Train the small Fashion-MNIST classifier (an MLP 784-256-128-10) whose 128\n"
    "penultimate features the image metrics' Frechet distance uses, print its test\n"
    "accuracy and save it as safetensors.\n"
    "\n"
    "  -o, --out FILE         where to save it (default: the file the image metrics use\n"
    "                         when eval.classifier is empty,\n"
    "                         $XDG_CACHE_HOME/ganctl/" GAN_IMAGE_METRICS_CACHE_NAME ")\n"
    "  -d, --data DIR         the Fashion-MNIST folder (default " GAN_IMAGE_DATA_DEFAULT_DIR ")\n"
    "      --seed N           initialisation and shuffling seed (default 1)\n"
    "      --epochs N         passes over the 60,000 training images (default 5)\n"
    "      --backend NAME     compute on backend-NAME.so (default cpu)\n"
    "  -s, --set KEY=VALUE    a backend.* setting, e.g. backend.threads=1; repeatable\n"
    "      --plugin-dir DIR   look for the backend in DIR first; repeatable\n"
    "  -h, --help             show this help and exit\n"
    "\n"
    "See CLASSIFIER in ganctl(1) and IMAGE QUALITY in ganctl.conf(5).\n";

const char *gan_classifier_usage(void)
{
    return usage_text;
}

static gan_status parse_count(const char *option, const char *text, unsigned long long most,
                              unsigned long long *out, struct gan_error *err)
{
    char *end;
    errno = 0;
    unsigned long long v = strtoull(text, &end, 10);
    if (!*text || *end || errno || text[0] == '-' || v > most)
        return gan_error_set(err, GAN_ERR_CONFIG,
                             "classifier: %s \"%s\" is not a whole number from 0 to %llu", option,
                             text, most);
    *out = v;
    return GAN_OK;
}

gan_status gan_classifier_parse_args(int argc, char **argv, struct gan_classifier_args *args,
                                     struct gan_error *err)
{
    memset(args, 0, sizeof *args);
    args->seed = GAN_CLASSIFIER_DEFAULT_SEED;
    args->epochs = GAN_CLASSIFIER_DEFAULT_EPOCHS;
    size_t n = argc > 0 ? (size_t)argc : 1;
    args->assignments = calloc(n, sizeof *args->assignments);
    args->plugin_dirs = calloc(n, sizeof *args->plugin_dirs);
    if (!args->assignments || !args->plugin_dirs)
        return gan_error_set(err, GAN_ERR_NOMEM, "out of memory while reading the options");
    static const struct {
        const char *name;
        char letter;
    } opts[] = { { "out", 'o' }, { "data", 'd' }, { "seed", 0 }, { "epochs", 0 },
                 { "backend", 0 }, { "set", 's' }, { "plugin-dir", 0 } };
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = NULL;
        if (strcmp(a, "-h") == 0 || strcmp(a, "--help") == 0) {
            args->help = 1;
            continue;
        }
        size_t k;
        int r = 0;
        for (k = 0; k < sizeof opts / sizeof opts[0]; k++)
            if ((r = gan_option_value(argc, argv, &i, opts[k].name, opts[k].letter, &v)) != 0)
                break;
        if (r < 0)
            return gan_error_set(err, GAN_ERR_CONFIG,
                                 "classifier: option %s needs a value: run ganctl classifier --help", a);
        if (r == 0)
            return gan_error_set(err, GAN_ERR_CONFIG,
                                 a[0] == '-' ? "classifier: unknown option %s: run ganctl classifier --help"
                                             : "classifier: unexpected argument \"%s\": run ganctl classifier --help",
                                 a);
        unsigned long long x;
        gan_status st = GAN_OK;
        switch (k) {
        case 0: args->out = v; break;
        case 1: args->data = v; break;
        case 2:
            if ((st = parse_count("--seed", v, UINT64_MAX, &x, err)) == GAN_OK)
                args->seed = x;
            break;
        case 3:
            if ((st = parse_count("--epochs", v, 1000, &x, err)) == GAN_OK && x == 0)
                st = gan_error_set(err, GAN_ERR_CONFIG, "classifier: --epochs must be at least 1");
            args->epochs = (int)x;
            break;
        case 4: args->backend = v; break;
        case 5:
            if (strncmp(v, "backend.", 8) != 0)
                st = gan_error_set(err, GAN_ERR_CONFIG,
                                   "classifier: --set %s: only backend.* settings apply here", v);
            args->assignments[args->assignment_count++] = v;
            break;
        default: args->plugin_dirs[args->plugin_dir_count++] = v; break;
        }
        if (st != GAN_OK)
            return st;
    }
    return GAN_OK;
}

void gan_classifier_args_free(struct gan_classifier_args *args)
{
    free(args->assignments);
    free(args->plugin_dirs);
    memset(args, 0, sizeof *args);
}

static void stderr_sink(void *ctx, enum gan_log_level level, const char *line)
{
    (void)ctx;
    fprintf(stderr, "ganctl: %s%s\n", level == GAN_LOG_ERROR ? "error: "
                                      : level == GAN_LOG_WARN ? "warning: " : "", line);
}

static void print_epoch(void *arg, const struct gan_classifier_epoch *e)
{
    (void)arg;
    printf("epoch %d/%d: loss %.4f, train accuracy %.2f %%, %.1f s\n", e->epoch, e->epochs,
           e->loss, 100.0 * e->train_accuracy, e->seconds);
    fflush(stdout);
}

/* Everything the command holds, freed in one place. */
struct run {
    gan_config *cfg;
    gan_loader *loader;
    struct gan_module *module;
    struct gan_backend_instance *backend;
    gan_ctx *ctx;
    gan_image_set *train, *test;
    gan_classifier *classifier;
};

static void run_free(struct run *r)
{
    gan_classifier_free(r->classifier);
    gan_ctx_free(r->ctx);
    gan_backend_instance_free(r->backend);
    gan_module_close(r->module);
    gan_loader_free(r->loader);
    gan_config_free(r->cfg);
    gan_image_set_free(r->train);
    gan_image_set_free(r->test);
}

/* The backend the options name, and a context on it. */
static gan_status open_backend(struct run *r, const struct gan_classifier_args *args,
                               const struct gan_log *log, struct gan_error *err)
{
    gan_status st = gan_config_new(&r->cfg, err);
    if (st == GAN_OK && args->backend)
        st = gan_config_set_string(r->cfg, "backend.name", args->backend, "--backend", err);
    for (size_t i = 0; st == GAN_OK && i < args->assignment_count; i++)
        st = gan_config_set(r->cfg, args->assignments[i], err);
    if (st == GAN_OK)
        st = gan_loader_new(&r->loader, args->plugin_dirs, args->plugin_dir_count,
                            getenv("GANCTL_PLUGIN_PATH"), GAN_PKGLIBDIR, err);
    if (st == GAN_OK)
        st = gan_open_backend(r->loader, r->cfg, &r->module, err);
    if (st == GAN_OK)
        st = gan_compute_new(r->module, r->cfg, log, &r->backend, &r->ctx, err);
    return st;
}

int gan_classifier_command(int argc, char **argv)
{
    struct gan_log log;
    gan_log_init(&log, stderr_sink, NULL);
    struct gan_error err;
    gan_error_clear(&err);
    struct gan_classifier_args args;
    struct run r;
    memset(&r, 0, sizeof r);
    char out[PATH_MAX];
    double accuracy = NAN;
    gan_status st = gan_classifier_parse_args(argc, argv, &args, &err);
    if (st == GAN_OK && args.help) {
        fputs(usage_text, stdout);
        gan_classifier_args_free(&args);
        return 0;
    }
    if (st == GAN_OK) {
        if (args.out)
            snprintf(out, sizeof out, "%s", args.out);
        else
            st = gan_image_metrics_default_classifier(out, sizeof out, &err);
    }
    if (st == GAN_OK)
        st = gan_image_set_load(args.data, GAN_IMAGE_TRAIN, &r.train, &err);
    if (st == GAN_OK)
        st = gan_image_set_load(args.data, GAN_IMAGE_TEST, &r.test, &err);
    if (st == GAN_OK)
        st = open_backend(&r, &args, &log, &err);
    if (st == GAN_OK)
        st = gan_classifier_new(r.ctx, args.seed, &r.classifier, &err);
    if (st == GAN_OK) {
        printf("training the classifier on %zu images of %s, seed %llu, %d epochs, on %s\n",
               gan_image_set_count(r.train), gan_image_set_dir(r.train),
               (unsigned long long)args.seed, args.epochs,
               gan_backend_instance_describe(r.backend));
        fflush(stdout);
        struct gan_classifier_data train = { r.train, NULL, NULL, 0 };
        st = gan_classifier_train(r.classifier, &train, args.epochs, print_epoch, NULL, &err);
    }
    if (st == GAN_OK) {
        struct gan_classifier_data test = { r.test, NULL, NULL, 0 };
        st = gan_classifier_evaluate(r.classifier, &test, &accuracy, &err);
    }
    if (st == GAN_OK && !args.out)
        st = gan_image_metrics_make_folders(out, &err);
    if (st == GAN_OK)
        st = gan_classifier_save(r.classifier, out, NULL, &err);
    int rc = 0;
    if (st == GAN_OK) {
        printf("wrote %s: test accuracy %.2f %% on %zu images, %d epochs in %.1f s\n", out,
               100.0 * accuracy, gan_image_set_count(r.test), args.epochs,
               gan_classifier_train_seconds(r.classifier));
    } else {
        fprintf(stderr, "ganctl: %s\n", err.message[0] ? err.message : gan_status_string(st));
        rc = st == GAN_ERR_CONFIG ? 2 : 1;
    }
    fflush(stdout);
    run_free(&r);
    gan_classifier_args_free(&args);
    return rc;
}
