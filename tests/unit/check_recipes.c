/* SPDX-License-Identifier: MIT */
/* check_recipes.c — the FP8 scaling-recipe modules, each opened from the build tree
 * through its descriptor and driven with constructed statistics: their scales exactly,
 * delayed scaling's history over scripted casts and its state, and their settings. */
#include "config.h"

#include <check.h>
#include <dlfcn.h>
#include <float.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../lib/test_host.h"

/* ------------------------------------------------------------------ modules */

struct module {
    void *handle;
    const struct gan_plugin *d;
    const struct gan_recipe_ops *ops;
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
    ck_assert_int_ge(m.d->abi_minor, 6);
    ck_assert_int_le(m.d->abi_minor, GAN_ABI_MINOR);
    ck_assert_uint_ge(m.d->struct_size, offsetof(struct gan_plugin, ops) + sizeof(void *));
    ck_assert_int_eq(m.d->kind, GAN_PLUGIN_RECIPE);
    ck_assert_str_eq(m.d->name, name);
    ck_assert_uint_lt(strlen(name), GAN_RECIPE_NAME_MAX);
    m.ops = m.d->ops;
    ck_assert_ptr_nonnull(m.ops);
    ck_assert_uint_ge(m.ops->struct_size, offsetof(struct gan_recipe_ops, load_state) +
                      sizeof m.ops->load_state);
    /* The loader's required slots, and the state pair both set or both NULL. */
    ck_assert_msg(m.ops->create && m.ops->plan && m.ops->scales,
                  "%s lacks a required recipe slot", path);
    ck_assert_msg(!m.ops->save_state == !m.ops->load_state,
                  "%s sets one of save_state and load_state without the other", path);
    return m;
}

static struct module open_recipe(const char *name)
{
    char path[512];
    snprintf(path, sizeof path, "%s/recipe-%s.so", GAN_TEST_RECIPE_DIR, name);
    return open_path(path, name);
}

/* What the recipes log, for the tests that look at it. */
static int warnings;
static char last_warning[1024];

static void capture_log(void *ctx, enum gan_log_level level, const char *fmt, ...)
{
    (void)ctx;
    if (level != GAN_LOG_WARN)
        return;
    warnings++;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(last_warning, sizeof last_warning, fmt, ap);
    va_end(ap);
}

/* One recipe instance with its host. */
struct rig {
    struct module m;
    struct test_host th;
    gan_recipe *rc;
};

static gan_status rig_try(struct rig *r, struct module m, const char *const *settings)
{
    memset(r, 0, sizeof *r);
    r->m = m;
    test_host_init_declared(&r->th, settings, m.d->settings);
    r->th.host.log = capture_log;
    r->rc = (gan_recipe *)r;   /* create must overwrite it on every path */
    gan_status st = m.ops->create(&r->th.host, &r->rc);
    if (st != GAN_OK)
        ck_assert_ptr_null(r->rc);
    return st;
}

static void rig_new(struct rig *r, const char *name, const char *const *settings)
{
    gan_status st = rig_try(r, open_recipe(name), settings);
    ck_assert_msg(st == GAN_OK, "recipe %s: create failed: %s", name, r->th.last_error);
    ck_assert_ptr_nonnull(r->rc);
}

static void rig_free(struct rig *r)
{
    if (r->rc && r->m.ops->destroy)
        r->m.ops->destroy(r->rc);
    r->rc = NULL;
}

/* ------------------------------------------------------------------ operands */

static struct gan_recipe_operand operand(const char *name, enum gan_dtype format, int64_t rows,
                                         int64_t cols)
{
    struct gan_recipe_operand op;
    memset(&op, 0, sizeof op);
    op.struct_size = sizeof op;
    op.name = name;
    op.format = format;
    op.layout.rows = rows;
    op.layout.cols = cols;
    op.step = 3;
    return op;
}

static struct gan_recipe_plan plan_of(struct rig *r, const struct gan_recipe_operand *op)
{
    struct gan_recipe_plan plan;
    memset(&plan, 0, sizeof plan);
    plan.struct_size = sizeof plan;
    gan_status st = r->m.ops->plan(r->rc, op, &plan);
    ck_assert_msg(st == GAN_OK, "plan: %s", r->th.last_error);
    return plan;
}

/* Statistics of an operand whose largest finite magnitude is amax. */
static struct gan_fp8_stats stats_of(float amax, uint64_t elements, uint64_t zeros,
                                     uint64_t nonfinite)
{
    struct gan_fp8_stats s;
    memset(&s, 0, sizeof s);
    s.elements = elements;
    s.zeros = zeros;
    s.nonfinite = nonfinite;
    s.amax = amax;
    return s;
}

/* The one scale of a per-tensor recipe, with its reason. */
static float tensor_scale(struct rig *r, const struct gan_recipe_operand *op,
                          const struct gan_fp8_stats *stats, char reason[96])
{
    float scale = -1;
    gan_status st = r->m.ops->scales(r->rc, op, stats, NULL, &scale, reason);
    ck_assert_msg(st == GAN_OK, "scales: %s", r->th.last_error);
    return scale;
}

static float pow2(int e)
{
    return ldexpf(1.0f, e);
}

static int is_pow2(float s)
{
    int e;
    return s > 0 && isfinite(s) && frexpf(s, &e) == 0.5f;
}

/* ------------------------------------------------------------------ descriptors */

static const char *const all_recipes[] = { "none", "current", "delayed", "block",
                                           "underflow-aware" };

static char *read_text(const char *path)
{
    FILE *f = fopen(path, "rb");
    ck_assert_msg(f != NULL, "cannot open %s", path);
    static char text[1 << 18];
    size_t n = fread(text, 1, sizeof text - 1, f);
    fclose(f);
    ck_assert_uint_lt(n, sizeof text - 1);
    text[n] = '\0';
    return text;
}

/* `text` with each '-' written as man's \-. */
static void man_escaped(char *out, size_t size, const char *text)
{
    size_t at = 0;
    for (const char *c = text; *c && at + 3 < size; c++) {
        if (*c == '-')
            out[at++] = '\\';
        out[at++] = *c;
    }
    out[at] = '\0';
}

START_TEST(test_descriptor)
{
    const char *name = all_recipes[_i];
    struct module m = open_recipe(name);
    ck_assert_uint_eq(m.d->struct_size, sizeof(struct gan_plugin));
    ck_assert_uint_eq(m.ops->struct_size, sizeof(struct gan_recipe_ops));
    ck_assert_ptr_nonnull(m.ops->destroy);
    ck_assert_ptr_nonnull(m.ops->describe);
    ck_assert(m.d->version && *m.d->version);
    ck_assert(m.d->summary && *m.d->summary);
    for (int k = 0; k < 8; k++)
        ck_assert_ptr_null(m.d->reserved[k]);
    /* Only delayed scaling keeps a history. */
    int stateful = strcmp(name, "delayed") == 0;
    ck_assert_int_eq(m.ops->save_state != NULL, stateful);
    ck_assert_int_eq(m.ops->observe != NULL, stateful);

    /* A section in ganctl-recipe(7), and every setting in ganctl.conf(5) under fp8.NAME. */
    char escaped[64], line[160];
    man_escaped(escaped, sizeof escaped, name);
    snprintf(line, sizeof line, "\n.SS %s\n", escaped);
    ck_assert_msg(strstr(read_text(GAN_TEST_SRCDIR "/man/ganctl-recipe.7"), line),
                  "ganctl-recipe(7) has no section for %s", name);
    const char *conf = read_text(GAN_TEST_SRCDIR "/man/ganctl.conf.5.in");
    for (const struct gan_setting_spec *s = m.d->settings; s && s->name; s++) {
        ck_assert(s->summary && *s->summary);
        ck_assert_ptr_nonnull(s->default_value);
        char key[128];
        snprintf(key, sizeof key, "fp8.%s.%s", name, s->name);
        man_escaped(escaped, sizeof escaped, key);
        snprintf(line, sizeof line, "\n.B %s\n", escaped);
        ck_assert_msg(strstr(conf, line), "ganctl.conf(5) does not document %s", key);
    }
}
END_TEST

