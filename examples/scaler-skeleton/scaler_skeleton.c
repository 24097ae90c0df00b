/* SPDX-License-Identifier: MIT */
/* scaler_skeleton.c — the smallest ganctl scaler: a fixed scale; a step not finite is skipped. */
#include <float.h>
#include <stddef.h>
#include <stdlib.h>
#include <ganctl/ganctl.h>
/* Whether the struct the core handed over reaches field f (an older core's is smaller). */
#define INSIDE(p, type, f) ((p)->struct_size >= offsetof(type, f) + sizeof (p)->f)
struct gan_scaler { const struct gan_host *host; double scale; };  /* create()'s host */

static gan_status skel_create(const struct gan_host *host, gan_scaler **out)
{
    double s = 0;  /* the user's value, or the default written once in skel_settings */
    if (host->get_float(host->ctx, "scale", &s) != GAN_OK || !(s >= FLT_MIN && s <= FLT_MAX))
        return host->fail(host->ctx, GAN_ERR_CONFIG, "skeleton: scale = %g is not FP32 > 0", s);
    if ((*out = malloc(sizeof **out)))
        **out = (struct gan_scaler){ host, (float)s };  /* the core scales in FP32 */
    return *out ? GAN_OK : host->fail(host->ctx, GAN_ERR_NOMEM, "skeleton: out of memory");
}
static void skel_destroy(gan_scaler *sc) { free(sc); }
static double skel_scale(gan_scaler *sc) { return sc->scale; }

static gan_status skel_update(gan_scaler *sc, const struct gan_scaler_input *in,
                              struct gan_scaler_decision *out)
{
    if (!INSIDE(in, struct gan_scaler_input, tensor_count) || (in->tensor_count && !in->tensors))
        return sc->host->fail(sc->host->ctx, GAN_ERR_INVALID, "skeleton: a malformed input");
    int bad = in->forward_overflow != 0;
    for (size_t k = 0; k < in->tensor_count; k++) bad |= in->tensors[k].stats.nonfinite > 0;
    sc->host->log(sc->host->ctx, GAN_LOG_DEBUG, "skeleton: scale %g, skip %d", sc->scale, bad);
    if (INSIDE(out, struct gan_scaler_decision, skip)) out->skip = bad;  /* the skip contract */
    if (INSIDE(out, struct gan_scaler_decision, scale)) out->scale = sc->scale;
    if (INSIDE(out, struct gan_scaler_decision, overflow)) out->overflow = in->forward_overflow
        ? GAN_SCALER_FORWARD_OVERFLOW : bad ? GAN_SCALER_GRADIENT_OVERFLOW : GAN_SCALER_NO_OVERFLOW;
    if (INSIDE(out, struct gan_scaler_decision, change)) out->change = GAN_SCALER_HELD;
    return GAN_OK;
}
static const struct gan_scaler_ops skel_ops = { .struct_size = sizeof(struct gan_scaler_ops),
    .create = skel_create, .destroy = skel_destroy, .scale = skel_scale, .update = skel_update };
static const struct gan_setting_spec skel_settings[] = {
    { "scale", GAN_SETTING_FLOAT, "1024.0", "the fixed scale" }, { NULL, 0, NULL, NULL } };
static const struct gan_plugin skel_plugin = { GAN_PLUGIN_HEADER, .kind = GAN_PLUGIN_SCALER,
    .name = "skeleton", .version = "1.0.0", .summary = "example: a fixed scale",
    .ops = &skel_ops, .settings = skel_settings };
GAN_DEFINE_PLUGIN(skel_plugin)
