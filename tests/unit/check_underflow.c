/* SPDX-License-Identifier: MIT */
/* check_underflow.c — debug level 2: the FP32 shadow backward against counts of true underflow
 * and overflow computed on the host; a level-2 run that trains exactly as a level-0 run; grads. */
#include "config.h"

#include <check.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "../lib/backend_fixture.h"
#include "config/configuration.h"
#include "../../cli/grads_cmd.h"
#include "nn/net.h"
#include "plugin/plugin_loader.h"
#include "train/run/run_dir.h"
#include "train/loop/trainer.h"
#include "amp/underflow_probe.h"
#include "../lib/scratch.h"

#define CTX (fx.ctx)

/* ------------------------------------------------------------------ host rounding
 * Round to nearest, ties to even, from the formats' definitions: FP16 has 10 fraction
 * bits, normals from 2^-14 (below, a fixed spacing of 2^-24) and overflows from 65520 on;
 * BF16 is FP32 with 7 fraction bits. */

static double nearest_even(double v)
{
    double f = floor(v), d = v - f;
    if (d > 0.5 || (d == 0.5 && fmod(f, 2.0) != 0.0))
        f += 1.0;
    return f;
}

static float to_f16(double x)
{
    if (!isfinite(x) || x == 0.0)
        return (float)x;
    double a = fabs(x);
    int e;
    frexp(a, &e);                          /* a in [2^(e-1), 2^e) */
    int lead = e - 1 < -14 ? -14 : e - 1;
    double q = ldexp(1.0, lead - 10);
    double r = nearest_even(a / q) * q;
    if (r >= 65520.0)
        r = INFINITY;
    return (float)(x < 0 ? -r : r);
}

static float to_bf16(double x)
{
    if (!isfinite(x) || x == 0.0)
        return (float)x;
    double a = fabs(x);
    int e;
    frexp(a, &e);
    int lead = e - 1 < -126 ? -126 : e - 1;
    double q = ldexp(1.0, lead - 7);
    double r = nearest_even(a / q) * q;
    return (float)(x < 0 ? -r : r);
}

static float to_dtype(enum gan_dtype dt, double x)
{
    return dt == GAN_F16 ? to_f16(x) : dt == GAN_BF16 ? to_bf16(x) : (float)x;
}

/* ------------------------------------------------------------------ a tiny network
 * loss = Σ (x·W) ⊙ m with x [B, IN] and m [B, OUT] constants, W [IN, OUT] the one
 * parameter: under the policy, a 16-bit GEMM, a product, the loss reduction. Seeded with
 * s, the gradients are, exactly: at the product's output s; at the GEMM's output
 * gy = s·m; W's gradient xᵀ·gy. The values are powers of two and small multiples of
 * them, so that FP32 holds every product and sum exactly and only the 16-bit rounding
 * decides what survives. */

#define B 8
#define IN 3
#define OUT 4

struct tiny {
    gan_net *net;
    gan_tensor *w, *x, *m;
    float xv[B * IN], mv[B * OUT], wv[IN * OUT];
    int extra_ops;                /* the shadow's graph gets two more nodes */
    int building_shadow;
};

static gan_tensor *tiny_objective(void *arg, gan_ctx *ctx)
{
    struct tiny *t = arg;
    gan_tensor *y = gan_mul(ctx, gan_matmul(ctx, t->x, t->w, 0, 0), t->m);
    if (t->extra_ops && t->building_shadow)
        y = gan_neg(ctx, gan_neg(ctx, y));
    return gan_sum(ctx, y, GAN_ALL_AXES, 0);
}

