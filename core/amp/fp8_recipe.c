/* SPDX-License-Identifier: MIT */
/* fp8_recipe.c — precision.mode "fp8" for a run: settings, the recipe instance and the
 * context's FP8 setup, every cast in the debug log, and the recipe's state. */
#include "config.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "amp/fp8_recipe.h"
#include "tensor/tensor_core.h"

void gan_fp8_read_settings(const gan_config *cfg, struct gan_fp8_settings *out)
{
    const char *mode = "fp32", *format = "hybrid", *rest = "bf16";
    int saturate = 1;
    gan_config_get_string(cfg, "precision.mode", &mode);
    memset(out, 0, sizeof *out);
    out->on = strcmp(mode, "fp8") == 0;
    out->recipe = "current";
    gan_config_get_string(cfg, "fp8.recipe", &out->recipe);
    gan_config_get_string(cfg, "fp8.format", &format);
    gan_config_get_string(cfg, "fp8.rest", &rest);
    if (gan_config_get_bool(cfg, "fp8.saturate", &saturate) != GAN_OK)
        saturate = 1;
    out->forward_format = GAN_F8E4M3;
    out->gradient_format = strcmp(format, "e4m3") == 0 ? GAN_F8E4M3 : GAN_F8E5M2;
    out->rest = strcmp(rest, "fp16") == 0 ? GAN_F16 : GAN_BF16;
    out->saturate = saturate != 0;
}

const char *gan_fp8_describe(const struct gan_fp8_settings *set, char *buf, size_t size)
{
    snprintf(buf, size, "fp8 %s under \"%s\", %s between products",
             set->gradient_format == GAN_F8E5M2 ? "hybrid (E4M3 forward, E5M2 gradients)"
                                                : "E4M3",
             set->recipe, set->rest == GAN_F16 ? "fp16" : "bf16");
    return buf;
}

gan_status gan_amp_fp8_init(struct gan_amp_fp8 *f, const struct gan_fp8_settings *set,
                            struct gan_module *module, const gan_config *cfg,
                            const struct gan_log *log, int log_casts, struct gan_error *err)
{
    memset(f, 0, sizeof *f);
    f->set = *set;
    f->log = log;
    f->log_casts = log_casts;
    f->log_now = 1;
    return gan_recipe_instance_new(module, cfg, log, &f->recipe, err);
}

static const char *format_name(enum gan_dtype dt)
{
    return dt == GAN_F8E4M3 ? "E4M3" : "E5M2";
}

/* Debug level 2: one line per cast, naming the operand, its scale and what the cast
 * flushed or saturated. */
static void log_cast(void *arg, const struct gan_fp8_operand_report *r)
{
    struct gan_amp_fp8 *f = arg;
    if (!f->log_now)
        return;
    char scale[64];
    if (r->scale_min == r->scale_max)
        snprintf(scale, sizeof scale, "scale 2^%.2f", log2((double)r->scale_min));
    else
        snprintf(scale, sizeof scale, "scales 2^%.2f..2^%.2f (blocks of %lld)",
                 log2((double)r->scale_min), log2((double)r->scale_max),
                 (long long)r->layout.block);
    gan_log_write(f->log, GAN_LOG_DEBUG,
                  "fp8 %s %s%s: %s, amax %.6g, %llu of %llu flushed to zero, %llu subnormal, "
                  "%llu saturated%s%s%s",
                  r->name, format_name(r->format), r->gradient ? " (gradient)" : "", scale,
                  (double)r->cast.amax, (unsigned long long)r->cast.underflow,
                  (unsigned long long)r->cast.elements, (unsigned long long)r->cast.subnormal,
                  (unsigned long long)r->cast.overflow, r->reason[0] ? " (" : "", r->reason,
                  r->reason[0] ? ")" : "");
}