/* The declared defaults are what a recipe uses when nothing is set: created with each
 * default written out it describes itself as when created bare. */
START_TEST(test_declared_defaults)
{
    const char *name = all_recipes[_i];
    struct module m = open_recipe(name);
    static char values[8][96];
    const char *settings[9];
    int n = 0;
    for (const struct gan_setting_spec *s = m.d->settings; s && s->name; s++) {
        ck_assert_int_lt(n, 8);
        const char *v = s->default_value;
        size_t len = strlen(v);
        if (s->type == GAN_SETTING_STRING)
            snprintf(values[n], sizeof values[n], "%s=%.*s", s->name, (int)(len - 2), v + 1);
        else
            snprintf(values[n], sizeof values[n], "%s=%s", s->name, v);
        settings[n] = values[n];
        n++;
    }
    settings[n] = NULL;
    struct rig bare, spelled;
    rig_new(&bare, name, NULL);
    rig_new(&spelled, name, settings);
    char first[256];
    snprintf(first, sizeof first, "%s", bare.m.ops->describe(bare.rc));
    ck_assert_str_eq(first, spelled.m.ops->describe(spelled.rc));
    rig_free(&bare);
    rig_free(&spelled);
}
END_TEST

/* What each recipe asks the core to measure, and its blocks. */
START_TEST(test_plans)
{
    static const struct {
        const char *recipe;
        const char *settings[3];
        uint32_t want;
        int64_t block;
        enum gan_recipe_scale_type type;
    } cases[] = {
        { "none", { NULL }, 0, 0, GAN_RECIPE_SCALE_E8M0 },
        { "current", { NULL }, GAN_RECIPE_WANT_AMAX, 0, GAN_RECIPE_SCALE_E8M0 },
        { "delayed", { NULL }, 0, 0, GAN_RECIPE_SCALE_E8M0 },
        { "block", { NULL }, GAN_RECIPE_WANT_BLOCK_AMAX, 32, GAN_RECIPE_SCALE_E8M0 },
        { "block", { "size=128", "scale=fp32", NULL }, GAN_RECIPE_WANT_BLOCK_AMAX, 128,
          GAN_RECIPE_SCALE_F32 },
        { "underflow-aware", { NULL }, GAN_RECIPE_WANT_AMAX | GAN_RECIPE_WANT_HISTOGRAM, 0,
          GAN_RECIPE_SCALE_E8M0 },
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        struct rig r;
        rig_new(&r, cases[i].recipe, cases[i].settings);
        for (int f = 0; f < 2; f++) {
            struct gan_recipe_operand op = operand("critic.fc1/gan_linear#0/x",
                                                   f ? GAN_F8E5M2 : GAN_F8E4M3, 64, 96);
            struct gan_recipe_plan plan = plan_of(&r, &op);
            ck_assert_uint_eq(plan.want, cases[i].want);
            ck_assert_int_eq(plan.block, cases[i].block);
            ck_assert_int_eq(plan.scale_type, cases[i].type);
        }
        /* Not an FP8 format: refused, in plan as in scales. */
        struct gan_recipe_operand op = operand("x", GAN_F16, 4, 4);
        struct gan_recipe_plan plan = { .struct_size = sizeof plan };
        ck_assert_int_eq(r.m.ops->plan(r.rc, &op, &plan), GAN_ERR_INVALID);
        ck_assert_ptr_nonnull(strstr(r.th.last_error, "not an FP8 format"));
        rig_free(&r);
    }
}
END_TEST

/* ------------------------------------------------------------------ none, current */

START_TEST(test_none)
{
    struct rig r;
    rig_new(&r, "none", NULL);
    char reason[96] = "";
    struct gan_recipe_operand op = operand("g.fc2/gan_matmul#1/b", GAN_F8E5M2, 3, 5);
    ck_assert_float_eq(tensor_scale(&r, &op, NULL, reason), 1.0f);
    ck_assert_str_eq(reason, "no scaling → 1");
    /* Every block of a blocked layout gets 1 as well, and nothing beyond them. */
    op.layout.block = 2;
    op.layout.along = GAN_FP8_ALONG_ROWS;
    float scales[10];
    for (int i = 0; i < 10; i++)
        scales[i] = -1;
    ck_assert_int_eq(gan_fp8_scale_count(&op.layout), 9);
    ck_assert_int_eq(r.m.ops->scales(r.rc, &op, NULL, NULL, scales, reason), GAN_OK);
    for (int i = 0; i < 9; i++)
        ck_assert_float_eq(scales[i], 1.0f);
    ck_assert_float_eq(scales[9], -1.0f);
    rig_free(&r);
}
END_TEST

/* Current scaling's exponent floor(log2(max / amax)) − margin, at the boundaries. */
struct amax_case {
    enum gan_dtype format;
    float amax;
    const char *margin;
    int exponent;
};

static const struct amax_case current_cases[] = {
    { GAN_F8E4M3, 1.0f, "margin=0", 8 },               /* 448 = 1.75 · 2^8 */
    { GAN_F8E4M3, 1.75f, "margin=0", 8 },              /* 1.75 · 2^8 = 448 exactly fits */
    { GAN_F8E4M3, 0x1.c00002p+0f, "margin=0", 7 },     /* the next FP32 above 1.75 does not */
    { GAN_F8E4M3, 448.0f, "margin=0", 0 },
    { GAN_F8E4M3, 0x1.c00002p+8f, "margin=0", -1 },
    { GAN_F8E4M3, 3.2e-5f, "margin=0", 23 },
    { GAN_F8E4M3, 1.0f, "margin=2", 6 },
    { GAN_F8E4M3, 448.0f, "margin=127", -127 },
    { GAN_F8E4M3, FLT_MAX, "margin=0", -120 },
    { GAN_F8E4M3, FLT_MAX, "margin=10", -127 },        /* clamped to E8M0's least */
    { GAN_F8E4M3, FLT_TRUE_MIN, "margin=0", 127 },     /* 2^157 clamped to E8M0's most */
    { GAN_F8E5M2, 1.0f, "margin=0", 15 },              /* 57344 = 1.75 · 2^15 */
    { GAN_F8E5M2, 2.0f, "margin=0", 14 },
    { GAN_F8E5M2, 1.5f, "margin=0", 15 },
    { GAN_F8E5M2, 57344.0f, "margin=1", -1 },
    { GAN_F8E5M2, 0x1.c00002p+15f, "margin=0", -1 },
};