/* Draws the inputs from the given value sets with a fixed generator. */
static void tiny_make(struct tiny *t, const float *xs, size_t nx, const float *ms, size_t nm,
                      unsigned seed)
{
    memset(t, 0, sizeof *t);
    uint64_t state = seed * 0x9e3779b97f4a7c15ull + 1;
    for (int k = 0; k < B * IN + B * OUT + IN * OUT; k++) {
        state = state * 6364136223846793005ull + 1442695040888963407ull;
        unsigned r = (unsigned)(state >> 33);
        if (k < B * IN)
            t->xv[k] = xs[r % nx];
        else if (k < B * IN + B * OUT)
            t->mv[k - B * IN] = ms[r % nm];
        else
            t->wv[k - B * IN - B * OUT] = (float)((int)(r % 7) - 3) * 0.25f;
    }
    int64_t xd[2] = { B, IN }, md[2] = { B, OUT }, wd[2] = { IN, OUT };
    ck_assert_int_eq(gan_net_new(CTX, "tiny", &t->net), GAN_OK);
    t->w = gan_net_param(t->net, "w", 2, wd, (struct gan_init){ GAN_INIT_ZEROS, 0.0f });
    ck_assert_ptr_nonnull(t->w);
    ck_assert_int_eq(gan_tensor_set_from_host(CTX, t->w, t->wv, IN * OUT), GAN_OK);
    t->x = gan_tensor_from_host(CTX, GAN_F32, 2, xd, t->xv);
    t->m = gan_tensor_from_host(CTX, GAN_F32, 2, md, t->mv);
    ck_assert_ptr_nonnull(t->x);
    ck_assert_ptr_nonnull(t->m);
}

/* The 16-bit backward seeded with s, then the shadow. */
static void tiny_run(struct tiny *t, gan_probe *p, double s)
{
    gan_tensor *loss = tiny_objective(t, CTX);
    ck_assert_msg(loss != NULL, "%s", gan_ctx_error(CTX));
    gan_tensor *seed = gan_tensor_full(CTX, GAN_F32, 0, NULL, (float)s);
    gan_tensor *grads[1];
    ck_assert_msg(gan_grad(CTX, 1, &loss, &seed, 1, gan_net_tensors(t->net), grads, 0) == GAN_OK,
                  "%s", gan_ctx_error(CTX));
    t->building_shadow = 1;
    ck_assert_msg(gan_probe_shadow(p, t->net, s, grads, 0, tiny_objective, t) == GAN_OK, "%s",
                  gan_ctx_error(CTX));
    t->building_shadow = 0;
}

static const struct gan_probe_row *find_row(const gan_probe *p, const char *name)
{
    for (size_t i = 0; i < gan_probe_row_count(p); i++)
        if (strcmp(gan_probe_row_at(p, i)->name, name) == 0)
            return gan_probe_row_at(p, i);
    return NULL;
}

/* What the 16-bit pass loses, counted on the host: an element is lost to underflow when
 * the exact value is not zero and its 16-bit computation gives zero, overflows when the
 * 16-bit computation gives inf or NaN where the exact value is finite. */
struct counts {
    uint64_t under, over;
};

static void tally(struct counts *c, double exact, float low)
{
    if (!isfinite(exact))
        return;
    if (exact != 0.0 && low == 0.0f)
        c->under++;
    else if (!isfinite(low))
        c->over++;
}

struct probe_case {
    const char *label;
    enum gan_dtype mode;
    enum gan_precision_level level;
    double scale;
    float xs[8], ms[8];
    size_t nx, nm;
    /* What the case must show (beyond matching the host's counts). */
    int gemm_underflows, param_underflows, overflows;
};

static const struct probe_case probe_cases[] = {
    /* The first three cases share their inputs. 2^-20 · m: 2^-20 and 2^-23 survive in
     * FP16, 2^-25 is a tie that rounds to zero, 2^-27 and below vanish; W's gradient
     * then loses what its terms lost, and sums of surviving terms below 2^-25 vanish
     * too. */
    { "fp16 O2 at 2^-20", GAN_F16, GAN_PRECISION_O2, 0x1p-20,
      { 1, -1, 0.5f, -0.5f, 2, 0.25f }, { 1, 0x1p-3f, 0x1p-5f, 0.75f * 0x1p-6f, 0x1p-7f, 0x1p-9f },
      6, 6, 1, 1, 0 },
    { "fp16 O1 at 2^-20", GAN_F16, GAN_PRECISION_O1, 0x1p-20,
      { 1, -1, 0.5f, -0.5f, 2, 0.25f }, { 1, 0x1p-3f, 0x1p-5f, 0.75f * 0x1p-6f, 0x1p-7f, 0x1p-9f },
      6, 6, 1, 1, 0 },
    /* BF16 has FP32's exponent range: nothing underflows at 2^-20. */
    { "bf16 O2 at 2^-20", GAN_BF16, GAN_PRECISION_O2, 0x1p-20,
      { 1, -1, 0.5f, -0.5f, 2, 0.25f }, { 1, 0x1p-3f, 0x1p-5f, 0.75f * 0x1p-6f, 0x1p-7f, 0x1p-9f },
      6, 6, 0, 0, 0 },
    /* Scale 1 and ordinary values: nothing is lost. */
    { "fp16 O2 at 1", GAN_F16, GAN_PRECISION_O2, 1.0,
      { 1, -1, 0.5f, -0.75f, 1.5f, 0.25f }, { 1, 0.5f, -1.25f, 2, 0.75f, 1.5f },
      6, 6, 0, 0, 0 },
    /* 2^12 · 16 = 65536 is past FP16's largest finite value: those values, and every
     * W gradient they feed, overflow. */
    { "fp16 O2 at 2^12", GAN_F16, GAN_PRECISION_O2, 0x1p12,
      { 1, -1, 0.5f, 2 }, { 16, 0.5f, 1, 0.25f, 0.125f },
      4, 5, 0, 0, 1 },
};

