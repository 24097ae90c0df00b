/* SPDX-License-Identifier: MIT */
/* sample_cmd.c — `ganctl sample`: N samples of a run's generator for a seed, written as the
 * output path asks (core/train/after/sample_files.h); the critic is never run. */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>

#include "run_args.h"
#include "sample_cmd.h"
#include "train/after/after.h"

static const char usage_text[] =
    "Usage: ganctl sample RUN_DIR|CHECKPOINT --out FILE [OPTION]...\n"
    "Write N samples of a run's generator, at its checkpoint's parameters and under its\n"
    "precision policy, for the z of a seed; the critic is not run. The same seed gives\n"
    "the same samples.\n"
    "\n"
    "  -o, --out FILE         FILE.csv (toy points), FILE.png (toy points, or a grid of\n"
    "                         images), FILE.safetensors (samples and z), or a folder\n"
    "                         (ending in / or existing) of one PNG per image\n"
    "  -n, --count N          how many (default 1000 points or 64 images)\n"
    "      --seed S           the seed of z (default the run's run.seed)\n"
    "      --backend NAME     compute on another backend than the run's\n"
    "  -s, --set KEY=VALUE    change a backend.* setting or log.level; repeatable\n"
    "      --plugin-dir DIR   look for plugins in DIR first; repeatable\n"
    "  -h, --help             show this help and exit\n"
    "\n"
    "See SAMPLES in ganctl(1).\n";

int gan_sample_command(int argc, char **argv)
{
    struct gan_log log;
    gan_run_log_init(&log);
    struct gan_error err;
    gan_error_clear(&err);
    struct gan_run_args args;
    gan_loader *loader = NULL;
    gan_generator_run *g = NULL;
    float *samples = NULL, *z = NULL;
    int rc = 0;
    enum gan_sample_kind kind = GAN_SAMPLE_PNG;
    if (gan_run_args_parse("sample", GAN_RUN_OPT_OUT | GAN_RUN_OPT_COUNT | GAN_RUN_OPT_SEED |
                           GAN_RUN_OPT_BACKEND, 1, argc, argv, &args, &err) != GAN_OK) {
        rc = gan_run_fail(&err);
    } else if (args.help) {
        fputs(usage_text, stdout);
    } else if (gan_run_args_open(&args, 0, &log, &loader, &g, &err) != GAN_OK) {
        rc = gan_run_fail(&err);
    } else {
        const gan_session *s = gan_generator_run_session(g);
        size_t n = args.count > 0 ? (size_t)args.count : s->set.is_image ? 64 : 1000;
        uint64_t seed = args.has_seed ? args.seed : s->set.seed;
        samples = malloc(n * (size_t)s->set.sample_size * sizeof *samples);
        z = malloc(n * (size_t)s->set.z_dim * sizeof *z);
        gan_status st = samples && z ? GAN_OK : gan_error_nomem(&err, "the samples");
        if (st == GAN_OK)
            st = gan_sample_kind_of(args.out, s->set.is_image, &kind, &err);
        if (st == GAN_OK)
            st = gan_generator_run_generate(g, n, seed, GAN_SAMPLE_Z_STREAM, GAN_EVAL_CHUNK,
                                            samples, z, &err);
        if (st == GAN_OK)
            st = gan_samples_write(g, args.out, kind, samples, z, n, seed, &err);
        if (st != GAN_OK)
            rc = gan_run_fail(&err);
        else
            printf("wrote %s: %zu %s of iteration %lld, seed %llu\n", args.out, n,
                   s->set.is_image ? "images" : "points", (long long)gan_generator_run_iteration(g),
                   (unsigned long long)seed);
    }
    free(samples);
    free(z);
    fflush(stdout);
    gan_generator_run_free(g);
    gan_loader_free(loader);
    gan_run_args_free(&args);
    return rc;
}