START_TEST(test_current_exact)
{
    const struct amax_case *c = &current_cases[_i];
    const char *settings[] = { c->margin, NULL };
    struct rig r;
    rig_new(&r, "current", settings);
    struct gan_recipe_operand op = operand("critic.fc1/gan_linear#0/w", c->format, 8, 8);
    struct gan_fp8_stats st = stats_of(c->amax, 64, 3, 0);
    char reason[96] = "";
    float s = tensor_scale(&r, &op, &st, reason);
    ck_assert_msg(s == pow2(c->exponent), "amax %a, %s: scale %a, want 2^%d", (double)c->amax,
                  c->margin, (double)s, c->exponent);
    ck_assert_msg(strstr(reason, "→ 2^") != NULL, "reason \"%s\"", reason);
    rig_free(&r);
}
END_TEST

/* Nothing a current scale makes can overflow, and it is the largest power of two that
 * does not (no margin, nothing clamped). */
START_TEST(test_current_never_overflows)
{
    struct rig r;
    rig_new(&r, "current", NULL);
    uint64_t state = 12345;
    for (int k = 0; k < 20000; k++) {
        state = state * 6364136223846793005ull + 1442695040888963407ull;
        int e = (int)((state >> 33) % 100) - 50;
        float mantissa = 1.0f + (float)((state >> 8) & 0xffffff) * 0x1p-24f;
        float amax = ldexpf(mantissa, e);
        struct gan_recipe_operand op = operand("a", k & 1 ? GAN_F8E5M2 : GAN_F8E4M3, 2, 2);
        double max = k & 1 ? 57344.0 : 448.0;
        struct gan_fp8_stats st = stats_of(amax, 4, 0, 0);
        float s = tensor_scale(&r, &op, &st, NULL);
        ck_assert(is_pow2(s));
        ck_assert_msg((double)amax * s <= max, "amax %a scale %a overflows", (double)amax,
                      (double)s);
        ck_assert_msg((double)amax * s * 2 > max, "amax %a scale %a is not the largest",
                      (double)amax, (double)s);
    }
    rig_free(&r);
}
END_TEST

START_TEST(test_current_zero_and_nonfinite)
{
    struct rig r;
    const char *settings[] = { "margin=3", NULL };
    rig_new(&r, "current", settings);
    char reason[96] = "";
    struct gan_recipe_operand op = operand("d.fc1/gan_linear#0/x", GAN_F8E4M3, 10, 10);
    struct gan_fp8_stats zeros = stats_of(0, 100, 100, 0);
    ck_assert_float_eq(tensor_scale(&r, &op, &zeros, reason), 1.0f);
    ck_assert_str_eq(reason, "all zeros → 1");
    struct gan_fp8_stats none_finite = stats_of(0, 100, 0, 100);
    ck_assert_float_eq(tensor_scale(&r, &op, &none_finite, reason), 1.0f);
    ck_assert_str_eq(reason, "no finite non-zero value → 1");
    /* Some inf and NaN beside finite values: the finite ones decide. */
    struct gan_fp8_stats some = stats_of(1.0f, 100, 0, 7);
    ck_assert_float_eq(tensor_scale(&r, &op, &some, reason), pow2(5));
    ck_assert_str_eq(reason, "amax 1, margin 3 → 2^5");
    struct gan_fp8_stats small = stats_of(3.2e-5f, 100, 0, 0);
    rig_free(&r);
    rig_new(&r, "current", NULL);
    ck_assert_float_eq(tensor_scale(&r, &op, &small, reason), pow2(23));
    ck_assert_str_eq(reason, "amax 3.2e-05 → 2^23");

    /* An amax that no measurement gives is refused, and no scale is written. */
    const float bad[] = { NAN, INFINITY, -1.0f };
    for (int i = 0; i < 3; i++) {
        struct gan_fp8_stats b = stats_of(bad[i], 4, 0, 0);
        float s = -7;
        ck_assert_int_eq(r.m.ops->scales(r.rc, &op, &b, NULL, &s, reason), GAN_ERR_INVALID);
        ck_assert_float_eq(s, -7.0f);
    }
    ck_assert_int_eq(r.m.ops->scales(r.rc, &op, NULL, NULL, NULL, reason), GAN_ERR_INVALID);
    ck_assert_ptr_nonnull(strstr(r.th.last_error, "without the statistics"));
    /* A layout with blocks is not what its plan chose. */
    op.layout.block = 4;
    ck_assert_int_eq(r.m.ops->scales(r.rc, &op, &small, NULL, NULL, reason), GAN_ERR_INVALID);
    ck_assert_ptr_nonnull(strstr(r.th.last_error, "but its plan chose 0"));
    rig_free(&r);
}
END_TEST

/* ------------------------------------------------------------------ delayed */

static struct gan_fp8_cast_stats cast_of(float amax, uint64_t overflow)
{
    struct gan_fp8_cast_stats c;
    memset(&c, 0, sizeof c);
    c.elements = 1024;
    c.overflow = overflow;
    c.amax = amax;
    return c;
}

static void observe(struct rig *r, const char *name, float amax, uint64_t overflow)
{
    struct gan_recipe_operand op = operand(name, GAN_F8E4M3, 32, 32);
    struct gan_fp8_cast_stats c = cast_of(amax, overflow);
    float used = 1;
    gan_status st = r->m.ops->observe(r->rc, &op, &c, &used);
    ck_assert_msg(st == GAN_OK, "observe %s: %s", name, r->th.last_error);
}

static float delayed_scale(struct rig *r, const char *name, enum gan_dtype format)
{
    struct gan_recipe_operand op = operand(name, format, 32, 32);
    return tensor_scale(r, &op, NULL, NULL);
}

/* A window of 4 over a scripted run of casts: each scale comes from the casts before
 * it, the oldest dropped as the window rolls over; "max" takes the window's largest,
 * "most_recent" the last. */
START_TEST(test_delayed_window)
{
    static const float amaxes[] = { 1.0f, 8.0f, 2.0f, 0.5f, 0.25f, 0.25f, 0.25f, 100.0f, 3.5f };
    /* The scale after each cast, E4M3 (448 = 1.75 · 2^8). */
    static const int by_max[] = { 8, 5, 5, 5, 5, 7, 9, 2, 2 };
    static const int by_recent[] = { 8, 5, 7, 9, 10, 10, 10, 2, 7 };
    const char *max_settings[] = { "history=4", NULL };
    const char *recent_settings[] = { "history=4", "algorithm=most_recent", NULL };
    struct rig a, b;
    rig_new(&a, "delayed", max_settings);
    rig_new(&b, "delayed", recent_settings);
    const char *name = "critic.fc2/gan_linear#0/x";
    /* An operand never cast: scale 1, as Transformer Engine starts. */
    char reason[96] = "";
    struct gan_recipe_operand op = operand(name, GAN_F8E4M3, 32, 32);
    ck_assert_float_eq(tensor_scale(&a, &op, NULL, reason), 1.0f);
    ck_assert_str_eq(reason, "no history yet → 1");
    for (size_t k = 0; k < sizeof amaxes / sizeof amaxes[0]; k++) {
        observe(&a, name, amaxes[k], 0);
        observe(&b, name, amaxes[k], 0);
        ck_assert_msg(delayed_scale(&a, name, GAN_F8E4M3) == pow2(by_max[k]),
                      "max, after cast %zu: %a", k, (double)delayed_scale(&a, name, GAN_F8E4M3));
        ck_assert_msg(delayed_scale(&b, name, GAN_F8E4M3) == pow2(by_recent[k]),
                      "most_recent, after cast %zu", k);
    }
    /* The same history read for E5M2 (57344 = 1.75 · 2^15): max 100 → 2^9. */
    ck_assert_float_eq(delayed_scale(&a, name, GAN_F8E5M2), pow2(9));
    /* Another operand has a history of its own. */
    ck_assert_float_eq(delayed_scale(&a, "critic.fc2/gan_linear#0/w", GAN_F8E4M3), 1.0f);
    rig_free(&a);
    rig_free(&b);

    const char *margin_settings[] = { "margin=3", NULL };
    rig_new(&a, "delayed", margin_settings);
    observe(&a, name, 1.0f, 0);
    ck_assert_float_eq(tensor_scale(&a, &op, NULL, reason), pow2(5));
    ck_assert_str_eq(reason, "amax 1, margin 3 → 2^5");
    /* A cast of zeros records an amax of 0: with nothing else in the window, scale 1. */
    rig_free(&a);
    rig_new(&a, "delayed", NULL);
    observe(&a, name, 0.0f, 0);
    ck_assert_float_eq(delayed_scale(&a, name, GAN_F8E4M3), 1.0f);
    rig_free(&a);
}
END_TEST