START_TEST(shadow_counts_match_the_host)
{
    const struct probe_case *c = &probe_cases[_i];
    ck_assert_int_eq(gan_ctx_set_precision(CTX, c->mode, c->level), GAN_OK);
    struct tiny t;
    tiny_make(&t, c->xs, c->nx, c->ms, c->nm, 7);
    gan_probe *p = NULL;
    ck_assert_int_eq(gan_probe_new(&p), GAN_OK);
    tiny_run(&t, p, c->scale);
    ck_assert(gan_probe_has_result(p));
    ck_assert_str_eq(gan_probe_op_mismatch(p), "");
    ck_assert_double_eq(gan_probe_scale(p), c->scale);

    /* The host's account, independent of the backend. */
    double gy[B][OUT];
    float gy16[B][OUT];
    struct counts gemm = { 0, 0 }, param = { 0, 0 };
    for (int b = 0; b < B; b++)
        for (int j = 0; j < OUT; j++) {
            gy[b][j] = c->scale * t.mv[b * OUT + j];
            gy16[b][j] = to_dtype(c->mode, gy[b][j]);
            tally(&gemm, gy[b][j], gy16[b][j]);
        }
    for (int i = 0; i < IN; i++)
        for (int j = 0; j < OUT; j++) {
            double exact = 0.0;
            float low = 0.0f;
            for (int b = 0; b < B; b++) {
                exact += (double)t.xv[b * IN + i] * gy[b][j];
                low += t.xv[b * IN + i] * gy16[b][j];
            }
            tally(&param, exact, to_dtype(c->mode, low));
        }

    const struct gan_probe_row *rw = find_row(p, "tiny.w");
    const struct gan_probe_row *rg = find_row(p, "0 matmul");
    const struct gan_probe_row *rm = find_row(p, "1 mul");
    const struct gan_probe_row *rs = find_row(p, "2 sum");
    ck_assert_msg(rw && rg && rm && rs, "%s: rows missing (%zu rows)", c->label, gan_probe_row_count(p));
    ck_assert_int_eq(gan_probe_row_count(p), 4);
    ck_assert_int_eq(rw->kind, GAN_PROBE_PARAM);
    ck_assert_int_eq(rg->kind, GAN_PROBE_OP);
    ck_assert_int_eq(rw->elements, IN * OUT);
    ck_assert_int_eq(rg->elements, B * OUT);
    ck_assert_int_eq(rs->elements, 1);
    ck_assert_int_eq(rw->dtype, c->mode);     /* W's gradient was 16 bit before its cast */
    ck_assert_int_eq(rg->dtype, c->mode);
    ck_assert_msg(rg->true_underflow == gemm.under && rg->overflow == gemm.over,
                  "%s: matmul output: probe %llu/%llu, host %llu/%llu", c->label,
                  (unsigned long long)rg->true_underflow, (unsigned long long)rg->overflow,
                  (unsigned long long)gemm.under, (unsigned long long)gemm.over);
    ck_assert_msg(rw->true_underflow == param.under && rw->overflow == param.over,
                  "%s: W: probe %llu/%llu, host %llu/%llu", c->label,
                  (unsigned long long)rw->true_underflow, (unsigned long long)rw->overflow,
                  (unsigned long long)param.under, (unsigned long long)param.over);
    /* The seed s itself is a 16-bit number in every case: nothing lost before the GEMM. */
    ck_assert_int_eq(rm->true_underflow + rm->overflow + rs->true_underflow + rs->overflow, 0);
    /* The case is what it claims to be. */
    ck_assert_int_eq(gemm.under > 0, c->gemm_underflows);
    ck_assert_int_eq(param.under > 0, c->param_underflows);
    ck_assert_int_eq(gemm.over > 0 && param.over > 0, c->overflows);

    uint64_t e, u, o;
    gan_probe_param_totals(p, &e, &u, &o);
    ck_assert_int_eq(e, IN * OUT);
    ck_assert_int_eq(u, rw->true_underflow);
    ck_assert_int_eq(o, rw->overflow);
    ck_assert_double_eq(gan_probe_param_fraction(p), (double)u / (double)(IN * OUT));

    /* The policy is back, and W's 16-bit gradient is still the 16-bit pass's. */
    enum gan_dtype mode;
    enum gan_precision_level level;
    gan_ctx_get_precision(CTX, &mode, &level);
    ck_assert_int_eq(mode, c->mode);
    ck_assert_int_eq(level, c->level);
    gan_tensor *g16 = gan_tensor_grad16(t.w);
    ck_assert_ptr_nonnull(g16);
    ck_assert_int_eq(gan_tensor_dtype(g16), c->mode);
    gan_probe_free(p);
    gan_ctx_step_end(CTX);
    gan_net_free(t.net);
}
END_TEST

