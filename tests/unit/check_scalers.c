/* SPDX-License-Identifier: MIT */
/* check_scalers.c — the loss-scaler modules, each opened from the build tree through its
 * descriptor, driven with injected gradient statistics and checked against references. */
#include "config.h"

#include <check.h>
#include <dlfcn.h>
#include <float.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../lib/test_host.h"

/* ------------------------------------------------------------------ modules */

struct module {
    void *handle;
    const struct gan_plugin *d;
    const struct gan_scaler_ops *ops;
};

/* Opens a module file the way the program's loader does and checks its descriptor. */
static struct module open_path(const char *path, const char *name)
{
    struct module m;
    m.handle = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    ck_assert_msg(m.handle != NULL, "dlopen %s: %s", path, dlerror());
    gan_plugin_descriptor_fn fn;
    void *sym = dlsym(m.handle, GAN_PLUGIN_SYMBOL);
    ck_assert_msg(sym != NULL, "%s exports no %s", path, GAN_PLUGIN_SYMBOL);
    memcpy(&fn, &sym, sizeof fn);
    m.d = fn();
    ck_assert_ptr_nonnull(m.d);
    ck_assert_int_eq(m.d->abi_major, GAN_ABI_MAJOR);
    ck_assert_int_le(m.d->abi_minor, GAN_ABI_MINOR);
    ck_assert_uint_ge(m.d->struct_size, offsetof(struct gan_plugin, ops) + sizeof(void *));
    ck_assert_int_eq(m.d->kind, GAN_PLUGIN_SCALER);
    ck_assert_str_eq(m.d->name, name);
    m.ops = m.d->ops;
    ck_assert_ptr_nonnull(m.ops);
    ck_assert_uint_ge(m.ops->struct_size, offsetof(struct gan_scaler_ops, load_state) +
                      sizeof m.ops->load_state);
    /* The slots the core needs (the loader's required list for scalers), and the state
     * pair both set or, for a stateless scaler, both NULL. */
    ck_assert_msg(m.ops->create && m.ops->scale && m.ops->update, "%s lacks a required scaler slot",
                  path);
    ck_assert_msg(!m.ops->save_state == !m.ops->load_state,
                  "%s sets one of save_state and load_state without the other", path);
    return m;
}

static struct module open_scaler(const char *name)
{
    char path[512];
    snprintf(path, sizeof path, "%s/scaler-%s.so", GAN_TEST_SCALER_DIR, name);
    return open_path(path, name);
}

/* One scaler instance with its host and the count of updates given to it. */
struct rig {
    struct module m;
    struct test_host th;
    gan_scaler *sc;
    int64_t steps;
};

static gan_status rig_try(struct rig *r, struct module m, const char *const *settings)
{
    memset(r, 0, sizeof *r);
    r->m = m;
    test_host_init_declared(&r->th, settings, m.d->settings);
    r->sc = (gan_scaler *)r;   /* create must overwrite it on every path */
    gan_status st = m.ops->create(&r->th.host, &r->sc);
    if (st != GAN_OK)
        ck_assert_ptr_null(r->sc);
    return st;
}

static void rig_new(struct rig *r, const char *name, const char *const *settings)
{
    gan_status st = rig_try(r, open_scaler(name), settings);
    ck_assert_msg(st == GAN_OK, "scaler %s: create failed: %s", name, r->th.last_error);
    ck_assert_ptr_nonnull(r->sc);
}

static void rig_free(struct rig *r)
{
    if (r->sc && r->m.ops->destroy)
        r->m.ops->destroy(r->sc);
    r->sc = NULL;
}

static double scale_of(struct rig *r)
{
    return r->m.ops->scale(r->sc);
}

/* One update with the given tensors, at the scaler's own scale. */
static struct gan_scaler_decision rig_step(struct rig *r, const struct gan_scaler_tensor *t,
                                           size_t n, int forward)
{
    struct gan_scaler_input in = {
        .struct_size = sizeof in,
        .step = r->steps,
        .scale = scale_of(r),
        .forward_overflow = forward,
        .tensors = n ? t : NULL,
        .tensor_count = n,
    };
    struct gan_scaler_decision d;
    memset(&d, 0, sizeof d);
    d.struct_size = sizeof d;
    gan_status st = r->m.ops->update(r->sc, &in, &d);
    ck_assert_msg(st == GAN_OK, "update %lld failed: %s", (long long)r->steps, r->th.last_error);
    ck_assert_msg(d.scale == scale_of(r), "decision scale %.9g but scale() %.9g", d.scale,
                  scale_of(r));
    r->steps++;
    return d;
}

/* ------------------------------------------------------------------ statistics */

static struct gan_scaler_tensor tensor(enum gan_dtype dtype, enum gan_scaler_role role,
                                       uint64_t elements, uint64_t zeros, uint64_t subnormal,
                                       uint64_t nonfinite, double absmax, double sum_squares)
{
    struct gan_scaler_tensor t;
    memset(&t, 0, sizeof t);
    t.name = role == GAN_SCALER_INNER_GRAD ? "penalty.inner" : "critic.fc1.weight";
    t.dtype = dtype;
    t.role = role;
    t.stats.elements = elements;
    t.stats.zeros = zeros;
    t.stats.subnormal = subnormal;
    t.stats.nonfinite = nonfinite;
    t.stats.absmax = absmax;
    t.stats.sum_squares = sum_squares;
    t.stats.min_nonzero = absmax > 0 ? absmax * 1e-3 : 0;
    return t;
}

/* A healthy FP16 gradient: nothing non-finite, no zeros, norm ≈ 0.03. */
static struct gan_scaler_decision clean(struct rig *r)
{
    struct gan_scaler_tensor t = tensor(GAN_F16, GAN_SCALER_PARAM_GRAD, 1000, 0, 0, 0, 1e-3,
                                        1e-3);
    return rig_step(r, &t, 1, 0);
}

/* A gradient with an inf (or NaN: the scaler sees only the count). */
static struct gan_scaler_decision overflow(struct rig *r)
{
    struct gan_scaler_tensor t[2] = {
        tensor(GAN_F16, GAN_SCALER_PARAM_GRAD, 1000, 0, 0, 0, 1e-3, 1e-3),
        tensor(GAN_F16, GAN_SCALER_PARAM_GRAD, 1000, 0, 0, 3, 1e-3, 1e-3),
    };
    return rig_step(r, t, 2, 0);
}

/* A non-finite loss: the core skipped the backward, so no tensors. */
static struct gan_scaler_decision forward(struct rig *r)
{
    return rig_step(r, NULL, 0, 1);
}

/* 90 % of the elements flushed to zero, small absmax: underflow with headroom. */
static struct gan_scaler_decision underflowing(struct rig *r, double absmax)
{
    struct gan_scaler_tensor t = tensor(GAN_F16, GAN_SCALER_PARAM_GRAD, 1000, 850, 50, 0,
                                        absmax, absmax * absmax * 10);
    return rig_step(r, &t, 1, 0);
}