/* Overflows are counted per operand; each operand's first is a warning naming it. */
START_TEST(test_delayed_overflows)
{
    struct rig r;
    rig_new(&r, "delayed", NULL);
    warnings = 0;
    observe(&r, "g.fc1/gan_linear#0/x", 2.0f, 0);
    ck_assert_int_eq(warnings, 0);
    observe(&r, "g.fc1/gan_linear#0/x", 900.0f, 3);
    ck_assert_int_eq(warnings, 1);
    ck_assert_ptr_nonnull(strstr(last_warning, "g.fc1/gan_linear#0/x overflowed E4M3 at step 3: "
                                 "3 of 1024 values beyond 448"));
    observe(&r, "g.fc1/gan_linear#0/x", 900.0f, 2);
    observe(&r, "g.fc2/gan_matmul#0/a", 900.0f, 1);
    ck_assert_int_eq(warnings, 2);
    ck_assert_ptr_nonnull(strstr(last_warning, "g.fc2/gan_matmul#0/a overflowed"));
    ck_assert_ptr_nonnull(strstr(r.m.ops->describe(r.rc),
                                 "; 6 values overflowed in 2 operands"));

    /* Casts it cannot record are refused. */
    struct gan_recipe_operand op = operand("g.fc1/gan_linear#0/x", GAN_F8E4M3, 32, 32);
    struct gan_fp8_cast_stats nan_amax = cast_of(NAN, 0);
    ck_assert_int_eq(r.m.ops->observe(r.rc, &op, &nan_amax, NULL), GAN_ERR_INVALID);
    ck_assert_int_eq(r.m.ops->observe(r.rc, &op, NULL, NULL), GAN_ERR_INVALID);
    struct gan_recipe_operand spaced = operand("g fc1", GAN_F8E4M3, 32, 32);
    struct gan_fp8_cast_stats fine = cast_of(1.0f, 0);
    ck_assert_int_eq(r.m.ops->observe(r.rc, &spaced, &fine, NULL), GAN_ERR_INVALID);
    ck_assert_ptr_nonnull(strstr(r.th.last_error, "cannot be kept in a checkpoint"));
    char longest[243], too_long[244];
    memset(longest, 'a', sizeof longest - 1);
    longest[sizeof longest - 1] = '\0';
    memset(too_long, 'a', sizeof too_long - 1);
    too_long[sizeof too_long - 1] = '\0';
    struct gan_recipe_operand fits = operand(longest, GAN_F8E4M3, 32, 32);
    ck_assert_int_eq(r.m.ops->observe(r.rc, &fits, &fine, NULL), GAN_OK);
    struct gan_recipe_operand over = operand(too_long, GAN_F8E4M3, 32, 32);
    ck_assert_int_eq(r.m.ops->observe(r.rc, &over, &fine, NULL), GAN_ERR_INVALID);
    rig_free(&r);
}
END_TEST

/* A saved state: copies of what save_state wrote. */
struct saved_state {
    size_t count;
    char names[64][256];
    double values[64][16];
    size_t counts[64];
    struct gan_recipe_array arrays[64];
};

static gan_status collect(void *arg, const char *name, const double *values, size_t count)
{
    struct saved_state *s = arg;
    ck_assert_uint_lt(s->count, 64);
    ck_assert_uint_le(count, 16);
    ck_assert_uint_lt(strlen(name), 256);
    snprintf(s->names[s->count], sizeof s->names[0], "%s", name);
    memcpy(s->values[s->count], values, count * sizeof *values);
    s->counts[s->count] = count;
    s->count++;
    return GAN_OK;
}

static void save(struct rig *r, struct saved_state *s)
{
    memset(s, 0, sizeof *s);
    ck_assert_msg(r->m.ops->save_state(r->rc, collect, s) == GAN_OK, "%s", r->th.last_error);
    for (size_t i = 0; i < s->count; i++)
        s->arrays[i] = (struct gan_recipe_array){ s->names[i], s->values[i], s->counts[i] };
}

static int same_state(const struct saved_state *a, const struct saved_state *b)
{
    if (a->count != b->count)
        return 0;
    for (size_t i = 0; i < a->count; i++)
        if (strcmp(a->names[i], b->names[i]) != 0 || a->counts[i] != b->counts[i] ||
            memcmp(a->values[i], b->values[i], a->counts[i] * sizeof(double)) != 0)
            return 0;
    return 1;
}

static const char *const delayed_names[] = {
    "critic.fc1/gan_linear#0/x", "critic.fc1/gan_linear#0/w", "generator.fc3/gan_matmul#2/b",
};

/* A history of each operand, the first rolled over a window of 5. */
static void delayed_history(struct rig *r)
{
    for (int k = 0; k < 9; k++)
        observe(r, delayed_names[0], ldexpf(1.0f + 0.125f * (float)k, k - 4), k == 6 ? 2 : 0);
    for (int k = 0; k < 3; k++)
        observe(r, delayed_names[1], 0.3f * (float)(k + 1), 0);
    observe(r, delayed_names[2], 7e-6f, 5);
}

static void assert_same_scales(struct rig *a, struct rig *b)
{
    for (size_t i = 0; i < 3; i++)
        for (int f = 0; f < 2; f++) {
            enum gan_dtype format = f ? GAN_F8E5M2 : GAN_F8E4M3;
            float x = delayed_scale(a, delayed_names[i], format);
            float y = delayed_scale(b, delayed_names[i], format);
            ck_assert_msg(memcmp(&x, &y, sizeof x) == 0, "%s: %a against %a", delayed_names[i],
                          (double)x, (double)y);
        }
}

/* save_state, then load_state into a fresh instance: the same scales bit for bit, the
 * same state saved again, the same counts, and the same scales as casts go on. */