/* A shadow whose graph is not the 16-bit one's gives parameter rows and says why it has
 * no op rows. */
START_TEST(mismatched_tapes_give_no_op_rows)
{
    ck_assert_int_eq(gan_ctx_set_precision(CTX, GAN_F16, GAN_PRECISION_O2), GAN_OK);
    const float xs[] = { 1, 0.5f }, ms[] = { 0x1p-9f };
    struct tiny t;
    tiny_make(&t, xs, 2, ms, 1, 3);
    t.extra_ops = 1;
    gan_probe *p = NULL;
    ck_assert_int_eq(gan_probe_new(&p), GAN_OK);
    tiny_run(&t, p, 0x1p-20);
    ck_assert(gan_probe_has_result(p));
    ck_assert_ptr_nonnull(strstr(gan_probe_op_mismatch(p), "3 nodes besides casts and the FP32 one 5"));
    ck_assert_int_eq(gan_probe_row_count(p), 1);
    ck_assert_int_eq(gan_probe_row_at(p, 0)->kind, GAN_PROBE_PARAM);
    ck_assert_int_gt(gan_probe_row_at(p, 0)->true_underflow, 0);
    gan_probe_clear(p);
    ck_assert(!gan_probe_has_result(p));
    ck_assert(isnan(gan_probe_param_fraction(p)));
    ck_assert_int_eq(gan_probe_row_count(p), 0);
    gan_probe_free(p);
    gan_ctx_step_end(CTX);
    gan_net_free(t.net);
}
END_TEST

/* The log table: the heading's totals, every parameter, the worst ops first. */
struct lines {
    char text[32][256];
    int n;
};

static void keep_line(void *arg, const char *text)
{
    struct lines *l = arg;
    if (l->n < 32)
        snprintf(l->text[l->n++], sizeof l->text[0], "%s", text);
}

START_TEST(report_lists_the_worst_ops_first)
{
    ck_assert_int_eq(gan_ctx_set_precision(CTX, GAN_F16, GAN_PRECISION_O2), GAN_OK);
    const float xs[] = { 1, -1, 0.5f }, ms[] = { 1, 0x1p-9f, 0x1p-7f };
    struct tiny t;
    tiny_make(&t, xs, 3, ms, 3, 11);
    gan_probe *p = NULL;
    ck_assert_int_eq(gan_probe_new(&p), GAN_OK);
    tiny_run(&t, p, 0x1p-20);
    struct lines l = { .n = 0 };
    gan_probe_report(p, "tiny", 1, keep_line, &l);
    /* Heading, column names, W, the one op shown with its count line. */
    ck_assert_int_eq(l.n, 5);
    ck_assert_ptr_nonnull(strstr(l.text[0], "tiny at scale 9.53674316e-07"));
    ck_assert_ptr_nonnull(strstr(l.text[2], "tiny.w"));
    ck_assert_ptr_nonnull(strstr(l.text[3], "the 1 of 3 ops that lost most"));
    ck_assert_ptr_nonnull(strstr(l.text[4], "0 matmul"));
    l.n = 0;
    gan_probe_report(p, "tiny", SIZE_MAX, keep_line, &l);
    ck_assert_int_eq(l.n, 6);     /* every op, in tape order */
    ck_assert_ptr_nonnull(strstr(l.text[5], "2 sum"));
    gan_probe_free(p);
    gan_ctx_step_end(CTX);
    gan_net_free(t.net);
}
END_TEST