/* splitmix64: the tests' own deterministic random numbers. */
static uint64_t rng_next(uint64_t *s)
{
    uint64_t z = (*s += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

static double rng_unit(uint64_t *s)
{
    return (double)(rng_next(s) >> 11) * 0x1p-53;
}

/* A random step: two FP16 parameter gradients, an FP32 one and an inner gradient, with
 * underflow, headroom and overflow all varying. */
struct random_step {
    struct gan_scaler_tensor t[4];
    int forward;
};

static void random_step(uint64_t *rng, struct random_step *s, double p_overflow,
                        double p_forward)
{
    for (int i = 0; i < 4; i++) {
        uint64_t n = 256 + rng_next(rng) % 4096;
        double flushed = rng_unit(rng) < 0.3 ? 0.6 + 0.4 * rng_unit(rng) : 0.2 * rng_unit(rng);
        uint64_t zeros = (uint64_t)(flushed * 0.8 * (double)n);
        uint64_t sub = (uint64_t)(flushed * 0.2 * (double)n);
        double absmax = pow(10.0, -9.0 + 11.0 * rng_unit(rng));
        double ss = absmax * absmax * (double)n * rng_unit(rng) * 0.1;
        enum gan_dtype dt = i == 2 ? GAN_F32 : GAN_F16;
        enum gan_scaler_role role = i == 3 ? GAN_SCALER_INNER_GRAD : GAN_SCALER_PARAM_GRAD;
        uint64_t bad = rng_unit(rng) < p_overflow / 4 ? 1 + rng_next(rng) % 5 : 0;
        s->t[i] = tensor(dt, role, n, zeros, sub, bad, absmax, ss);
    }
    s->forward = rng_unit(rng) < p_forward;
}

/* ------------------------------------------------------------------ references */

/* PyTorch's _amp_update_scale_ (its CPU kernel), as
 * written there: an FP32 scale and an int growth tracker compared with ==. */
struct torch_ref {
    float scale;
    int tracker;
};

static void torch_update(struct torch_ref *r, int found_inf, double growth, double backoff,
                         int interval)
{
    if (found_inf) {
        r->scale = (float)((double)r->scale * backoff);
        r->tracker = 0;
    } else {
        int successful = r->tracker + 1;
        if (successful == interval) {
            float grown = (float)((double)r->scale * growth);
            if (isfinite(grown))
                r->scale = grown;
            r->tracker = 0;
        } else {
            r->tracker = successful;
        }
    }
}

/* MindSpore's DynamicLossScaleUpdateCell.construct:
 * FP32 tensors, cur_iter from 1, last_overflow_iter from 0, selects instead of branches. */
struct mindspore_ref {
    float scale;
    int cur_iter, last_overflow_iter;
};

static void mindspore_update(struct mindspore_ref *r, int overflow, float factor, int window)
{
    float on_overflow = overflow ? fmaxf(r->scale * (1.0f / factor), 1.0f) : r->scale;
    int should_inc = window <= r->cur_iter - r->last_overflow_iter;
    if (overflow || should_inc)
        r->last_overflow_iter = r->cur_iter;
    r->scale = should_inc && !overflow ? on_overflow * factor : on_overflow;
    r->cur_iter++;
}

/* DeepSpeed's DynamicLossScaler.update_scale:
 * Python floats, cur_iter from 0, last_overflow_iter from -1, growth when
 * (cur_iter - last_overflow_iter) % scale_window == 0; with delayed_shift (hysteresis)
 * > 1 an overflow first only lowers cur_hysteresis, which a growth refills (or, with
 * consecutive_hysteresis, every clean step); raise_error_at_min_scale raises when a
 * backoff is due at min_scale. Returns 0 where DeepSpeed would raise. */
struct deepspeed_ref {
    double cur_scale;
    long cur_iter, last_overflow_iter;
    int cur_hysteresis;
};

static int deepspeed_update(struct deepspeed_ref *r, int overflow, double factor, long window,
                            double min_scale, int delayed_shift, int consecutive,
                            int raise_at_min)
{
    if (overflow) {
        if (delayed_shift == 1 || r->cur_hysteresis == 1) {
            if (r->cur_scale == min_scale && raise_at_min)
                return 0;
            double next = r->cur_scale / factor;
            r->cur_scale = next > min_scale ? next : min_scale;
        } else {
            r->cur_hysteresis -= 1;
        }
        r->last_overflow_iter = r->cur_iter;
    } else {
        if (consecutive)
            r->cur_hysteresis = delayed_shift;
        if ((r->cur_iter - r->last_overflow_iter) % window == 0) {
            if (!consecutive)
                r->cur_hysteresis = delayed_shift;
            r->cur_scale *= factor;
        }
    }
    r->cur_iter++;
    return 1;
}

/* ------------------------------------------------------------------ descriptors */

static const char *const all_scalers[] = { "none", "static", "dynamic", "underflow-aware" };

static int valid_setting_name(const char *s)
{
    if (!*s || !(*s >= 'a' && *s <= 'z'))
        return 0;
    for (; *s; s++)
        if (!((*s >= 'a' && *s <= 'z') || (*s >= '0' && *s <= '9') || *s == '_'))
            return 0;
    return 1;
}

static char *read_text(const char *path)
{
    FILE *f = fopen(path, "rb");
    ck_assert_msg(f != NULL, "cannot open %s", path);
    static char text[1 << 17];
    size_t n = fread(text, 1, sizeof text - 1, f);
    fclose(f);
    ck_assert_uint_lt(n, sizeof text - 1);
    text[n] = '\0';
    return text;
}

START_TEST(test_descriptor)
{
    const char *name = all_scalers[_i];
    struct module m = open_scaler(name);
    ck_assert_uint_eq(m.d->struct_size, sizeof(struct gan_plugin));
    ck_assert_uint_eq(m.ops->struct_size, sizeof(struct gan_scaler_ops));
    ck_assert_ptr_nonnull(m.ops->destroy);
    ck_assert_ptr_nonnull(m.ops->describe);
    ck_assert(m.d->version && *m.d->version);
    ck_assert(m.d->summary && *m.d->summary);
    for (int k = 0; k < 8; k++)
        ck_assert_ptr_null(m.d->reserved[k]);

    /* Every setting is well formed and in ganctl-scaler(7), under a .B line. */
    const char *man = read_text(GAN_TEST_SRCDIR "/man/ganctl-scaler.7");
    char heading[64] = "\n.SS ";
    size_t at = strlen(heading);
    for (const char *c = name; *c && at < sizeof heading - 4; c++) {
        if (*c == '-')
            heading[at++] = '\\';            /* man's hyphen is \- */
        heading[at++] = *c;
    }
    heading[at++] = '\n';
    heading[at] = '\0';
    ck_assert_msg(strstr(man, heading), "ganctl-scaler(7) has no section for %s", name);
    for (const struct gan_setting_spec *s = m.d->settings; s && s->name; s++) {
        ck_assert_msg(valid_setting_name(s->name), "%s: bad setting name %s", name, s->name);
        ck_assert(s->summary && *s->summary);
        char line[80];
        snprintf(line, sizeof line, "\n.B %s\n", s->name);
        ck_assert_msg(strstr(man, line), "ganctl-scaler(7) does not document %s.%s", name,
                      s->name);
    }
}
END_TEST

/* The declared defaults are what the scaler uses when nothing is set: creating it with
 * each default written out gives the same description as creating it bare, where the
 * host answers with the settings table's defaults (the scalers keep no copy of their own). */
START_TEST(test_declared_defaults)
{
    const char *name = all_scalers[_i];
    struct module m = open_scaler(name);
    static char values[16][96];
    const char *settings[17];
    int n = 0;
    for (const struct gan_setting_spec *s = m.d->settings; s && s->name; s++) {
        if (!s->default_value)
            continue;
        ck_assert_int_lt(n, 16);
        const char *v = s->default_value;
        char unquoted[64];
        if (s->type == GAN_SETTING_STRING) {
            size_t len = strlen(v);
            ck_assert_msg(len >= 2 && v[0] == '"' && v[len - 1] == '"',
                          "%s.%s: a string default must be quoted", name, s->name);
            snprintf(unquoted, sizeof unquoted, "%.*s", (int)(len - 2), v + 1);
            v = unquoted;
        } else if (s->type == GAN_SETTING_FLOAT) {
            char *end;
            strtod(v, &end);
            ck_assert_msg(*end == '\0', "%s.%s: default %s is not a number", name, s->name, v);
        }
        snprintf(values[n], sizeof values[n], "%s=%s", s->name, v);
        settings[n] = values[n];
        n++;
    }
    settings[n] = NULL;

    struct rig bare, spelled;
    rig_new(&bare, name, NULL);
    rig_new(&spelled, name, settings);
    char first[640];
    snprintf(first, sizeof first, "%s", bare.m.ops->describe(bare.sc));
    ck_assert_str_eq(first, spelled.m.ops->describe(spelled.sc));
    ck_assert(scale_of(&bare) == scale_of(&spelled));
    rig_free(&bare);
    rig_free(&spelled);
}
END_TEST

/* The presets' first scales (the libraries' documented defaults); explicit settings win over them. */
START_TEST(test_preset_values)
{
    static const struct { const char *preset; double init; } cases[] = {
        { "none", 65536.0 }, { "pytorch", 65536.0 }, { "mindspore", 16777216.0 },
        { "deepspeed", 65536.0 },
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char p[64];
        snprintf(p, sizeof p, "preset=%s", cases[i].preset);
        const char *settings[] = { p, NULL };
        struct rig r;
        rig_new(&r, "dynamic", settings);
        ck_assert_double_eq(scale_of(&r), cases[i].init);
        rig_free(&r);
        rig_new(&r, "underflow-aware", settings);
        ck_assert_double_eq(scale_of(&r), cases[i].init);
        rig_free(&r);
    }
    const char *over[] = { "preset=mindspore", "init=512", NULL };
    struct rig r;
    rig_new(&r, "dynamic", over);
    ck_assert_double_eq(scale_of(&r), 512.0);
    rig_free(&r);
}
END_TEST

/* ------------------------------------------------------------------ none and static */

START_TEST(test_fixed_scalers)
{
    struct rig r;
    rig_new(&r, "none", NULL);
    ck_assert_double_eq(scale_of(&r), 1.0);
    struct gan_scaler_decision d = clean(&r);
    ck_assert_int_eq(d.skip, 0);
    ck_assert_int_eq(d.overflow, GAN_SCALER_NO_OVERFLOW);
    d = overflow(&r);
    ck_assert_int_eq(d.skip, 1);
    ck_assert_int_eq(d.overflow, GAN_SCALER_GRADIENT_OVERFLOW);
    ck_assert_int_eq(d.change, GAN_SCALER_HELD);
    ck_assert_double_eq(d.scale, 1.0);
    d = forward(&r);
    ck_assert_int_eq(d.skip, 1);
    ck_assert_int_eq(d.overflow, GAN_SCALER_FORWARD_OVERFLOW);
    ck_assert_double_eq(d.scale, 1.0);
    rig_free(&r);

    rig_new(&r, "static", NULL);
    ck_assert_double_eq(scale_of(&r), 1024.0);
    for (int i = 0; i < 5000; i++) {
        d = (i % 7 == 3) ? overflow(&r) : clean(&r);
        ck_assert_int_eq(d.skip, i % 7 == 3);
        ck_assert_double_eq(d.scale, 1024.0);
    }
    /* Underflow means nothing to a fixed scale. */
    d = underflowing(&r, 1e-6);
    ck_assert_int_eq(d.skip, 0);
    ck_assert_double_eq(d.scale, 1024.0);
    rig_free(&r);

    const char *eight[] = { "scale=8", NULL };
    rig_new(&r, "static", eight);
    ck_assert_double_eq(scale_of(&r), 8.0);
    rig_free(&r);
    /* A setting is rounded to the FP32 number the core will use. */
    const char *tenth[] = { "scale=0.1", NULL };
    rig_new(&r, "static", tenth);
    ck_assert(scale_of(&r) == (double)0.1f);
    rig_free(&r);
}
END_TEST

/* ------------------------------------------------------------------ growth and backoff */

static const struct { const char *preset; const char *interval; int64_t every; double init; }
growth_cases[] = {
    { "none", NULL, 2000, 65536.0 },
    { "pytorch", NULL, 2000, 65536.0 },
    { "mindspore", NULL, 2000, 16777216.0 },
    { "deepspeed", NULL, 1000, 65536.0 },
    { "pytorch", "growth_interval=1", 1, 65536.0 },
    { "none", "growth_interval=7", 7, 65536.0 },
};

/* All clean: the scale doubles exactly at every interval-th update and at no other. */
START_TEST(test_growth_every_interval)
{
    char p[64];
    snprintf(p, sizeof p, "preset=%s", growth_cases[_i].preset);
    const char *settings[] = { p, growth_cases[_i].interval, NULL };
    int64_t every = growth_cases[_i].every;
    for (int ua = 0; ua < 2; ua++) {
        struct rig r;
        rig_new(&r, ua ? "underflow-aware" : "dynamic", settings);
        double expect = growth_cases[_i].init;
        for (int64_t k = 1; k <= 3 * every + 1; k++) {
            struct gan_scaler_decision d = clean(&r);
            int grows = k % every == 0;
            if (grows)
                expect *= 2;
            ck_assert_msg(d.scale == expect, "%s update %lld: scale %.9g, expected %.9g",
                          growth_cases[_i].preset, (long long)k, d.scale, expect);
            ck_assert_int_eq(d.change, grows ? GAN_SCALER_GREW : GAN_SCALER_HELD);
            ck_assert_int_eq(d.skip, 0);
        }
        rig_free(&r);
    }
}
END_TEST

START_TEST(test_backoff_and_skip)
{
    const char *settings[] = { "growth_interval=3", NULL };
    struct rig r;
    rig_new(&r, "dynamic", settings);
    clean(&r);
    clean(&r);
    struct gan_scaler_decision d = overflow(&r);    /* resets the count: 2 were clean */
    ck_assert_int_eq(d.skip, 1);
    ck_assert_int_eq(d.overflow, GAN_SCALER_GRADIENT_OVERFLOW);
    ck_assert_int_eq(d.change, GAN_SCALER_BACKED_OFF);
    ck_assert_double_eq(d.scale, 32768.0);
    d = clean(&r);
    ck_assert_double_eq(d.scale, 32768.0);
    d = clean(&r);
    ck_assert_double_eq(d.scale, 32768.0);
    d = clean(&r);
    ck_assert_double_eq(d.scale, 65536.0);
    /* NaN and inf look the same: a non-finite count; several tensors, one bad. */
    struct gan_scaler_tensor t[3] = {
        tensor(GAN_F32, GAN_SCALER_PARAM_GRAD, 10, 0, 0, 0, 1, 1),
        tensor(GAN_F16, GAN_SCALER_PARAM_GRAD, 10, 0, 0, 0, 1, 1),
        tensor(GAN_F16, GAN_SCALER_INNER_GRAD, 10, 0, 0, 10, 0, 0),
    };
    d = rig_step(&r, t, 3, 0);
    ck_assert_int_eq(d.skip, 1);
    ck_assert_int_eq(d.overflow, GAN_SCALER_GRADIENT_OVERFLOW);
    ck_assert_double_eq(d.scale, 32768.0);
    /* Even an FP32 gradient's inf skips the step. */
    t[2].stats.nonfinite = 0;
    t[0].stats.nonfinite = 1;
    d = rig_step(&r, t, 3, 0);
    ck_assert_int_eq(d.skip, 1);
    ck_assert_double_eq(d.scale, 16384.0);
    rig_free(&r);
}
END_TEST

/* A hand-derived trace of torch.cuda.amp.GradScaler.update with growth_interval 3 from
 * scale 8 (its rule: on inf ×0.5 and tracker 0; else tracker + 1, at 3 ×2 and 0). */
START_TEST(test_pytorch_trace)
{
    const char *settings[] = { "preset=pytorch", "growth_interval=3", "init=8", NULL };
    const char *seq = "CCCOCCOOCCCCCC";
    static const double scales[] = { 8, 8, 16, 8, 8, 8, 4, 2, 2, 2, 4, 4, 4, 8 };
    struct rig r;
    rig_new(&r, "dynamic", settings);
    for (size_t i = 0; seq[i]; i++) {
        struct gan_scaler_decision d = seq[i] == 'O' ? overflow(&r) : clean(&r);
        ck_assert_msg(d.scale == scales[i], "step %zu: %.9g, expected %.9g", i, d.scale,
                      scales[i]);
        ck_assert_int_eq(d.skip, seq[i] == 'O');
    }
    rig_free(&r);
}
END_TEST

/* The rule against each library's own formulation, on long random sequences whose
 * overflows come more often when the scale is high, as real ones do. */
START_TEST(test_pytorch_reference)
{
    static const char *const intervals[] = { "growth_interval=2000", "growth_interval=5" };
    for (int v = 0; v < 2; v++) {
        int interval = v == 0 ? 2000 : 5;
        const char *settings[] = { "preset=pytorch", intervals[v], NULL };
        struct rig r;
        rig_new(&r, "dynamic", settings);
        struct torch_ref ref = { 65536.0f, 0 };
        uint64_t rng = 11 + (uint64_t)v;
        for (int k = 0; k < 30000; k++) {
            double p = ref.scale > 0x1p30 ? 0.5 : 0.3 / interval;
            if (k > 20000 && k < 20400)
                p = 0.9;   /* a burst down toward 0, which PyTorch has no floor against */
            int bad = rng_unit(&rng) < p;
            struct gan_scaler_decision d = bad ? overflow(&r) : clean(&r);
            float before = ref.scale;
            torch_update(&ref, bad, 2.0, 0.5, interval);
            ck_assert_msg(d.scale == (double)ref.scale, "update %d: %.9g, PyTorch %.9g", k,
                          d.scale, (double)ref.scale);
            if (before > 0)
                ck_assert_int_eq(d.skip, bad);
        }
        rig_free(&r);
    }
}
END_TEST

START_TEST(test_mindspore_reference)
{
    static const char *const intervals[] = { "growth_interval=2000", "growth_interval=4" };
    for (int v = 0; v < 2; v++) {
        int window = v == 0 ? 2000 : 4;
        const char *settings[] = { "preset=mindspore", intervals[v], NULL };
        struct rig r;
        rig_new(&r, "dynamic", settings);
        struct mindspore_ref ref = { 16777216.0f, 1, 0 };
        uint64_t rng = 23 + (uint64_t)v;
        for (int k = 0; k < 30000; k++) {
            double p = ref.scale > 0x1p30 ? 0.5 : 0.3 / window;
            if (k > 10000 && k < 10300)
                p = 0.95;  /* long enough to reach the floor of 1 */
            int bad = rng_unit(&rng) < p;
            struct gan_scaler_decision d = bad ? overflow(&r) : clean(&r);
            mindspore_update(&ref, bad, 2.0f, window);
            ck_assert_msg(d.scale == (double)ref.scale, "update %d: %.9g, MindSpore %.9g", k,
                          d.scale, (double)ref.scale);
            ck_assert_int_eq(d.skip, bad);
        }
        rig_free(&r);
    }
}
END_TEST

START_TEST(test_deepspeed_reference)
{
    /* _i: 0 the preset as is (fail_at_min off so the sequence can sit at min), 1 with
     * consecutive hysteresis, 2 with hysteresis 3 and window 6. */
    static const char *const variants[][4] = {
        { "preset=deepspeed", "fail_at_min=false", NULL, NULL },
        { "preset=deepspeed", "fail_at_min=false", "hysteresis_consecutive=true", NULL },
        { "preset=deepspeed", "fail_at_min=false", "hysteresis=3", "growth_interval=6" },
    };
    int hysteresis = _i == 2 ? 3 : 2;
    long window = _i == 2 ? 6 : 1000;
    struct rig r;
    const char *settings[5] = { variants[_i][0], variants[_i][1], variants[_i][2],
                                variants[_i][3], NULL };
    rig_new(&r, "dynamic", settings);
    struct deepspeed_ref ref = { 65536.0, 0, -1, hysteresis };
    uint64_t rng = 37 + (uint64_t)_i;
    for (int k = 0; k < 40000; k++) {
        double p = ref.cur_scale > 0x1p24 ? 0.3 : 0.3 / (double)window;
        if (k % 5000 > 4700)
            p = 0.7;       /* bursts: hysteresis, then backoffs down to the floor */
        int bad = rng_unit(&rng) < p;
        struct gan_scaler_decision d = bad ? overflow(&r) : clean(&r);
        double before = ref.cur_scale;
        int h_before = ref.cur_hysteresis;
        ck_assert(deepspeed_update(&ref, bad, 2.0, window, 1.0, hysteresis, _i == 1, 0));
        ck_assert_msg(d.scale == ref.cur_scale, "update %d: %.9g, DeepSpeed %.9g", k, d.scale,
                      ref.cur_scale);
        ck_assert_int_eq(d.skip, bad);
        enum gan_scaler_change expect =
            bad ? (ref.cur_hysteresis < h_before ? GAN_SCALER_HYSTERESIS :
                   d.scale != before ? GAN_SCALER_BACKED_OFF : GAN_SCALER_HELD) :
                  (d.scale != before ? GAN_SCALER_GREW : GAN_SCALER_HELD);
        ck_assert_int_eq(d.change, expect);
    }
    rig_free(&r);
}
END_TEST

/* ------------------------------------------------------------------ clamps */

START_TEST(test_mindspore_floor)
{
    const char *settings[] = { "preset=mindspore", NULL };
    struct rig r;
    rig_new(&r, "dynamic", settings);
    double expect = 16777216.0;
    for (int k = 1; k <= 40; k++) {
        struct gan_scaler_decision d = overflow(&r);
        expect = expect / 2 < 1 ? 1 : expect / 2;
        ck_assert_double_eq(d.scale, expect);
        ck_assert_int_eq(d.change, k <= 24 ? GAN_SCALER_BACKED_OFF : GAN_SCALER_HELD);
        ck_assert_int_eq(d.skip, 1);
    }
    ck_assert_double_eq(scale_of(&r), 1.0);
    rig_free(&r);
}
END_TEST

/* PyTorch has no floor: its FP32 scale halves through the subnormals to exactly 0
 * (2^16 · 2^-165 = 2^-149, FP32's smallest; half of that rounds to even, 0). At 0
 * nothing can be unscaled, so every later step is skipped. */
START_TEST(test_pytorch_reaches_zero)
{
    const char *settings[] = { "preset=pytorch", NULL };
    struct rig r;
    rig_new(&r, "dynamic", settings);
    for (int k = 1; k <= 165; k++)
        ck_assert_double_eq(forward(&r).scale, ldexp(1.0, 16 - k));
    ck_assert_double_eq(scale_of(&r), (double)FLT_TRUE_MIN);
    struct gan_scaler_decision d = forward(&r);
    ck_assert(d.scale == 0.0);
    ck_assert_int_eq(d.change, GAN_SCALER_BACKED_OFF);
    for (int k = 0; k < 3000; k++) {
        d = clean(&r);
        ck_assert_int_eq(d.skip, 1);
        ck_assert_int_eq(d.overflow, GAN_SCALER_GRADIENT_OVERFLOW);
        ck_assert(d.scale == 0.0);
    }
    rig_free(&r);

    /* ganctl's own defaults and underflow-aware stop at the floor of 1. */
    for (int ua = 0; ua < 2; ua++) {
        const char *backoff[] = { "forward_overflow=backoff", NULL };
        rig_new(&r, ua ? "underflow-aware" : "dynamic", backoff);
        for (int k = 0; k < 300; k++)
            d = forward(&r);
        ck_assert_double_eq(d.scale, 1.0);
        for (int k = 0; k < 300; k++)
            d = overflow(&r);
        ck_assert_double_eq(d.scale, 1.0);
        rig_free(&r);
    }
}
END_TEST

START_TEST(test_max_clamp)
{
    /* Growth stops at max; the count still starts again. */
    const char *capped[] = { "growth_interval=2", "init=4194304", NULL };
    struct rig r;
    rig_new(&r, "dynamic", capped);
    static const double expect[] = { 4194304, 8388608, 8388608, 16777216, 16777216, 16777216,
                                     16777216, 16777216 };
    for (int k = 0; k < 8; k++) {
        struct gan_scaler_decision d = clean(&r);
        ck_assert_double_eq(d.scale, expect[k]);
        ck_assert_int_eq(d.change, k == 1 || k == 3 ? GAN_SCALER_GREW : GAN_SCALER_HELD);
    }
    rig_free(&r);

    /* A max that is not a power of two is reached exactly. */
    const char *odd[] = { "growth_interval=1", "init=600", "max=1000", "min=0.5", NULL };
    rig_new(&r, "dynamic", odd);
    ck_assert_double_eq(clean(&r).scale, 1000.0);
    ck_assert_double_eq(clean(&r).scale, 1000.0);
    ck_assert_double_eq(overflow(&r).scale, 500.0);
    rig_free(&r);

    /* A floor that is not a power of two: a backoff stops on it. */
    const char *floor3[] = { "init=5", "min=3", NULL };
    rig_new(&r, "dynamic", floor3);
    ck_assert_double_eq(overflow(&r).scale, 3.0);
    ck_assert_double_eq(overflow(&r).scale, 3.0);
    rig_free(&r);

    /* PyTorch refuses to grow to inf: from 2^127 the FP32 product is inf. */
    const char *top[] = { "preset=pytorch", "growth_interval=1", "init=1.7014118346046923e38",
                          NULL };
    rig_new(&r, "dynamic", top);
    for (int k = 0; k < 5; k++) {
        struct gan_scaler_decision d = clean(&r);
        ck_assert_double_eq(d.scale, ldexp(1.0, 127));
        ck_assert_int_eq(d.change, GAN_SCALER_HELD);
    }
    ck_assert_double_eq(overflow(&r).scale, ldexp(1.0, 126));
    ck_assert_double_eq(clean(&r).scale, ldexp(1.0, 127));
    rig_free(&r);
}
END_TEST

/* ------------------------------------------------------------------ hysteresis */

/* DeepSpeed's hysteresis is not "back off after N consecutive overflows": the counter
 * drops by one per overflow, backs off once it is at 1 (and keeps backing off on every
 * further overflow), and is refilled only by a growth (update_scale,
 * consecutive_hysteresis false). Every overflow is skipped and restarts the window. */
START_TEST(test_deepspeed_hysteresis_trace)
{
    const char *settings[] = { "preset=deepspeed", "growth_interval=4", "init=64", NULL };
    const char *seq = "OOOCCCCOCOCCCC";
    static const double scales[] = { 64, 32, 16, 16, 16, 16, 32, 32, 32, 16, 16, 16, 16, 32 };
    static const enum gan_scaler_change changes[] = {
        GAN_SCALER_HYSTERESIS, GAN_SCALER_BACKED_OFF, GAN_SCALER_BACKED_OFF,
        GAN_SCALER_HELD, GAN_SCALER_HELD, GAN_SCALER_HELD, GAN_SCALER_GREW,
        GAN_SCALER_HYSTERESIS, GAN_SCALER_HELD, GAN_SCALER_BACKED_OFF,
        GAN_SCALER_HELD, GAN_SCALER_HELD, GAN_SCALER_HELD, GAN_SCALER_GREW,
    };
    struct rig r;
    rig_new(&r, "dynamic", settings);
    for (size_t i = 0; seq[i]; i++) {
        struct gan_scaler_decision d = seq[i] == 'O' ? overflow(&r) : clean(&r);
        ck_assert_msg(d.scale == scales[i], "step %zu: %.9g, expected %.9g", i, d.scale,
                      scales[i]);
        ck_assert_int_eq(d.change, changes[i]);
        ck_assert_int_eq(d.skip, seq[i] == 'O');
    }
    rig_free(&r);

    /* consecutive_hysteresis: any clean step refills it, so isolated overflows never
     * back off and two in a row do. */
    const char *consecutive[] = { "preset=deepspeed", "hysteresis_consecutive=true", "init=64",
                                  NULL };
    rig_new(&r, "dynamic", consecutive);
    for (int k = 0; k < 10; k++) {
        ck_assert_int_eq(overflow(&r).change, GAN_SCALER_HYSTERESIS);
        clean(&r);
    }
    ck_assert_double_eq(scale_of(&r), 64.0);
    ck_assert_int_eq(overflow(&r).change, GAN_SCALER_HYSTERESIS);
    ck_assert_int_eq(overflow(&r).change, GAN_SCALER_BACKED_OFF);
    ck_assert_double_eq(scale_of(&r), 32.0);
    rig_free(&r);
}
END_TEST

/* DeepSpeed stops the run when a backoff is due at min_scale (raise_error_at_min_scale);
 * the preset does too, and leaves the state as it was. */
START_TEST(test_deepspeed_fails_at_min)
{
    const char *settings[] = { "preset=deepspeed", "init=2", NULL };
    struct rig r;
    rig_new(&r, "dynamic", settings);
    ck_assert_int_eq(overflow(&r).change, GAN_SCALER_HYSTERESIS);
    ck_assert_double_eq(overflow(&r).scale, 1.0);
    struct gan_scaler_state before, after;
    ck_assert_int_eq(r.m.ops->save_state(r.sc, &before), GAN_OK);
    struct gan_scaler_tensor t = tensor(GAN_F16, GAN_SCALER_PARAM_GRAD, 10, 0, 0, 1, 1, 1);
    struct gan_scaler_input in = { .struct_size = sizeof in, .step = 2, .scale = 1.0,
                                   .tensors = &t, .tensor_count = 1 };
    struct gan_scaler_decision d;
    memset(&d, 0x5a, sizeof d);
    d.struct_size = sizeof d;
    ck_assert_int_eq(r.m.ops->update(r.sc, &in, &d), GAN_ERR_NUMERIC);
    ck_assert_msg(strstr(r.th.last_error, "fail_at_min"), "%s", r.th.last_error);
    ck_assert_int_eq(d.skip, 0x5a5a5a5a);
    ck_assert_int_eq(r.m.ops->save_state(r.sc, &after), GAN_OK);
    ck_assert_int_eq(memcmp(&before, &after, sizeof before), 0);
    rig_free(&r);

    struct deepspeed_ref ref = { 2.0, 0, -1, 2 };
    ck_assert(deepspeed_update(&ref, 1, 2.0, 1000, 1.0, 2, 0, 1));
    ck_assert(deepspeed_update(&ref, 1, 2.0, 1000, 1.0, 2, 0, 1));
    ck_assert(!deepspeed_update(&ref, 1, 2.0, 1000, 1.0, 2, 0, 1));
}
END_TEST

/* ------------------------------------------------------------------ underflow */

START_TEST(test_underflow_with_headroom)
{
    struct rig r;
    rig_new(&r, "underflow-aware", NULL);
    ck_assert_double_eq(scale_of(&r), 65536.0);
    rig_free(&r);

    /* absmax 1e-3: raising to g keeps headroom while 1e-3 · g · 16 < 65504, that is
     * up to g = 2^21; from 1 that is 21 raises, one per update, then none. */
    const char *one[] = { "init=1", NULL };
    rig_new(&r, "underflow-aware", one);
    for (int k = 1; k <= 30; k++) {
        struct gan_scaler_decision d = underflowing(&r, 1e-3);
        ck_assert_int_eq(d.skip, 0);
        ck_assert_double_eq(d.scale, ldexp(1.0, k < 21 ? k : 21));
        ck_assert_int_eq(d.change, k <= 21 ? GAN_SCALER_RAISED : GAN_SCALER_HELD);
    }
    rig_free(&r);

    /* The dynamic scaler does not see underflow at all. */
    rig_new(&r, "dynamic", one);
    for (int k = 0; k < 30; k++)
        ck_assert_double_eq(underflowing(&r, 1e-3).scale, 1.0);
    rig_free(&r);

    /* The collapse: both networks from 2^-14 with 9 in 10 gradients flushed; the
     * rule climbs one binade per update, 2^-14 → 2^2 in 16 updates. */
    const char *low[] = { "init=0.00006103515625", "min=0.00006103515625", NULL };
    rig_new(&r, "underflow-aware", low);
    for (int k = 1; k <= 16; k++)
        ck_assert_double_eq(underflowing(&r, 1e-2).scale, ldexp(1.0, k - 14));
    rig_free(&r);
}
END_TEST

START_TEST(test_underflow_without_headroom)
{
    const char *one[] = { "init=1", NULL };
    struct rig r;
    rig_new(&r, "underflow-aware", one);
    /* 3000 · 2 · 16 = 96000 ≥ 65504: no room to double. */
    for (int k = 0; k < 10; k++) {
        struct gan_scaler_decision d = underflowing(&r, 3000);
        ck_assert_double_eq(d.scale, 1.0);
        ck_assert_int_eq(d.change, GAN_SCALER_HELD);
    }
    /* 2000 · 2 · 16 = 64000 < 65504: room for one. */
    ck_assert_double_eq(underflowing(&r, 2000).scale, 2.0);
    ck_assert_double_eq(underflowing(&r, 2000).scale, 2.0);
    rig_free(&r);

    /* A smaller headroom lets it go further. */
    const char *tight[] = { "init=1", "headroom=1", NULL };
    rig_new(&r, "underflow-aware", tight);
    for (int k = 0; k < 10; k++)
        underflowing(&r, 3000);
    ck_assert_double_eq(scale_of(&r), 16.0);   /* 3000 · 32 ≥ 65504 */
    rig_free(&r);

    /* An inner gradient's absmax counts for headroom, though not for underflow. */
    rig_new(&r, "underflow-aware", one);
    struct gan_scaler_tensor t[2] = {
        tensor(GAN_F16, GAN_SCALER_PARAM_GRAD, 1000, 900, 0, 0, 1e-3, 1e-5),
        tensor(GAN_F16, GAN_SCALER_INNER_GRAD, 512, 0, 0, 0, 2100, 1e4),
    };
    ck_assert_double_eq(rig_step(&r, t, 2, 0).scale, 1.0);
    t[1].stats.absmax = 1.5;
    ck_assert_double_eq(rig_step(&r, t, 2, 0).scale, 2.0);
    /* An inner gradient full of zeros is no sign of underflow. */
    t[0].stats.zeros = 0;
    t[1].stats.zeros = 512;
    ck_assert_double_eq(rig_step(&r, t, 2, 0).scale, 2.0);
    rig_free(&r);
}
END_TEST

START_TEST(test_underflow_signals)
{
    const char *one[] = { "init=1", NULL };
    struct rig r;
    rig_new(&r, "underflow-aware", one);
    /* The norm alone: no zeros, but ‖u‖ = 1e-7 < 1e-6. */
    struct gan_scaler_tensor quiet = tensor(GAN_F16, GAN_SCALER_PARAM_GRAD, 100, 0, 0, 0,
                                            1e-8, 1e-14);
    ck_assert_int_eq(rig_step(&r, &quiet, 1, 0).change, GAN_SCALER_RAISED);
    ck_assert_double_eq(scale_of(&r), 2.0);
    /* Exactly at the threshold fraction: not above it. */
    struct gan_scaler_tensor half = tensor(GAN_F16, GAN_SCALER_PARAM_GRAD, 1000, 400, 100, 0,
                                           1e-3, 1e-2);
    ck_assert_int_eq(rig_step(&r, &half, 1, 0).change, GAN_SCALER_HELD);
    half.stats.subnormal = 101;
    ck_assert_int_eq(rig_step(&r, &half, 1, 0).change, GAN_SCALER_RAISED);
    /* Only FP16 parameter gradients can underflow at this scale. */
    struct gan_scaler_tensor wide[2] = {
        tensor(GAN_F32, GAN_SCALER_PARAM_GRAD, 1000, 990, 0, 0, 1e-9, 1e-20),
        tensor(GAN_BF16, GAN_SCALER_PARAM_GRAD, 1000, 990, 0, 0, 1e-9, 1e-20),
    };
    ck_assert_int_eq(rig_step(&r, wide, 2, 0).change, GAN_SCALER_HELD);
    /* The fraction is over all FP16 parameter elements together. */
    struct gan_scaler_tensor mixed[2] = {
        tensor(GAN_F16, GAN_SCALER_PARAM_GRAD, 100, 100, 0, 0, 0, 0),
        tensor(GAN_F16, GAN_SCALER_PARAM_GRAD, 900, 0, 0, 0, 1e-3, 1e-2),
    };
    ck_assert_int_eq(rig_step(&r, mixed, 2, 0).change, GAN_SCALER_HELD);
    rig_free(&r);

    const char *off[] = { "init=1", "norm_threshold=0", "underflow_threshold=1", NULL };
    rig_new(&r, "underflow-aware", off);
    ck_assert_int_eq(rig_step(&r, &quiet, 1, 0).change, GAN_SCALER_HELD);
    ck_assert_int_eq(underflowing(&r, 1e-3).change, GAN_SCALER_HELD);
    rig_free(&r);
}
END_TEST

/* After an overflow at s the raise never returns to s; a growth clears that ceiling. */
START_TEST(test_underflow_ceiling)
{
    const char *settings[] = { "init=8", "growth_interval=5", NULL };
    struct rig r;
    rig_new(&r, "underflow-aware", settings);
    ck_assert_double_eq(overflow(&r).scale, 4.0);
    for (int k = 0; k < 4; k++) {
        struct gan_scaler_decision d = underflowing(&r, 1e-3);
        ck_assert_double_eq(d.scale, 4.0);
        ck_assert_int_eq(d.change, GAN_SCALER_HELD);
    }
    struct gan_scaler_decision d = underflowing(&r, 1e-3);   /* the 5th clean: growth */
    ck_assert_int_eq(d.change, GAN_SCALER_GREW);
    ck_assert_double_eq(d.scale, 8.0);
    d = underflowing(&r, 1e-3);
    ck_assert_int_eq(d.change, GAN_SCALER_RAISED);
    ck_assert_double_eq(d.scale, 16.0);
    /* A raise restarts the growth count. */
    for (int k = 0; k < 4; k++)
        ck_assert_double_eq(clean(&r).scale, 16.0);
    ck_assert_double_eq(clean(&r).scale, 32.0);
    rig_free(&r);
}
END_TEST

/* ------------------------------------------------------------------ forward overflow */

START_TEST(test_forward_overflow)
{
    /* dynamic, like every library, cannot tell them apart by default: it backs off. */
    const char *interval4[] = { "growth_interval=4", NULL };
    struct rig r;
    rig_new(&r, "dynamic", interval4);
    struct gan_scaler_decision d = forward(&r);
    ck_assert_int_eq(d.skip, 1);
    ck_assert_int_eq(d.overflow, GAN_SCALER_FORWARD_OVERFLOW);
    ck_assert_int_eq(d.change, GAN_SCALER_BACKED_OFF);
    ck_assert_double_eq(d.scale, 32768.0);
    /* The forward flag wins over non-finite gradients: they are its NaN carried back. */
    struct gan_scaler_tensor nan = tensor(GAN_F16, GAN_SCALER_PARAM_GRAD, 10, 0, 0, 10, 0, 0);
    d = rig_step(&r, &nan, 1, 1);
    ck_assert_int_eq(d.overflow, GAN_SCALER_FORWARD_OVERFLOW);
    rig_free(&r);

    /* underflow-aware holds: skip, scale kept, and the growth count neither advances nor
     * restarts (3 clean, a forward overflow, 1 clean: that is the 4th clean). */
    for (int v = 0; v < 2; v++) {
        const char *hold[] = { "growth_interval=4", "forward_overflow=hold", NULL };
        rig_new(&r, v ? "dynamic" : "underflow-aware", v ? hold : interval4);
        clean(&r);
        clean(&r);
        clean(&r);
        d = forward(&r);
        ck_assert_int_eq(d.skip, 1);
        ck_assert_int_eq(d.overflow, GAN_SCALER_FORWARD_OVERFLOW);
        ck_assert_int_eq(d.change, GAN_SCALER_HELD);
        ck_assert_double_eq(d.scale, 65536.0);
        d = clean(&r);
        ck_assert_int_eq(d.change, GAN_SCALER_GREW);
        ck_assert_double_eq(d.scale, 131072.0);
        /* Endless NaN losses leave the scale where it was. */
        for (int k = 0; k < 1000; k++)
            ck_assert_double_eq(forward(&r).scale, 131072.0);
        rig_free(&r);
    }

    /* A gradient overflow is still a gradient overflow for underflow-aware. */
    rig_new(&r, "underflow-aware", NULL);
    d = overflow(&r);
    ck_assert_int_eq(d.overflow, GAN_SCALER_GRADIENT_OVERFLOW);
    ck_assert_double_eq(d.scale, 32768.0);
    rig_free(&r);
}
END_TEST

/* ------------------------------------------------------------------ state */

struct state_case {
    const char *scaler;
    const char *settings[4];
    double p_overflow, p_forward;
};

static const struct state_case state_cases[] = {
    { "none", { NULL }, 0.05, 0.02 },
    { "static", { "scale=512", NULL }, 0.05, 0.02 },
    { "dynamic", { "growth_interval=7", NULL }, 0.08, 0.02 },
    { "dynamic", { "preset=deepspeed", "growth_interval=5", "fail_at_min=false", NULL }, 0.15,
      0.05 },
    { "dynamic", { "preset=pytorch", "growth_interval=3", NULL }, 0.1, 0.05 },
    { "underflow-aware", { "init=1", "growth_interval=9", NULL }, 0.05, 0.03 },
    { "underflow-aware", { "preset=deepspeed", "hysteresis=3", "growth_interval=20", NULL },
      0.03, 0.02 },
};

static int same_decision(const struct gan_scaler_decision *a, const struct gan_scaler_decision *b)
{
    return a->skip == b->skip && memcmp(&a->scale, &b->scale, sizeof a->scale) == 0 &&
           a->overflow == b->overflow && a->change == b->change;
}

static void same_state(const struct gan_scaler_state *a, const struct gan_scaler_state *b)
{
    ck_assert_str_eq(a->scaler, b->scaler);
    ck_assert_int_eq(a->version, b->version);
    ck_assert_uint_eq(a->count, b->count);
    for (size_t k = 0; k < a->count; k++) {
        ck_assert_str_eq(a->values[k].name, b->values[k].name);
        ck_assert_int_eq(a->values[k].type, b->values[k].type);
        ck_assert_int_eq(a->values[k].i, b->values[k].i);
        ck_assert_int_eq(memcmp(&a->values[k].f, &b->values[k].f, sizeof(double)), 0);
    }
}

/* Save mid-sequence, load into a fresh instance (values in reverse order, as a
 * checkpoint may return them), and both continue bit-identically. */
START_TEST(test_state_round_trip)
{
    const struct state_case *c = &state_cases[_i];
    struct rig a, b;
    rig_new(&a, c->scaler, c->settings);
    uint64_t rng = 1000 + (uint64_t)_i;
    struct random_step s;
    for (int k = 0; k < 1777; k++) {
        random_step(&rng, &s, c->p_overflow, c->p_forward);
        rig_step(&a, s.t, 4, s.forward);
    }
    struct gan_scaler_state saved, reversed;
    ck_assert_int_eq(a.m.ops->save_state(a.sc, &saved), GAN_OK);
    ck_assert_str_eq(saved.scaler, c->scaler);
    ck_assert_int_ge(saved.version, 1);
    ck_assert_uint_le(saved.count, GAN_SCALER_STATE_MAX);
    reversed = saved;
    for (size_t k = 0; k < saved.count; k++)
        reversed.values[k] = saved.values[saved.count - 1 - k];

    rig_new(&b, c->scaler, c->settings);
    b.steps = a.steps;
    ck_assert_msg(b.m.ops->load_state(b.sc, &reversed) == GAN_OK, "%s", b.th.last_error);
    ck_assert(scale_of(&a) == scale_of(&b));
    int changes = 0;
    for (int k = 0; k < 4000; k++) {
        random_step(&rng, &s, c->p_overflow, c->p_forward);
        struct gan_scaler_decision da = rig_step(&a, s.t, 4, s.forward);
        struct gan_scaler_decision db = rig_step(&b, s.t, 4, s.forward);
        ck_assert_msg(same_decision(&da, &db), "%s: step %d after the load differs", c->scaler, k);
        changes += da.change != GAN_SCALER_HELD;
    }
    /* The sequence exercised the rule, for the scalers that have one. */
    if (strcmp(c->scaler, "none") != 0 && strcmp(c->scaler, "static") != 0)
        ck_assert_int_gt(changes, 20);
    struct gan_scaler_state sa, sb;
    ck_assert_int_eq(a.m.ops->save_state(a.sc, &sa), GAN_OK);
    ck_assert_int_eq(b.m.ops->save_state(b.sc, &sb), GAN_OK);
    same_state(&sa, &sb);
    rig_free(&a);
    rig_free(&b);
}
END_TEST

static struct gan_scaler_value *value_named(struct gan_scaler_state *st, const char *name)
{
    for (size_t k = 0; k < st->count; k++)
        if (strcmp(st->values[k].name, name) == 0)
            return &st->values[k];
    ck_abort_msg("no value %s in the state", name);
    return NULL;
}

/* A state that is not this scaler's, or not whole, is refused and changes nothing. */
struct bad_state {
    const char *what;           /* the mutation */
    gan_status status;
    const char *message;        /* a piece of the message */
};

static const struct bad_state bad_states[] = {
    { "other scaler", GAN_ERR_INVALID, "\"dynamic\"" },
    /* A name no user types is not quoted: it is the file's text. */
    { "crafted name", GAN_ERR_INVALID, "belongs to another scaler: resume" },
    { "newer", GAN_ERR_UNSUPPORTED, "version 2" },
    { "older", GAN_ERR_FORMAT, "version 0" },
    { "missing", GAN_ERR_FORMAT, "good_steps" },
    { "unknown", GAN_ERR_FORMAT, "wobble" },
    { "twice", GAN_ERR_FORMAT, "twice" },
    { "wrong type", GAN_ERR_FORMAT, "scale" },
    { "negative", GAN_ERR_FORMAT, "backoffs" },
    { "no hysteresis", GAN_ERR_FORMAT, "hysteresis_left" },
    { "nan scale", GAN_ERR_FORMAT, "scale" },
    { "not fp32", GAN_ERR_FORMAT, "scale" },
    { "huge scale", GAN_ERR_FORMAT, "scale" },
    { "bad ceiling", GAN_ERR_FORMAT, "ceiling" },
    { "too many", GAN_ERR_FORMAT, "values" },
    { "unterminated", GAN_ERR_FORMAT, "NUL" },
};

START_TEST(test_state_rejected)
{
    const struct bad_state *c = &bad_states[_i];
    const char *settings[] = { "init=8", "growth_interval=4", NULL };
    struct rig r;
    rig_new(&r, "underflow-aware", settings);
    clean(&r);
    overflow(&r);
    underflowing(&r, 1e-3);
    struct gan_scaler_state good, st;
    ck_assert_int_eq(r.m.ops->save_state(r.sc, &good), GAN_OK);
    st = good;
    const char *w = c->what;
    if (!strcmp(w, "other scaler"))
        snprintf(st.scaler, sizeof st.scaler, "dynamic");
    else if (!strcmp(w, "crafted name"))
        snprintf(st.scaler, sizeof st.scaler, "SECRET 4242\n");
    else if (!strcmp(w, "newer"))
        st.version = 2;
    else if (!strcmp(w, "older"))
        st.version = 0;
    else if (!strcmp(w, "missing")) {
        *value_named(&st, "good_steps") = st.values[st.count - 1];
        st.count--;
    } else if (!strcmp(w, "unknown"))
        snprintf(value_named(&st, "growths")->name, GAN_SCALER_NAME_MAX, "wobble");
    else if (!strcmp(w, "twice"))
        st.values[st.count++] = *value_named(&st, "updates");
    else if (!strcmp(w, "wrong type")) {
        struct gan_scaler_value *v = value_named(&st, "scale");
        v->type = GAN_SCALER_INT64;
        v->i = 4;
    } else if (!strcmp(w, "negative"))
        value_named(&st, "backoffs")->i = -1;
    else if (!strcmp(w, "no hysteresis"))
        value_named(&st, "hysteresis_left")->i = 0;
    else if (!strcmp(w, "nan scale"))
        value_named(&st, "scale")->f = NAN;
    else if (!strcmp(w, "not fp32"))
        value_named(&st, "scale")->f = 0.1;
    else if (!strcmp(w, "huge scale"))
        value_named(&st, "scale")->f = 1e300;
    else if (!strcmp(w, "bad ceiling"))
        value_named(&st, "ceiling")->f = -4;
    else if (!strcmp(w, "too many"))
        st.count = GAN_SCALER_STATE_MAX + 1;
    else if (!strcmp(w, "unterminated"))
        memset(value_named(&st, "skipped")->name, 'x', GAN_SCALER_NAME_MAX);
    else
        ck_abort_msg("unknown case %s", w);

    gan_status got = r.m.ops->load_state(r.sc, &st);
    ck_assert_msg(got == c->status, "%s: status %d, expected %d (%s)", w, (int)got,
                  (int)c->status, r.th.last_error);
    ck_assert_msg(strstr(r.th.last_error, c->message), "%s: message \"%s\" lacks \"%s\"", w,
                  r.th.last_error, c->message);
    ck_assert_msg(!strstr(r.th.last_error, "SECRET"), "%s: \"%s\" quotes the state", w,
                  r.th.last_error);
    struct gan_scaler_state now;
    ck_assert_int_eq(r.m.ops->save_state(r.sc, &now), GAN_OK);
    same_state(&good, &now);
    rig_free(&r);
}
END_TEST

/* A valid state outside the resumed run's settings is brought inside them. */
START_TEST(test_state_meets_new_settings)
{
    const char *pytorch[] = { "preset=pytorch", NULL };
    struct rig a, b;
    rig_new(&a, "dynamic", pytorch);
    for (int k = 0; k < 200; k++)
        forward(&a);                        /* collapsed to 0 */
    struct gan_scaler_state st;
    ck_assert_int_eq(a.m.ops->save_state(a.sc, &st), GAN_OK);
    ck_assert(scale_of(&a) == 0.0);
    rig_new(&b, "dynamic", NULL);           /* ganctl's defaults: min 1 */
    ck_assert_int_eq(b.m.ops->load_state(b.sc, &st), GAN_OK);
    ck_assert_double_eq(scale_of(&b), 1.0);
    rig_free(&b);

    const char *capped[] = { "preset=pytorch", "max=1024", "init=512", NULL };
    const char *ds[] = { "preset=deepspeed", "hysteresis=4", NULL };
    const char *ds1[] = { "preset=deepspeed", "hysteresis=1", NULL };
    rig_new(&b, "dynamic", ds);
    ck_assert_int_eq(b.m.ops->save_state(b.sc, &st), GAN_OK);
    ck_assert_int_eq(value_named(&st, "hysteresis_left")->i, 4);
    rig_free(&b);
    rig_new(&b, "dynamic", ds1);
    ck_assert_int_eq(b.m.ops->load_state(b.sc, &st), GAN_OK);
    ck_assert_int_eq(overflow(&b).change, GAN_SCALER_BACKED_OFF);
    rig_free(&b);
    rig_new(&b, "dynamic", capped);
    value_named(&st, "scale")->f = 65536.0;
    ck_assert_int_eq(b.m.ops->load_state(b.sc, &st), GAN_OK);
    ck_assert_double_eq(scale_of(&b), 1024.0);
    rig_free(&b);
    rig_free(&a);

    /* none's and static's states are their counters; static keeps its configured scale. */
    const char *s512[] = { "scale=512", NULL };
    rig_new(&a, "static", NULL);
    overflow(&a);
    clean(&a);
    ck_assert_int_eq(a.m.ops->save_state(a.sc, &st), GAN_OK);
    ck_assert_int_eq(value_named(&st, "skipped")->i, 1);
    ck_assert_int_eq(value_named(&st, "updates")->i, 2);
    rig_new(&b, "static", s512);
    ck_assert_int_eq(b.m.ops->load_state(b.sc, &st), GAN_OK);
    ck_assert_double_eq(scale_of(&b), 512.0);
    rig_free(&b);
    rig_new(&b, "none", NULL);
    ck_assert_int_eq(b.m.ops->load_state(b.sc, &st), GAN_ERR_INVALID);
    ck_assert_msg(strstr(b.th.last_error, "\"static\""), "%s", b.th.last_error);
    rig_free(&b);
    rig_free(&a);
}
END_TEST

/* ------------------------------------------------------------------ bad input and settings */

START_TEST(test_bad_input)
{
    struct rig r;
    rig_new(&r, "dynamic", NULL);
    struct gan_scaler_decision d;
    memset(&d, 0, sizeof d);
    d.struct_size = sizeof d;
    struct gan_scaler_input in = { .struct_size = sizeof in, .scale = 1024.0 };
    ck_assert_int_eq(r.m.ops->update(r.sc, &in, &d), GAN_ERR_INVALID);
    ck_assert_msg(strstr(r.th.last_error, "scale()"), "%s", r.th.last_error);
    in.scale = 65536.0;
    in.tensor_count = 2;
    ck_assert_int_eq(r.m.ops->update(r.sc, &in, &d), GAN_ERR_INVALID);
    ck_assert_msg(strstr(r.th.last_error, "NULL"), "%s", r.th.last_error);
    in.tensor_count = 0;
    in.struct_size = 8;
    ck_assert_int_eq(r.m.ops->update(r.sc, &in, &d), GAN_ERR_INVALID);
    ck_assert_msg(strstr(r.th.last_error, "struct_size"), "%s", r.th.last_error);
    ck_assert_double_eq(scale_of(&r), 65536.0);

    /* A decision from a core built before the last fields: only what fits is written. */
    in.struct_size = sizeof in;
    struct gan_scaler_decision small;
    memset(&small, 0x77, sizeof small);
    small.struct_size = offsetof(struct gan_scaler_decision, overflow);
    ck_assert_int_eq(r.m.ops->update(r.sc, &in, &small), GAN_OK);
    ck_assert_int_eq(small.skip, 0);
    ck_assert_double_eq(small.scale, 65536.0);
    int untouched;
    memset(&untouched, 0x77, sizeof untouched);
    ck_assert_int_eq(memcmp(&small.overflow, &untouched, sizeof untouched), 0);
    rig_free(&r);
}
END_TEST

struct bad_setting {
    const char *scaler;
    const char *settings[3];
    const char *names;          /* a piece of the message: the setting */
};

static const struct bad_setting bad_settings[] = {
    { "dynamic", { "growth_factor=1" }, "growth_factor" },
    { "dynamic", { "growth_factor=nan" }, "growth_factor" },
    { "dynamic", { "backoff_factor=1" }, "backoff_factor" },
    { "dynamic", { "backoff_factor=0" }, "backoff_factor" },
    { "dynamic", { "growth_interval=0" }, "growth_interval" },
    { "dynamic", { "growth_interval=2.5" }, "growth_interval" },
    { "dynamic", { "hysteresis=0" }, "hysteresis" },
    { "dynamic", { "min=-1" }, "min" },
    { "dynamic", { "max=0" }, "max" },
    { "dynamic", { "max=1e39" }, "max" },
    { "dynamic", { "min=100", "max=10" }, "min = 100 is above max = 10" },
    { "dynamic", { "init=0" }, "init" },
    { "dynamic", { "init=inf" }, "init" },
    { "dynamic", { "init=0.5" }, "init = 0.5 is outside [min, max]" },
    { "dynamic", { "init=1e30" }, "init = 1.00000002e+30 is outside" },
    { "dynamic", { "init=abc" }, "\"init\"" },
    { "dynamic", { "preset=apex" }, "preset = \"apex\"" },
    { "dynamic", { "forward_overflow=ignore" }, "forward_overflow = \"ignore\"" },
    { "dynamic", { "fail_at_min=yes" }, "\"fail_at_min\"" },
    { "dynamic", { "hysteresis_consecutive=1" }, "\"hysteresis_consecutive\"" },
    { "underflow-aware", { "underflow_threshold=0" }, "underflow_threshold" },
    { "underflow-aware", { "underflow_threshold=1.5" }, "underflow_threshold" },
    { "underflow-aware", { "norm_threshold=-1" }, "norm_threshold" },
    { "underflow-aware", { "headroom=0.5" }, "headroom" },
    { "underflow-aware", { "preset=mindspore", "min=0", "init=0" }, "init" },
    { "static", { "scale=0" }, "scale" },
    { "static", { "scale=-4" }, "scale" },
    { "static", { "scale=inf" }, "scale" },
    { "static", { "scale=1e-50" }, "scale" },
};

START_TEST(test_bad_settings)
{
    const struct bad_setting *c = &bad_settings[_i];
    struct rig r;
    gan_status st = rig_try(&r, open_scaler(c->scaler), c->settings);
    ck_assert_msg(st == GAN_ERR_CONFIG, "%s with %s: status %d (%s)", c->scaler,
                  c->settings[0], (int)st, r.th.last_error);
    ck_assert_msg(strstr(r.th.last_error, c->names), "%s with %s: \"%s\" does not name %s",
                  c->scaler, c->settings[0], r.th.last_error, c->names);
}
END_TEST

/* ------------------------------------------------------------------ any module */

/* What the core relies on from any scaler: the example built by a third party is held
 * to it too (tests/e2e/scaler_example.sh passes its path). */
static const char *conformance_path;

START_TEST(test_conformance)
{
    char path[600], name[128];
    if (conformance_path) {
        snprintf(path, sizeof path, "%s", conformance_path);
    } else {
        snprintf(path, sizeof path, "%s/scaler-%s.so", GAN_TEST_SCALER_DIR, all_scalers[_i]);
    }
    const char *base = strrchr(path, '/');
    base = base ? base + 1 : path;
    ck_assert_msg(strncmp(base, "scaler-", 7) == 0, "%s is not named scaler-NAME.so", base);
    snprintf(name, sizeof name, "%s", base + 7);
    char *dot = strstr(name, ".so");
    ck_assert_ptr_nonnull(dot);
    *dot = '\0';

    struct rig a, b;
    ck_assert_msg(rig_try(&a, open_path(path, name), NULL) == GAN_OK, "%s: %s", name,
                  a.th.last_error);
    double s0 = scale_of(&a);
    ck_assert_msg(isfinite(s0) && s0 > 0 && (double)(float)s0 == s0, "first scale %.17g", s0);
    struct gan_scaler_decision d = clean(&a);
    ck_assert_int_eq(d.skip, 0);
    ck_assert_int_eq(d.overflow, GAN_SCALER_NO_OVERFLOW);
    d = overflow(&a);
    ck_assert_int_eq(d.skip, 1);
    ck_assert_int_eq(d.overflow, GAN_SCALER_GRADIENT_OVERFLOW);
    d = forward(&a);
    ck_assert_int_eq(d.skip, 1);
    ck_assert_int_eq(d.overflow, GAN_SCALER_FORWARD_OVERFLOW);
    if (a.m.ops->describe)
        ck_assert_ptr_nonnull(a.m.ops->describe(a.sc));

    uint64_t rng = 99;
    struct random_step s;
    for (int k = 0; k < 500; k++) {
        random_step(&rng, &s, 0.1, 0.02);
        rig_step(&a, s.t, 4, s.forward);
    }
    ck_assert_int_eq(rig_try(&b, a.m, NULL), GAN_OK);
    if (!a.m.ops->save_state) {
        /* Stateless: a fresh instance must decide as the one with 500 updates behind it. */
        for (int k = 0; k < 2000; k++) {
            random_step(&rng, &s, 0.1, 0.02);
            struct gan_scaler_decision da = rig_step(&a, s.t, 4, s.forward);
            struct gan_scaler_decision db = rig_step(&b, s.t, 4, s.forward);
            ck_assert_msg(same_decision(&da, &db), "%s: keeps state without save_state (step %d)",
                          name, k);
        }
        rig_free(&a);
        rig_free(&b);
        return;
    }
    struct gan_scaler_state st;
    ck_assert_int_eq(a.m.ops->save_state(a.sc, &st), GAN_OK);
    ck_assert_str_eq(st.scaler, name);
    ck_assert_int_ge(st.version, 1);
    ck_assert_uint_le(st.count, GAN_SCALER_STATE_MAX);
    for (size_t k = 0; k < st.count; k++) {
        ck_assert_ptr_nonnull(memchr(st.values[k].name, '\0', GAN_SCALER_NAME_MAX));
        ck_assert(st.values[k].type == GAN_SCALER_INT64 || st.values[k].type == GAN_SCALER_FLOAT64);
    }
    struct gan_scaler_state newer = st;
    newer.version++;
    ck_assert_int_eq(b.m.ops->load_state(b.sc, &newer), GAN_ERR_UNSUPPORTED);
    ck_assert_msg(b.m.ops->load_state(b.sc, &st) == GAN_OK, "%s", b.th.last_error);
    for (int k = 0; k < 2000; k++) {
        random_step(&rng, &s, 0.1, 0.02);
        struct gan_scaler_decision da = rig_step(&a, s.t, 4, s.forward);
        struct gan_scaler_decision db = rig_step(&b, s.t, 4, s.forward);
        ck_assert_msg(same_decision(&da, &db), "%s: step %d after the load differs", name, k);
    }
    rig_free(&a);
    rig_free(&b);
}
END_TEST

/* ------------------------------------------------------------------ suite */

#define COUNT(a) ((int)(sizeof(a) / sizeof(a)[0]))

static Suite *scalers_suite(void)
{
    Suite *s = suite_create("scalers");
    TCase *tc;

    if (conformance_path) {
        tc = tcase_create("conformance");
        tcase_add_test(tc, test_conformance);
        suite_add_tcase(s, tc);
        return s;
    }

    tc = tcase_create("descriptors");
    tcase_add_loop_test(tc, test_descriptor, 0, COUNT(all_scalers));
    tcase_add_loop_test(tc, test_declared_defaults, 0, COUNT(all_scalers));
    tcase_add_loop_test(tc, test_conformance, 0, COUNT(all_scalers));
    tcase_add_test(tc, test_preset_values);
    suite_add_tcase(s, tc);

    tc = tcase_create("fixed");
    tcase_add_test(tc, test_fixed_scalers);
    suite_add_tcase(s, tc);

    tc = tcase_create("overflow rule");
    tcase_add_loop_test(tc, test_growth_every_interval, 0, COUNT(growth_cases));
    tcase_add_test(tc, test_backoff_and_skip);
    tcase_add_test(tc, test_pytorch_trace);
    tcase_add_test(tc, test_pytorch_reference);
    tcase_add_test(tc, test_mindspore_reference);
    tcase_add_loop_test(tc, test_deepspeed_reference, 0, 3);
    suite_add_tcase(s, tc);

    tc = tcase_create("clamps");
    tcase_add_test(tc, test_mindspore_floor);
    tcase_add_test(tc, test_pytorch_reaches_zero);
    tcase_add_test(tc, test_max_clamp);
    suite_add_tcase(s, tc);

    tc = tcase_create("hysteresis");
    tcase_add_test(tc, test_deepspeed_hysteresis_trace);
    tcase_add_test(tc, test_deepspeed_fails_at_min);
    suite_add_tcase(s, tc);

    tc = tcase_create("underflow");
    tcase_add_test(tc, test_underflow_with_headroom);
    tcase_add_test(tc, test_underflow_without_headroom);
    tcase_add_test(tc, test_underflow_signals);
    tcase_add_test(tc, test_underflow_ceiling);
    suite_add_tcase(s, tc);

    tc = tcase_create("forward overflow");
    tcase_add_test(tc, test_forward_overflow);
    suite_add_tcase(s, tc);

    tc = tcase_create("state");
    tcase_add_loop_test(tc, test_state_round_trip, 0, COUNT(state_cases));
    tcase_add_loop_test(tc, test_state_rejected, 0, COUNT(bad_states));
    tcase_add_test(tc, test_state_meets_new_settings);
    suite_add_tcase(s, tc);

    tc = tcase_create("bad input and settings");
    tcase_add_test(tc, test_bad_input);
    tcase_add_loop_test(tc, test_bad_settings, 0, COUNT(bad_settings));
    suite_add_tcase(s, tc);
    return s;
}

/* With one argument, a module path: only the conformance checks, on that module. */
int main(int argc, char **argv)
{
    if (argc == 2)
        conformance_path = argv[1];
    else if (argc != 1) {
        fprintf(stderr, "usage: %s [path/scaler-NAME.so]\n", argv[0]);
        return 2;
    }
    SRunner *sr = srunner_create(scalers_suite());
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