START_TEST(test_delayed_round_trip)
{
    const char *settings[] = { "history=5", NULL };
    struct rig a, b;
    rig_new(&a, "delayed", settings);
    rig_new(&b, "delayed", settings);
    delayed_history(&a);
    struct saved_state s, again;
    save(&a, &s);
    ck_assert_uint_eq(s.count, 6);
    /* In the order of the operand names, each history oldest first. */
    ck_assert_str_eq(s.names[0], "amax_history/critic.fc1/gan_linear#0/w");
    ck_assert_str_eq(s.names[1], "overflows/critic.fc1/gan_linear#0/w");
    ck_assert_str_eq(s.names[2], "amax_history/critic.fc1/gan_linear#0/x");
    ck_assert_uint_eq(s.counts[2], 5);
    ck_assert_double_eq(s.values[2][0], ldexp(1.5, 0));
    ck_assert_double_eq(s.values[2][4], ldexp(2.0, 4));
    ck_assert_double_eq(s.values[3][0], 2);
    ck_assert_str_eq(s.names[5], "overflows/generator.fc3/gan_matmul#2/b");
    ck_assert_double_eq(s.values[5][0], 5);

    ck_assert_msg(b.m.ops->load_state(b.rc, s.arrays, s.count) == GAN_OK, "%s",
                  b.th.last_error);
    assert_same_scales(&a, &b);
    save(&b, &again);
    ck_assert(same_state(&s, &again));
    char first[256];
    snprintf(first, sizeof first, "%s", a.m.ops->describe(a.rc));
    ck_assert_str_eq(first, b.m.ops->describe(b.rc));
    for (int k = 0; k < 7; k++) {
        float amax = ldexpf(1.0f, 3 - k);
        observe(&a, delayed_names[k % 3], amax, 0);
        observe(&b, delayed_names[k % 3], amax, 0);
        assert_same_scales(&a, &b);
    }
    /* An empty state empties it. */
    ck_assert_int_eq(b.m.ops->load_state(b.rc, NULL, 0), GAN_OK);
    ck_assert_float_eq(delayed_scale(&b, delayed_names[0], GAN_F8E4M3), 1.0f);
    rig_free(&a);
    rig_free(&b);

    /* A run resumed with a shorter window keeps each history's most recent amaxes. */
    const char *shorter[] = { "history=2", NULL };
    rig_new(&b, "delayed", shorter);
    warnings = 0;
    ck_assert_int_eq(b.m.ops->load_state(b.rc, s.arrays, s.count), GAN_OK);
    ck_assert_int_eq(warnings, 1);
    ck_assert_ptr_nonnull(strstr(last_warning, "hold up to 5 casts, more than history = 2"));
    /* The last two of critic.fc1/gan_linear#0/x: 1.875 · 2^3 and 2 · 2^4 = 32 → 2^3. */
    ck_assert_float_eq(delayed_scale(&b, delayed_names[0], GAN_F8E4M3), pow2(3));
    save(&b, &again);
    ck_assert_uint_eq(again.counts[2], 2);
    ck_assert_double_eq(again.values[2][0], ldexp(1.875, 3));
    rig_free(&b);
}
END_TEST

/* A corrupted state is refused with GAN_ERR_FORMAT naming the array, and the state the
 * instance had is kept. */
struct corruption {
    const char *what;
    const char *names;            /* in the refusal */
};

static const struct corruption corruptions[] = {
    { "NaN amax", "\"amax_history/critic.fc1/gan_linear#0/x\"" },
    { "negative amax", "\"amax_history/critic.fc1/gan_linear#0/x\"" },
    { "not an FP32 amax", "\"amax_history/critic.fc1/gan_linear#0/x\"" },
    { "infinite amax", "\"amax_history/critic.fc1/gan_linear#0/x\"" },
    { "empty history", "\"amax_history/critic.fc1/gan_linear#0/w\" is empty" },
    { "two overflow counts", "\"overflows/critic.fc1/gan_linear#0/w\" holds 2 values" },
    { "fractional count", "\"overflows/critic.fc1/gan_linear#0/w\"" },
    { "unknown array", "\"scale/critic.fc1/gan_linear#0/w\" is not one it writes" },
    { "no operand", "\"amax_history/\" is not one it writes" },
    { "history alone", "\"amax_history/generator.fc3/gan_matmul#2/b\" has no "
                       "\"overflows/generator.fc3/gan_matmul#2/b\"" },
    { "count alone", "\"overflows/critic.fc1/gan_linear#0/w\" has no "
                     "\"amax_history/critic.fc1/gan_linear#0/w\"" },
    { "repeated", "the array \"overflows/critic.fc1/gan_linear#0/w\" twice" },
};

START_TEST(test_delayed_corrupted)
{
    const struct corruption *c = &corruptions[_i];
    const char *settings[] = { "history=5", NULL };
    struct rig a, b;
    rig_new(&a, "delayed", settings);
    rig_new(&b, "delayed", settings);
    delayed_history(&a);
    struct saved_state s, before, after;
    save(&a, &s);
    /* b holds a state of its own, which a refused load must leave as it was. */
    observe(&b, delayed_names[0], 5.0f, 1);
    observe(&b, "d.other/gan_linear#0/x", 0.5f, 0);
    save(&b, &before);
    size_t count = s.count;
    if (strcmp(c->what, "NaN amax") == 0)
        s.values[2][3] = NAN;
    else if (strcmp(c->what, "negative amax") == 0)
        s.values[2][1] = -1;
    else if (strcmp(c->what, "not an FP32 amax") == 0)
        s.values[2][0] = 0.1;
    else if (strcmp(c->what, "infinite amax") == 0)
        s.values[2][0] = INFINITY;
    else if (strcmp(c->what, "empty history") == 0)
        s.arrays[0].count = 0;
    else if (strcmp(c->what, "two overflow counts") == 0)
        s.arrays[1].count = 2;
    else if (strcmp(c->what, "fractional count") == 0)
        s.values[1][0] = 1.5;
    else if (strcmp(c->what, "unknown array") == 0)
        s.arrays[1].name = "scale/critic.fc1/gan_linear#0/w";
    else if (strcmp(c->what, "no operand") == 0)
        s.arrays[4].name = "amax_history/";
    else if (strcmp(c->what, "history alone") == 0)
        count = 5;
    else if (strcmp(c->what, "count alone") == 0)
        s.arrays[0] = s.arrays[--count];
    else if (strcmp(c->what, "repeated") == 0)
        s.arrays[count++] = s.arrays[1];
    warnings = 0;
    ck_assert_int_eq(b.m.ops->load_state(b.rc, s.arrays, count), GAN_ERR_FORMAT);
    ck_assert_msg(strstr(b.th.last_error, c->names) != NULL, "%s: \"%s\" does not name %s",
                  c->what, b.th.last_error, c->names);
    ck_assert_int_eq(warnings, 0);
    save(&b, &after);
    ck_assert_msg(same_state(&before, &after), "%s: the refused load changed the state", c->what);
    ck_assert_float_eq(delayed_scale(&b, delayed_names[0], GAN_F8E4M3), pow2(6));
    rig_free(&a);
    rig_free(&b);
}
END_TEST

/* ------------------------------------------------------------------ block */

/* A ragged layout in both directions: k = 70 in blocks of 32 is 3 blocks a line (the
 * last of 6), and the scale count is gan_fp8_scale_count's. Each block's scale comes
 * from its own amax, in the scales' order; nothing past the count is written. */