/* ------------------------------------------------------------------ the trainer */

static void scratch_setup(void)
{
    test_scratch_make("ganctl-underflow");
}

static const char *const small_run[] = {
    "backend.threads=1",
    "generator.model.width=16", "generator.model.depth=2",
    "critic.model.width=16", "critic.model.depth=2",
    "data.batch_size=32", "critic.iterations=2",
    "run.iterations=12", "run.log_every=4", "run.eval_every=0", "run.image_every=0",
    "run.checkpoint_every=0", "run.metrics_time=false",
    NULL,
};

/* Trains a small run with `extra` settings in the scratch folder's dir; returns the run folder. */
static void train_small(const char *dir, const char *const *extra, char *run_dir, size_t size)
{
    gan_config *cfg = NULL;
    struct gan_error err;
    gan_error_clear(&err);
    ck_assert_int_eq(gan_config_new(&cfg, &err), GAN_OK);
    for (const char *const *s = small_run; *s; s++)
        ck_assert_msg(gan_config_set(cfg, *s, &err) == GAN_OK, "%s: %s", *s, err.message);
    for (const char *const *s = extra; *s; s++)
        ck_assert_msg(gan_config_set(cfg, *s, &err) == GAN_OK, "%s: %s", *s, err.message);
    snprintf(run_dir, size, "%s/%s", test_scratch, dir);
    ck_assert_int_eq(gan_config_set_string(cfg, "run.dir", run_dir, "test", &err), GAN_OK);
    gan_loader *loader = NULL;
    ck_assert_msg(gan_loader_new(&loader, NULL, 0, getenv("GANCTL_PLUGIN_PATH"), NULL, &err) == GAN_OK,
                  "%s", err.message);
    struct gan_trainer_setup setup = { .config = cfg, .loader = loader };
    gan_trainer *t = NULL;
    ck_assert_msg(gan_trainer_new(&setup, &t, &err) == GAN_OK, "%s", err.message);
    struct gan_trainer_result r;
    ck_assert_msg(gan_trainer_run(t, &r, &err) == GAN_OK, "%s", err.message);
    gan_trainer_free(t);
    gan_loader_free(loader);
    gan_config_free(cfg);
}

/* A CSV as rows of cells (cells point into the text, which is cut up). */
struct csv {
    char *text;
    char *cell[64][40];
    int cols[64];
    int rows;
};

static void csv_parse(struct csv *c, char *text)
{
    memset(c, 0, sizeof *c);
    c->text = text;
    char *line = text;
    while (line && *line && c->rows < 64) {
        char *next = strchr(line, '\n');
        if (next)
            *next++ = '\0';
        int n = 0;
        for (char *cell = line; cell && n < 40; n++) {
            char *comma = strchr(cell, ',');
            if (comma)
                *comma++ = '\0';
            c->cell[c->rows][n] = cell;
            cell = comma;
        }
        c->cols[c->rows++] = n;
        line = next;
    }
}

static int csv_col(const struct csv *c, const char *name)
{
    for (int k = 0; k < c->cols[0]; k++)
        if (strcmp(c->cell[0][k], name) == 0)
            return k;
    return -1;
}

/* Level 2 runs an extra forward and backward per row and changes nothing: every metrics
 * cell but the two it fills is the same text, at every row, so the parameters, the
 * scalers and the streams went the same way. */