gan_status gan_amp_fp8_apply(struct gan_amp_fp8 *f, gan_ctx *ctx, struct gan_error *err)
{
    struct gan_fp8_setup s;
    memset(&s, 0, sizeof s);
    s.forward_format = f->set.forward_format;
    s.gradient_format = f->set.gradient_format;
    s.cast_flags = f->set.saturate ? GAN_CAST_SATURATE : 0;
    s.recipe = &f->recipe->module->recipe;
    s.recipe_instance = f->recipe->rc;
    s.recipe_name = f->recipe->module->plugin.name;
    s.recipe_message = f->recipe->host.error.message;
    if (f->log_casts) {
        s.report = log_cast;
        s.report_arg = f;
    }
    if (gan_ctx_set_fp8(ctx, &s) != GAN_OK) {
        gan_status st = gan_ctx_status(ctx);
        gan_error_set(err, st, "precision.mode = \"fp8\": %s", gan_ctx_error(ctx));
        gan_ctx_clear_error(ctx);
        return st;
    }
    return GAN_OK;
}

void gan_amp_fp8_log_now(struct gan_amp_fp8 *f, int on)
{
    f->log_now = on;
}

void gan_amp_fp8_free(struct gan_amp_fp8 *f)
{
    gan_recipe_instance_free(f->recipe);
    f->recipe = NULL;
}

/* ------------------------------------------------------------------ state */

gan_status gan_fp8_state_add(struct gan_fp8_state *st, const char *name,
                             const double *values, size_t count)
{
    if (st->count == st->cap) {
        size_t cap = st->cap ? 2 * st->cap : 16;
        struct gan_recipe_array *a = realloc(st->arrays, cap * sizeof *a);
        if (!a)
            return GAN_ERR_NOMEM;
        st->arrays = a;
        st->cap = cap;
    }
    char *n = strdup(name);
    double *v = malloc((count ? count : 1) * sizeof *v);
    if (!n || !v) {
        free(n);
        free(v);
        return GAN_ERR_NOMEM;
    }
    if (count)
        memcpy(v, values, count * sizeof *v);
    st->arrays[st->count++] = (struct gan_recipe_array){ n, v, count };
    return GAN_OK;
}

void gan_fp8_state_clear(struct gan_fp8_state *st)
{
    for (size_t i = 0; i < st->count; i++) {
        free((char *)st->arrays[i].name);
        free((double *)st->arrays[i].values);
    }
    free(st->arrays);
    memset(st, 0, sizeof *st);
}

static gan_status put_array(void *arg, const char *name, const double *values, size_t count)
{
    return gan_fp8_state_add(arg, name, values, count);
}

gan_status gan_amp_fp8_save(struct gan_amp_fp8 *f, struct gan_fp8_state *out,
                            struct gan_error *err)
{
    gan_fp8_state_clear(out);
    snprintf(out->recipe, sizeof out->recipe, "%s", f->recipe->module->plugin.name);
    gan_status st = gan_recipe_instance_save_state(f->recipe, put_array, out, err);
    if (st != GAN_OK) {
        gan_fp8_state_clear(out);
        if (!err->message[0])   /* put_array's own failure: memory */
            gan_error_nomem(err, "saving the FP8 recipe's state");
    }
    return st;
}

gan_status gan_amp_fp8_load(struct gan_amp_fp8 *f, const struct gan_fp8_state *in,
                            const char *path, struct gan_error *err)
{
    if (in->recipe[0] == '\0')
        return gan_error_set(err, GAN_ERR_FORMAT, "%s: the checkpoint holds no FP8 recipe "
                             "state (metadata \"recipe\"), but this run casts through FP8 "
                             "under \"%s\": it was saved by a run in another precision; "
                             "resume with its precision.mode", path,
                             f->recipe->module->plugin.name);
    gan_status st = gan_recipe_instance_load_state(f->recipe, in->recipe, in->arrays, in->count,
                                                   err);
    if (st != GAN_OK) {
        char why[sizeof err->message];
        snprintf(why, sizeof why, "%s", err->message);
        gan_error_set(err, st, "%s: %s", path, why);
    }
    return st;
}