START_TEST(test_block_ragged)
{
    static const float amax[9] = { 1.0f, 0.0f, 448.0f, 3.5f, 3.0f, FLT_TRUE_MIN, FLT_MAX,
                                   1.75f, 0x1.c00002p+0f };
    static const int e4m3_exponents[9] = { 8, 0, 0, 7, 7, 127, -120, 8, 7 };
    const char *fp32_settings[] = { "scale=fp32", NULL };
    struct rig e8m0, fp32;
    rig_new(&e8m0, "block", NULL);
    rig_new(&fp32, "block", fp32_settings);
    for (int dir = 0; dir < 2; dir++) {
        struct gan_recipe_operand op = dir == 0 ? operand("c.fc1/gan_linear#0/x", GAN_F8E4M3, 3, 70)
                                                : operand("c.fc1/gan_linear#0/w", GAN_F8E4M3, 70, 3);
        op.layout.block = 32;
        op.layout.along = dir == 0 ? GAN_FP8_ALONG_ROWS : GAN_FP8_ALONG_COLUMNS;
        ck_assert_int_eq(gan_fp8_scale_count(&op.layout), 9);
        float scales[10];
        char reason[96] = "";
        for (int i = 0; i < 10; i++)
            scales[i] = -1;
        ck_assert_int_eq(e8m0.m.ops->scales(e8m0.rc, &op, NULL, amax, scales, reason), GAN_OK);
        for (int i = 0; i < 9; i++)
            ck_assert_msg(scales[i] == pow2(e4m3_exponents[i]), "E8M0 block %d: %a", i,
                          (double)scales[i]);
        ck_assert_float_eq(scales[9], -1.0f);
        ck_assert_ptr_nonnull(strstr(reason, "9 blocks of 32, 1 without a value"));

        for (int i = 0; i < 10; i++)
            scales[i] = -1;
        ck_assert_int_eq(fp32.m.ops->scales(fp32.rc, &op, NULL, amax, scales, reason), GAN_OK);
        /* max / amax rounded once to FP32; 1 without a value; 2^127 at most. */
        const float want[9] = { 448.0f, 1.0f, 1.0f, 128.0f, 448.0f / 3.0f, pow2(127),
                                448.0f / FLT_MAX, 256.0f, 448.0f / 0x1.c00002p+0f };
        for (int i = 0; i < 9; i++)
            ck_assert_msg(scales[i] == want[i], "FP32 block %d: %a, want %a", i,
                          (double)scales[i], (double)want[i]);
        ck_assert_float_eq(scales[9], -1.0f);
    }
    /* E5M2's largest, 57344, in both kinds of scale. */
    struct gan_recipe_operand op = operand("c.fc2/gan_matmul#0/b", GAN_F8E5M2, 1, 64);
    op.layout.block = 32;
    const float two[2] = { 3.0f, 1.0f };
    float scales[2];
    ck_assert_int_eq(fp32.m.ops->scales(fp32.rc, &op, NULL, two, scales, NULL), GAN_OK);
    ck_assert_float_eq(scales[0], 57344.0f / 3.0f);
    ck_assert_float_eq(scales[1], 57344.0f);
    ck_assert_int_eq(e8m0.m.ops->scales(e8m0.rc, &op, NULL, two, scales, NULL), GAN_OK);
    ck_assert_float_eq(scales[0], pow2(14));
    ck_assert_float_eq(scales[1], pow2(15));

    /* A bad amax anywhere: refused before any scale is written. */
    const float bad[2] = { 1.0f, NAN };
    scales[0] = scales[1] = -1;
    ck_assert_int_eq(e8m0.m.ops->scales(e8m0.rc, &op, NULL, bad, scales, NULL), GAN_ERR_INVALID);
    ck_assert_ptr_nonnull(strstr(e8m0.th.last_error, "the amax of block 1"));
    ck_assert_float_eq(scales[0], -1.0f);
    ck_assert_int_eq(e8m0.m.ops->scales(e8m0.rc, &op, NULL, NULL, scales, NULL), GAN_ERR_INVALID);
    /* Blocks of another length than the plan's. */
    op.layout.block = 16;
    ck_assert_int_eq(e8m0.m.ops->scales(e8m0.rc, &op, NULL, two, scales, NULL), GAN_ERR_INVALID);
    ck_assert_ptr_nonnull(strstr(e8m0.th.last_error, "blocks of 16, but its plan chose 32"));
    rig_free(&e8m0);
    rig_free(&fp32);
}
END_TEST

/* MXFP8 and DeepSeek-V3's blocks: every E8M0 scale a power of two that keeps its block
 * within E4M3 and doubled would not; every FP32 scale within half an ulp of max / amax. */
START_TEST(test_block_recipes)
{
    const char *mx[] = { "size=32", "scale=e8m0", NULL };
    const char *ds[] = { "size=128", "scale=fp32", NULL };
    struct rig a, b;
    rig_new(&a, "block", mx);
    rig_new(&b, "block", ds);
    struct gan_recipe_operand op = operand("c.fc1/gan_linear#0/x", GAN_F8E4M3, 5, 300);
    op.layout.along = GAN_FP8_ALONG_ROWS;
    float amax[50], scales[50];
    uint64_t state = 99;
    for (int i = 0; i < 50; i++) {
        state = state * 6364136223846793005ull + 1442695040888963407ull;
        amax[i] = ldexpf(1.0f + (float)((state >> 40) & 0xffff) * 0x1p-16f,
                         (int)((state >> 20) % 60) - 30);
    }
    op.layout.block = 32;
    ck_assert_int_eq(gan_fp8_scale_count(&op.layout), 50);
    ck_assert_int_eq(a.m.ops->scales(a.rc, &op, NULL, amax, scales, NULL), GAN_OK);
    for (int i = 0; i < 50; i++) {
        ck_assert(is_pow2(scales[i]));
        ck_assert((double)amax[i] * scales[i] <= 448.0);
        ck_assert((double)amax[i] * scales[i] * 2 > 448.0);
    }
    op.layout.block = 128;
    ck_assert_int_eq(gan_fp8_scale_count(&op.layout), 15);
    ck_assert_int_eq(b.m.ops->scales(b.rc, &op, NULL, amax, scales, NULL), GAN_OK);
    for (int i = 0; i < 15; i++) {
        double exact = 448.0 / amax[i];
        ck_assert(fabs(scales[i] - exact) <= 0.5 * (nextafterf(scales[i], INFINITY) - scales[i]));
    }
    rig_free(&a);
    rig_free(&b);
}
END_TEST

/* ------------------------------------------------------------------ underflow-aware */

/* Statistics with `n` values in each bin `bins` (exponent floor(log2 |x|)). */
static struct gan_fp8_stats histogram(float amax, const int *bins, const uint64_t *n, int count)
{
    struct gan_fp8_stats s = stats_of(amax, 0, 0, 0);
    for (int i = 0; i < count; i++) {
        s.log2_hist[bins[i] - GAN_FP8_LOG2_MIN] += n[i];
        s.elements += n[i];
    }
    return s;
}

struct ua_case {
    const char *target;
    enum gan_dtype format;
    int bins[3];
    uint64_t n[3];
    int nbins;
    float amax;
    int exponent;
    const char *reason;
};