START_TEST(level_two_trains_like_level_zero)
{
    char dir0[700], dir2[700];
    const char *l0[] = { "precision.mode=fp16", "scaler.name=static", "scaler.scale=1e-5",
                         "run.debug_level=0", NULL };
    const char *l2[] = { "precision.mode=fp16", "scaler.name=static", "scaler.scale=1e-5",
                         "run.debug_level=2", NULL };
    train_small("l0", l0, dir0, sizeof dir0);
    train_small("l2", l2, dir2, sizeof dir2);
    struct csv a, b;
    csv_parse(&a, test_read_run_file(dir0, GAN_RUN_METRICS));
    csv_parse(&b, test_read_run_file(dir2, GAN_RUN_METRICS));
    ck_assert_int_eq(a.rows, 4);
    ck_assert_int_eq(b.rows, 4);
    int cu = csv_col(&a, "critic_true_underflow"), gu = csv_col(&a, "generator_true_underflow");
    ck_assert_int_ge(cu, 0);
    ck_assert_int_ge(gu, 0);
    for (int r = 0; r < a.rows; r++) {
        ck_assert_int_eq(a.cols[r], b.cols[r]);
        for (int k = 0; k < a.cols[r]; k++) {
            if (r > 0 && (k == cu || k == gu)) {
                ck_assert_str_eq(a.cell[r][k], "");      /* level 0: not measured */
                double v = atof(b.cell[r][k]);
                ck_assert_msg(b.cell[r][k][0] && v > 0.0 && v <= 1.0,
                              "row %d: %s = \"%s\" at scale 1e-5", r, a.cell[0][k], b.cell[r][k]);
                continue;
            }
            ck_assert_msg(strcmp(a.cell[r][k], b.cell[r][k]) == 0, "row %d, %s: %s at level 0, %s at level 2",
                          r, a.cell[0][k], a.cell[r][k], b.cell[r][k]);
        }
    }
    char path[800];
    snprintf(path, sizeof path, "%s/%s", dir0, GAN_RUN_GRAD_UNDERFLOW);
    ck_assert_int_ne(access(path, F_OK), 0);
    free(a.text);
    free(b.text);
}
END_TEST

/* grad_underflow.csv holds, per row and network, every parameter and the ops; its
 * parameter rows add up to metrics.csv's fraction. */
START_TEST(underflow_csv_adds_up_to_the_metrics)
{
    char dir[700];
    const char *l2[] = { "precision.mode=fp16", "scaler.name=static", "scaler.scale=1e-5",
                         "run.debug_level=2", NULL };
    train_small("csv", l2, dir, sizeof dir);
    struct csv m;
    csv_parse(&m, test_read_run_file(dir, GAN_RUN_METRICS));
    char *text = test_read_run_file(dir, GAN_RUN_GRAD_UNDERFLOW);
    /* Larger than struct csv holds: count rows by hand, check the sums per key. */
    ck_assert_ptr_nonnull(strstr(text, "iteration,network,kind,name,dtype,scale,elements,true_underflow,overflow,fraction\n"));
    for (int r = 1; r < m.rows; r++) {
        long long it = atoll(m.cell[r][0]);
        for (int net = 0; net < 2; net++) {
            const char *name = net ? "critic" : "generator";
            char prefix[64];
            snprintf(prefix, sizeof prefix, "\n%lld,%s,", it, name);
            unsigned long long elements = 0, under = 0, params = 0, ops = 0;
            for (const char *at = strstr(text, prefix); at; at = strstr(at + 1, prefix)) {
                char kind[8], rname[128], dtype[8];
                double scale, frac;
                unsigned long long e, un, ov;
                int got = sscanf(at + strlen(prefix), "%7[^,],%127[^,],%7[^,],%lf,%llu,%llu,%llu,%lf",
                                 kind, rname, dtype, &scale, &e, &un, &ov, &frac);
                ck_assert_int_eq(got, 8);
                ck_assert_double_eq_tol(scale, (double)1e-5f, 1e-14);
                ck_assert_double_eq_tol(frac, e ? (double)un / (double)e : 0.0, 1e-8);
                ck_assert_uint_le(un + ov, e);
                if (strcmp(kind, "param") == 0) {
                    ck_assert_ptr_nonnull(strstr(rname, name));
                    ck_assert_str_eq(dtype, "F16");
                    elements += e;
                    under += un;
                    params++;
                } else {
                    ck_assert_str_eq(kind, "op");
                    ops++;
                }
            }
            int col = csv_col(&m, net ? "critic_true_underflow" : "generator_true_underflow");
            ck_assert_uint_eq(params, 6);       /* depth 2: three layers, weight and bias each */
            ck_assert_uint_gt(ops, 8);
            ck_assert_double_eq_tol(atof(m.cell[r][col]), (double)under / (double)elements, 1e-8);
        }
    }
    free(text);
    free(m.text);
}
END_TEST

