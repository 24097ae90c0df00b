/* SPDX-License-Identifier: MIT */
/* good.c — backend-good.so: a well-formed test backend that reads one setting of each
 * type, logs at two levels, and describes what it was given. */
#include "config.h"

#include <stdio.h>

#include "fake_backend.h"

static const char *status_word(gan_status st)
{
    return st == GAN_OK ? "ok" : st == GAN_ERR_NOT_FOUND ? "not-found"
         : st == GAN_ERR_INVALID ? "invalid" : "other";
}

static gan_status good_create(const struct gan_host *host, gan_backend **out)
{
    long long threads = -1;
    double scale = -1;
    int verbose = -1;
    const char *label = "?";
    gan_status st;
    if ((st = host->get_int(host->ctx, "threads", &threads)) != GAN_OK ||
        (st = host->get_float(host->ctx, "scale", &scale)) != GAN_OK ||
        (st = host->get_bool(host->ctx, "verbose", &verbose)) != GAN_OK ||
        (st = host->get_string(host->ctx, "label", &label)) != GAN_OK)
        return host->fail(host->ctx, GAN_ERR_CONFIG, "good: a declared setting had no value (%d)", (int)st);
    /* An undeclared key, and a declared one asked for as the wrong type. */
    long long ignored;
    gan_status undeclared = host->get_int(host->ctx, "undeclared", &ignored);
    const char *wrong_type;
    gan_status wrong = host->get_string(host->ctx, "threads", &wrong_type);

    if ((st = fake_create(host, out)) != GAN_OK)
        return st;
    snprintf((*out)->description, sizeof (*out)->description,
             "good: threads=%lld scale=%g verbose=%s label=%s undeclared=%s wrong-type=%s",
             threads, scale, verbose ? "true" : "false", label, status_word(undeclared),
             status_word(wrong));
    host->log(host->ctx, GAN_LOG_INFO, "created with %lld threads", threads);
    host->log(host->ctx, GAN_LOG_DEBUG, "debug detail %d", 42);
    return GAN_OK;
}

static const struct gan_setting_spec good_settings[] = {
    { "threads", GAN_SETTING_INT, "3", "worker threads" },
    { "scale", GAN_SETTING_FLOAT, "0.5", "a factor" },
    { "verbose", GAN_SETTING_BOOL, "false", "say more" },
    { "label", GAN_SETTING_STRING, "\"plain\"", "a name" },
    { NULL, 0, NULL, NULL },
};

static const struct gan_backend_ops good_ops =
    FAKE_BACKEND_OPS(sizeof(struct gan_backend_ops), good_create, fake_gemm, NULL);

static const struct gan_plugin good_plugin = {
    GAN_PLUGIN_HEADER,
    .kind = GAN_PLUGIN_BACKEND,
    .name = "good",
    .version = "1.2.3",
    .summary = "a well-formed test backend",
    .ops = &good_ops,
    .settings = good_settings,
};

GAN_DEFINE_PLUGIN(good_plugin)