static const struct ua_case ua_cases[] = {
    /* One value of 1000 far below: the target (0.1 %) lets it go, and the scale lifts
     * the rest (bin -12) just clear of the subnormal limit 2^-9: 2^3, where 2^20 would
     * still not overflow. */
    { "target=0.001", GAN_F8E4M3, { -20, -12 }, { 1, 999 }, 2, 1.5f * 0x1p-12f, 3,
      "underflow target bound: amax 0.000366 → 2^3, 17 binades of headroom" },
    /* Two values of 1000 below: over the target, so bin -20 must clear too. */
    { "target=0.001", GAN_F8E4M3, { -20, -12 }, { 2, 998 }, 2, 1.5f * 0x1p-12f, 11,
      "underflow target bound: amax 0.000366 → 2^11, 9 binades of headroom" },
    /* Exactly at the target is within it. */
    { "target=0.5", GAN_F8E4M3, { -20, -12 }, { 500, 500 }, 2, 1.5f * 0x1p-12f, 3,
      "underflow target bound" },
    /* E5M2 reaches 2^-16: the same values need 2^-4, a scale below 1. */
    { "target=0.001", GAN_F8E5M2, { -20, -12 }, { 1, 999 }, 2, 1.5f * 0x1p-12f, -4,
      "underflow target bound: amax 0.000366 → 2^-4, 31 binades of headroom" },
    /* Half the values 38 binades below the amax: no scale below overflow saves them. */
    { "target=0.001", GAN_F8E4M3, { -30, 8 }, { 500, 500 }, 2, 384.0f, 0,
      "overflow bound: 50% of the non-zero values still below the subnormal limit at 2^0" },
    /* Bounded by overflow, some of the low values are saved by the largest scale. */
    { "target=0.001", GAN_F8E4M3, { -25, -16, 0 }, { 10, 20, 970 }, 3, 1.5f, 8,
      "overflow bound: 1% of the non-zero values still below the subnormal limit at 2^8" },
    /* Equal bounds: the two values of bin -17 are over the target until the largest
     * scale that fits, which lifts them clear. */
    { "target=0.001", GAN_F8E4M3, { -17, 0 }, { 2, 998 }, 2, 1.5f, 8,
      "underflow target bound: amax 1.5 → 2^8, 0 binades of headroom" },
};

START_TEST(test_underflow_aware_bounds)
{
    const struct ua_case *c = &ua_cases[_i];
    const char *settings[] = { c->target, NULL };
    struct rig r;
    rig_new(&r, "underflow-aware", settings);
    struct gan_recipe_operand op = operand("critic.fc1/gan_linear#0/dy", c->format, 10, 100);
    op.gradient = 1;
    struct gan_fp8_stats st = histogram(c->amax, c->bins, c->n, c->nbins);
    char reason[96] = "";
    float s = tensor_scale(&r, &op, &st, reason);
    ck_assert_msg(s == pow2(c->exponent), "case %d: %a, want 2^%d (%s)", _i, (double)s,
                  c->exponent, reason);
    ck_assert_msg(strncmp(reason, c->reason, strlen(c->reason)) == 0, "case %d: reason \"%s\"",
                  _i, reason);
    rig_free(&r);
}
END_TEST

START_TEST(test_underflow_aware_edges)
{
    struct rig r;
    rig_new(&r, "underflow-aware", NULL);
    struct gan_recipe_operand op = operand("critic.fc1/gan_linear#0/x", GAN_F8E4M3, 4, 4);
    char reason[96] = "";
    struct gan_fp8_stats zeros = stats_of(0, 16, 12, 4);
    ck_assert_float_eq(tensor_scale(&r, &op, &zeros, reason), 1.0f);
    ck_assert_str_eq(reason, "no finite non-zero value → 1");
    /* An amax without a histogram, or a histogram without an amax: not measured. */
    struct gan_fp8_stats bare = stats_of(2.0f, 16, 0, 0);
    float s = -1;
    ck_assert_int_eq(r.m.ops->scales(r.rc, &op, &bare, NULL, &s, reason), GAN_ERR_INVALID);
    ck_assert_ptr_nonnull(strstr(r.th.last_error, "the histogram was not measured"));
    const int bins[1] = { 0 };
    const uint64_t n[1] = { 4 };
    struct gan_fp8_stats lost = histogram(0, bins, n, 1);
    ck_assert_int_eq(r.m.ops->scales(r.rc, &op, &lost, NULL, &s, reason), GAN_ERR_INVALID);
    ck_assert_float_eq(s, -1.0f);
    /* Values at FP32's smallest: 2^158 would be needed; E8M0 stops at 2^127. */
    const int tiny_bins[1] = { -149 };
    struct gan_fp8_stats tiny = histogram(FLT_TRUE_MIN, tiny_bins, n, 1);
    ck_assert_float_eq(tensor_scale(&r, &op, &tiny, reason), pow2(127));
    ck_assert_ptr_nonnull(strstr(reason, "(clamped)"));
    rig_free(&r);
}
END_TEST

/* ------------------------------------------------------------------ settings */

struct bad_setting {
    const char *recipe;
    const char *settings[2];
    const char *names;
};

static const struct bad_setting bad_settings[] = {
    { "current", { "margin=-1" }, "margin = -1 is out of range" },
    { "current", { "margin=128" }, "margin = 128 is out of range" },
    { "delayed", { "history=0" }, "history = 0 is out of range" },
    { "delayed", { "history=65537" }, "history = 65537" },
    { "delayed", { "algorithm=mean" }, "algorithm = \"mean\" is not one it knows: write \"max\" "
                                       "or \"most_recent\"" },
    { "delayed", { "margin=-3" }, "margin = -3" },
    { "block", { "size=0" }, "size = 0 is out of range" },
    { "block", { "size=-32" }, "size = -32" },
    { "block", { "scale=fp16" }, "scale = \"fp16\" is not one it knows: write \"e8m0\" or "
                                 "\"fp32\"" },
    { "underflow-aware", { "target=0" }, "target = 0 is out of range" },
    { "underflow-aware", { "target=1" }, "target = 1 is out of range" },
    { "underflow-aware", { "target=1.5" }, "target = 1.5" },
    { "underflow-aware", { "target=-0.001" }, "target = -0.001" },
    { "underflow-aware", { "target=nan" }, "target = nan" },
    { "current", { "margin=two" }, "\"margin\"" },
};

START_TEST(test_bad_settings)
{
    const struct bad_setting *c = &bad_settings[_i];
    struct rig r;
    gan_status st = rig_try(&r, open_recipe(c->recipe), c->settings);
    ck_assert_msg(st == GAN_ERR_CONFIG, "%s with %s: status %d (%s)", c->recipe, c->settings[0],
                  (int)st, r.th.last_error);
    ck_assert_msg(strstr(r.th.last_error, c->names), "%s with %s: \"%s\" does not name %s",
                  c->recipe, c->settings[0], r.th.last_error, c->names);
}
END_TEST

/* ------------------------------------------------------------------ any module */

/* What the core relies on from any recipe: the one ganctl-recipe(7) prints, built by a
 * third party, is held to it too (tests/e2e/recipe_manpage.sh passes its path). */
static const char *conformance_path;

/* One operand through plan, scales and observe as the core drives it, with statistics
 * made up to fit what the plan wants; the scales' count, range and kind checked. */