/* Level 2 in FP32 has no 16-bit pass to compare: the columns stay empty, no file. */
START_TEST(fp32_has_nothing_to_compare)
{
    char dir[700];
    const char *l2[] = { "precision.mode=fp32", "run.debug_level=2", NULL };
    train_small("fp32", l2, dir, sizeof dir);
    struct csv m;
    csv_parse(&m, test_read_run_file(dir, GAN_RUN_METRICS));
    int cu = csv_col(&m, "critic_true_underflow"), gu = csv_col(&m, "generator_true_underflow");
    for (int r = 1; r < m.rows; r++) {
        ck_assert_str_eq(m.cell[r][cu], "");
        ck_assert_str_eq(m.cell[r][gu], "");
    }
    char path[800];
    snprintf(path, sizeof path, "%s/%s", dir, GAN_RUN_GRAD_UNDERFLOW);
    ck_assert_int_ne(access(path, F_OK), 0);
    snprintf(path, sizeof path, "%s/%s", dir, GAN_RUN_GRAD_STATS);
    ck_assert_int_eq(access(path, F_OK), 0);    /* level 1's output is still there */
    free(m.text);
}
END_TEST

/* ganctl grads --debug-level 2: the shadow of each backward, reported per network, and
 * gradients equal to a level-0 evaluation's. */
START_TEST(grads_compares_each_backward)
{
    char dir[700];
    const char *l0[] = { "precision.mode=fp16", "scaler.name=static", "scaler.scale=1e-5", NULL };
    train_small("grads", l0, dir, sizeof dir);
    struct gan_error err;
    gan_error_clear(&err);
    gan_loader *loader = NULL;
    ck_assert_msg(gan_loader_new(&loader, NULL, 0, getenv("GANCTL_PLUGIN_PATH"), NULL, &err) == GAN_OK,
                  "%s", err.message);
    struct gan_saved_setting one_thread = { "backend.threads=1", NULL };
    gan_grads *g = NULL;
    ck_assert_msg(gan_grads_open(dir, &one_thread, 1, loader, NULL, &g, &err) == GAN_OK, "%s", err.message);
    enum { N = 16 };
    int64_t zdim = gan_grads_z_size(g);
    float real[N * 2], *z = malloc((size_t)(N * zdim) * sizeof *z), alpha[N];
    ck_assert_ptr_nonnull(z);
    for (int k = 0; k < N * 2; k++)
        real[k] = (float)((k * 37) % 17) / 8.0f - 1.0f;
    for (int64_t k = 0; k < N * zdim; k++)
        z[k] = (float)((k * 29) % 23) / 11.0f - 1.0f;
    for (int k = 0; k < N; k++)
        alpha[k] = (float)k / (float)(N - 1);
    struct gan_grads_batch b = { N, real, z, alpha };
    struct gan_grads_values v;
    unsigned both = GAN_LOSS_CRITIC | GAN_LOSS_GENERATOR;

    /* Level 0 first: no comparison, the gradients for reference. */
    ck_assert_ptr_null(gan_grads_probe(g, GAN_MODEL_CRITIC));
    ck_assert_msg(gan_grads_evaluate(g, &b, both, &v, &err) == GAN_OK, "%s", err.message);
    gan_net *nets[2] = { gan_grads_net(g, GAN_MODEL_GENERATOR), gan_grads_net(g, GAN_MODEL_CRITIC) };
    float *before[2], *after[2];
    for (int i = 0; i < 2; i++) {
        size_t total = (size_t)gan_net_total(nets[i]);
        before[i] = malloc(total * sizeof(float));
        after[i] = malloc(total * sizeof(float));
        ck_assert(before[i] && after[i]);
        for (size_t p = 0; p < gan_net_count(nets[i]); p++)
            ck_assert_int_eq(gan_net_grad_to_host(nets[i], p, before[i] + gan_net_offset(nets[i], p),
                                                  (size_t)gan_net_numel(nets[i], p)), GAN_OK);
    }
    double critic_loss = gan_grads_find_value(&v, "loss.critic")->value;

    ck_assert_int_eq(gan_grads_set_debug_level(g, 2, &err), GAN_OK);
    ck_assert_msg(gan_grads_evaluate(g, &b, both, &v, &err) == GAN_OK, "%s", err.message);
    ck_assert_double_eq(gan_grads_find_value(&v, "loss.critic")->value, critic_loss);
    for (int i = 0; i < 2; i++) {
        const gan_probe *p = gan_grads_probe(g, i ? GAN_MODEL_CRITIC : GAN_MODEL_GENERATOR);
        ck_assert(gan_probe_has_result(p));
        ck_assert_str_eq(gan_probe_op_mismatch(p), "");
        ck_assert_double_eq_tol(gan_probe_scale(p), (double)1e-5f, 1e-14);
        size_t params = 0, ops = 0;
        for (size_t k = 0; k < gan_probe_row_count(p); k++) {
            const struct gan_probe_row *r = gan_probe_row_at(p, k);
            if (r->kind == GAN_PROBE_PARAM)
                ck_assert_str_eq(r->name, gan_net_full_name(nets[i], params++));
            else
                ops++;
        }
        ck_assert_uint_eq(params, gan_net_count(nets[i]));
        ck_assert_uint_gt(ops, params);
        /* 1e-5 flushes FP16 gradients: the shadow sees some. */
        ck_assert_double_gt(gan_probe_param_fraction(p), 0.0);
        size_t total = (size_t)gan_net_total(nets[i]);
        for (size_t q = 0; q < gan_net_count(nets[i]); q++)
            ck_assert_int_eq(gan_net_grad_to_host(nets[i], q, after[i] + gan_net_offset(nets[i], q),
                                                  (size_t)gan_net_numel(nets[i], q)), GAN_OK);
        ck_assert_int_eq(memcmp(before[i], after[i], total * sizeof(float)), 0);
        free(before[i]);
        free(after[i]);
    }
    free(z);
    gan_grads_free(g);
    gan_loader_free(loader);
}
END_TEST

START_TEST(grads_reads_the_debug_level)
{
    struct gan_error err;
    struct gan_grads_args args;
    char *ok[] = { "grads", "-C", "c", "-b", "b", "-o", "o", "--debug-level", "2", NULL };
    gan_error_clear(&err);
    ck_assert_int_eq(gan_grads_parse_args(9, ok, &args, &err), GAN_OK);
    ck_assert_int_eq(args.debug_level, 2);
    gan_grads_args_free(&args);
    char *bad[] = { "grads", "-C", "c", "-b", "b", "-o", "o", "--debug-level=3", NULL };
    ck_assert_int_eq(gan_grads_parse_args(8, bad, &args, &err), GAN_ERR_CONFIG);
    ck_assert_str_eq(err.message, "grads: --debug-level must be 0, 1 or 2, got \"3\"");
    gan_grads_args_free(&args);
}
END_TEST

static Suite *underflow_suite(void)
{
    Suite *s = suite_create("underflow");
    TCase *probe = tcase_create("probe");
    tcase_add_checked_fixture(probe, backend_fixture_setup, backend_fixture_teardown);
    tcase_add_loop_test(probe, shadow_counts_match_the_host, 0,
                        (int)(sizeof probe_cases / sizeof probe_cases[0]));
    tcase_add_test(probe, mismatched_tapes_give_no_op_rows);
    tcase_add_test(probe, report_lists_the_worst_ops_first);
    suite_add_tcase(s, probe);

    TCase *trainer = tcase_create("trainer");
    tcase_add_checked_fixture(trainer, scratch_setup, test_scratch_remove);
    tcase_set_timeout(trainer, 120);
    tcase_add_test(trainer, level_two_trains_like_level_zero);
    tcase_add_test(trainer, underflow_csv_adds_up_to_the_metrics);
    tcase_add_test(trainer, fp32_has_nothing_to_compare);
    tcase_add_test(trainer, grads_compares_each_backward);
    tcase_add_test(trainer, grads_reads_the_debug_level);
    suite_add_tcase(s, trainer);
    return s;
}

int main(void)
{
    SRunner *sr = srunner_create(underflow_suite());
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