static void drive(struct rig *r, const struct gan_recipe_operand *given, float amax,
                  float *scales_out, int64_t *count_out)
{
    struct gan_recipe_operand op = *given;
    op.layout.block = 0;
    struct gan_recipe_plan plan = plan_of(r, &op);
    ck_assert_int_ge(plan.block, 0);
    ck_assert(plan.scale_type == GAN_RECIPE_SCALE_F32 || plan.scale_type == GAN_RECIPE_SCALE_E8M0);
    op.layout.block = plan.block;
    int64_t count = gan_fp8_scale_count(&op.layout);
    ck_assert_int_le(count, 256);
    struct gan_fp8_stats st = stats_of(amax, (uint64_t)(op.layout.rows * op.layout.cols), 0, 0);
    if (amax > 0) {
        int e;
        frexpf(amax, &e);
        st.log2_hist[e - 1 - GAN_FP8_LOG2_MIN] = st.elements;
    }
    float block_amax[256], scales[257];
    for (int64_t i = 0; i < count; i++)
        block_amax[i] = amax;
    for (int64_t i = 0; i <= count; i++)
        scales[i] = -1;
    char reason[96];
    memset(reason, 0, sizeof reason);
    gan_status s = r->m.ops->scales(r->rc, &op,
                                    plan.want & (GAN_RECIPE_WANT_AMAX | GAN_RECIPE_WANT_HISTOGRAM)
                                        ? &st : NULL,
                                    plan.want & GAN_RECIPE_WANT_BLOCK_AMAX ? block_amax : NULL,
                                    scales, reason);
    ck_assert_msg(s == GAN_OK, "scales: %s", r->th.last_error);
    ck_assert_ptr_nonnull(memchr(reason, '\0', sizeof reason));
    for (int64_t i = 0; i < count; i++) {
        ck_assert_msg(scales[i] > 0 && isfinite(scales[i]), "scale %lld is %a", (long long)i,
                      (double)scales[i]);
        if (plan.scale_type == GAN_RECIPE_SCALE_E8M0)
            ck_assert_msg(is_pow2(scales[i]) && scales[i] >= pow2(-127) && scales[i] <= pow2(127),
                          "E8M0 scale %a", (double)scales[i]);
    }
    ck_assert_float_eq(scales[count], -1.0f);
    if (r->m.ops->observe) {
        struct gan_fp8_cast_stats c = cast_of(amax, 0);
        ck_assert_msg(r->m.ops->observe(r->rc, &op, &c, scales) == GAN_OK, "observe: %s",
                      r->th.last_error);
    }
    if (scales_out)
        memcpy(scales_out, scales, (size_t)count * sizeof *scales);
    if (count_out)
        *count_out = count;
}

START_TEST(test_conformance)
{
    char path[600], name[128];
    if (conformance_path)
        snprintf(path, sizeof path, "%s", conformance_path);
    else
        snprintf(path, sizeof path, "%s/recipe-%s.so", GAN_TEST_RECIPE_DIR, all_recipes[_i]);
    const char *base = strrchr(path, '/');
    base = base ? base + 1 : path;
    ck_assert_msg(strncmp(base, "recipe-", 7) == 0, "%s is not named recipe-NAME.so", base);
    snprintf(name, sizeof name, "%s", base + 7);
    char *dot = strstr(name, ".so");
    ck_assert_ptr_nonnull(dot);
    *dot = '\0';

    struct rig a, b;
    ck_assert_msg(rig_try(&a, open_path(path, name), NULL) == GAN_OK, "%s: %s", name,
                  a.th.last_error);
    static const float amaxes[] = { 1.0f, 0.0f, 3.2e-5f, 900.0f, FLT_MAX, FLT_TRUE_MIN };
    const char *names[] = { "critic.fc1/gan_linear#0/x", "generator.fc2/gan_matmul#1/b" };
    for (size_t k = 0; k < 24; k++) {
        struct gan_recipe_operand op = operand(names[k % 2], k % 3 ? GAN_F8E4M3 : GAN_F8E5M2,
                                               4 + (int64_t)k, 37);
        op.layout.along = k % 4 < 2 ? GAN_FP8_ALONG_ROWS : GAN_FP8_ALONG_COLUMNS;
        drive(&a, &op, amaxes[k % 6], NULL, NULL);
    }
    if (a.m.ops->describe)
        ck_assert_ptr_nonnull(a.m.ops->describe(a.rc));
    ck_assert_int_eq(rig_try(&b, a.m, NULL), GAN_OK);
    if (a.m.ops->save_state) {
        struct saved_state *s = malloc(sizeof *s);
        ck_assert_ptr_nonnull(s);
        save(&a, s);
        ck_assert_msg(b.m.ops->load_state(b.rc, s->arrays, s->count) == GAN_OK, "%s",
                      b.th.last_error);
        free(s);
    }
    /* After the load (or from nothing, for a recipe without state) both decide alike. */
    for (size_t k = 0; k < 24; k++) {
        struct gan_recipe_operand op = operand(names[k % 2], GAN_F8E4M3, 8, 64);
        float x[256], y[256];
        int64_t nx, ny;
        drive(&a, &op, amaxes[(k + 1) % 6], x, &nx);
        drive(&b, &op, amaxes[(k + 1) % 6], y, &ny);
        ck_assert_int_eq(nx, ny);
        ck_assert_msg(memcmp(x, y, (size_t)nx * sizeof *x) == 0, "%s: cast %zu after the load "
                      "differs", name, k);
    }
    rig_free(&a);
    rig_free(&b);
}
END_TEST

/* ------------------------------------------------------------------ suite */

#define COUNT(a) ((int)(sizeof(a) / sizeof(a)[0]))

static Suite *recipes_suite(void)
{
    Suite *s = suite_create("recipes");
    TCase *tc;

    if (conformance_path) {
        tc = tcase_create("conformance");
        tcase_add_test(tc, test_conformance);
        suite_add_tcase(s, tc);
        return s;
    }

    tc = tcase_create("descriptors");
    tcase_add_loop_test(tc, test_descriptor, 0, COUNT(all_recipes));
    tcase_add_loop_test(tc, test_declared_defaults, 0, COUNT(all_recipes));
    tcase_add_loop_test(tc, test_conformance, 0, COUNT(all_recipes));
    tcase_add_test(tc, test_plans);
    suite_add_tcase(s, tc);

    tc = tcase_create("current");
    tcase_add_test(tc, test_none);
    tcase_add_loop_test(tc, test_current_exact, 0, COUNT(current_cases));
    tcase_add_test(tc, test_current_never_overflows);
    tcase_add_test(tc, test_current_zero_and_nonfinite);
    suite_add_tcase(s, tc);

    tc = tcase_create("delayed");
    tcase_add_test(tc, test_delayed_window);
    tcase_add_test(tc, test_delayed_overflows);
    tcase_add_test(tc, test_delayed_round_trip);
    tcase_add_loop_test(tc, test_delayed_corrupted, 0, COUNT(corruptions));
    suite_add_tcase(s, tc);

    tc = tcase_create("block");
    tcase_add_test(tc, test_block_ragged);
    tcase_add_test(tc, test_block_recipes);
    suite_add_tcase(s, tc);

    tc = tcase_create("underflow-aware");
    tcase_add_loop_test(tc, test_underflow_aware_bounds, 0, COUNT(ua_cases));
    tcase_add_test(tc, test_underflow_aware_edges);
    suite_add_tcase(s, tc);

    tc = tcase_create("settings");
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
        fprintf(stderr, "usage: %s [path/recipe-NAME.so]\n", argv[0]);
        return 2;
    }
    SRunner *sr = srunner_create(recipes_suite());
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
