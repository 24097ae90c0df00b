/* SPDX-License-Identifier: MIT */
/* precision.c — the mixed-precision policy of a context: mode and level, module scopes
 * and FP32 patterns, the casts it gives each op's inputs (rules in tensor.h), and the
 * clamp of 16-bit GEMM results. */
#include "config.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "tensor/tensor_private.h"

#define PATTERN_MAX 255
#define SCOPE_NAME_MAX 63
#define SCOPE_PATH_MAX 1023

static int is_low(enum gan_dtype dt)
{
    return dt == GAN_F16 || dt == GAN_BF16;
}

/* ------------------------------------------------------------------ mode and level */

gan_status gan_ctx_set_precision(gan_ctx *ctx, enum gan_dtype mode,
                                 enum gan_precision_level level)
{
    const char *op = "gan_ctx_set_precision";
    if (!ctx)
        return GAN_ERR_INVALID;
    if (mode != GAN_F32 && !is_low(mode)) {
        const char *dn = gan_dtype_name(mode);
        return ti_fail(ctx, GAN_ERR_INVALID, "%s: mode %s is not a precision mode; use GAN_F32 "
                       "(fp32), GAN_F16 (fp16) or GAN_BF16 (bf16)", op, dn ? dn : "(invalid)");
    }
    if (level != GAN_PRECISION_O1 && level != GAN_PRECISION_O2)
        return ti_fail(ctx, GAN_ERR_INVALID, "%s: level %d is not a precision level; use "
                       "GAN_PRECISION_O1 (GEMM and convolutions in 16 bit) or GAN_PRECISION_O2 "
                       "(nearly everything in 16 bit)", op, (int)level);
    ctx->prec_mode = mode;
    ctx->prec_level = level;
    return GAN_OK;
}

void gan_ctx_get_precision(const gan_ctx *ctx, enum gan_dtype *mode,
                           enum gan_precision_level *level)
{
    if (mode)
        *mode = ctx ? ctx->prec_mode : GAN_F32;
    if (level)
        *level = ctx && ctx->prec_level == GAN_PRECISION_O2 ? GAN_PRECISION_O2
                                                            : GAN_PRECISION_O1;
}

/* ------------------------------------------------------------------ pattern matching */

/* Whether glob pattern p (NUL-terminated; '*' matches any run of characters) matches
 * exactly the n characters at s. The classic linear backtracking: on a mismatch, go
 * back to the last '*' and let it take one more character. */
static int glob_match(const char *p, const char *s, size_t n)
{
    size_t i = 0;
    const char *star = NULL;
    size_t star_i = 0;
    while (i < n) {
        if (*p == '*') {
            star = p++;
            star_i = i;
        } else if (*p && *p == s[i]) {
            p++;
            i++;
        } else if (star) {
            p = star + 1;
            i = ++star_i;
        } else {
            return 0;
        }
    }
    while (*p == '*')
        p++;
    return *p == '\0';
}

/* Whether the pattern matches a run of whole parts of the dotted path: parts i … j
 * for some i ≤ j, compared as one string with their dots. */
static int path_matches(const char *pattern, const char *path)
{
    size_t len = strlen(path);
    for (size_t begin = 0; begin < len;) {
        for (size_t end = begin; end <= len; end++) {
            if ((end == len || path[end] == '.') && end > begin
                && glob_match(pattern, path + begin, end - begin))
                return 1;
        }
        const char *dot = strchr(path + begin, '.');
        if (!dot)
            break;
        begin = (size_t)(dot - path) + 1;
    }
    return 0;
}

static int scope_matches(const gan_ctx *ctx, const char *path)
{
    for (size_t i = 0; i < ctx->n_patterns; i++)
        if (path_matches(ctx->fp32_patterns[i], path))
            return 1;
    return 0;
}

static void rematch_all(gan_ctx *ctx)
{
    for (struct ti_scope *s = ctx->scope_all; s; s = s->all_next)
        s->fp32 = scope_matches(ctx, s->path);
}

static int pattern_char(char c)
{
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9')
           || c == '_' || c == '-' || c == '*';
}

gan_status gan_ctx_add_fp32_scope(gan_ctx *ctx, const char *pattern)
{
    const char *op = "gan_ctx_add_fp32_scope";
    if (!ctx)
        return GAN_ERR_INVALID;
    size_t n = pattern ? strlen(pattern) : 0;
    int ok = n > 0 && n <= PATTERN_MAX && pattern[0] != '.' && pattern[n - 1] != '.';
    for (size_t i = 0; ok && i < n; i++)
        ok = pattern_char(pattern[i]) || (pattern[i] == '.' && pattern[i + 1] != '.');
    if (!ok)
        return ti_fail(ctx, GAN_ERR_INVALID, "%s: \"%.*s\" is not a scope pattern: use scope "
                       "names (letters, digits, '_', '-') joined by single dots, with '*' "
                       "for any characters, at most %d characters, e.g. \"penalty\" or "
                       "\"critic.norm*\"", op, PATTERN_MAX, pattern ? pattern : "(NULL)",
                       PATTERN_MAX);
    for (size_t i = 0; i < ctx->n_patterns; i++)
        if (strcmp(ctx->fp32_patterns[i], pattern) == 0)
            return GAN_OK;
    if (ctx->n_patterns == ctx->cap_patterns) {
        size_t cap = ctx->cap_patterns ? 2 * ctx->cap_patterns : 8;
        char **p = realloc(ctx->fp32_patterns, cap * sizeof *p);
        if (!p)
            return ti_fail(ctx, GAN_ERR_NOMEM, "%s: out of host memory", op);
        ctx->fp32_patterns = p;
        ctx->cap_patterns = cap;
    }
    char *copy = malloc(n + 1);
    if (!copy)
        return ti_fail(ctx, GAN_ERR_NOMEM, "%s: out of host memory", op);
    memcpy(copy, pattern, n + 1);
    ctx->fp32_patterns[ctx->n_patterns++] = copy;
    rematch_all(ctx);
    return GAN_OK;
}

void gan_ctx_clear_fp32_scopes(gan_ctx *ctx)
{
    if (!ctx)
        return;
    for (size_t i = 0; i < ctx->n_patterns; i++)
        free(ctx->fp32_patterns[i]);
    ctx->n_patterns = 0;
    rematch_all(ctx);
}

size_t gan_ctx_fp32_scope_count(const gan_ctx *ctx)
{
    return ctx ? ctx->n_patterns : 0;
}

const char *gan_ctx_fp32_scope(const gan_ctx *ctx, size_t i)
{
    return ctx && i < ctx->n_patterns ? ctx->fp32_patterns[i] : NULL;
}

/* ------------------------------------------------------------------ scopes */

static int scope_char(char c)
{
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9')
           || c == '_' || c == '-';
}

/* The child `name` of parent (NULL: the top level), made when absent. Scopes are kept
 * for the context's lifetime: a model enters the same few every step, and nodes point
 * at them. */
static struct ti_scope *scope_child(gan_ctx *ctx, const char *op, struct ti_scope *parent,
                                    const char *name)
{
    struct ti_scope **first = parent ? &parent->child : &ctx->scope_top;
    for (struct ti_scope *s = *first; s; s = s->sibling)
        if (strcmp(s->name, name) == 0)
            return s;
    size_t plen = parent ? strlen(parent->path) : 0, nlen = strlen(name);
    if (plen + 1 + nlen > SCOPE_PATH_MAX) {
        ti_fail(ctx, GAN_ERR_INVALID, "%s: scope \"%s.%s\" would be longer than %d characters; "
                "use shorter names", op, parent ? parent->path : "", name, SCOPE_PATH_MAX);
        return NULL;
    }
    struct ti_scope *s = calloc(1, sizeof *s);
    char *path = malloc(plen + 1 + nlen + 1);
    if (!s || !path) {
        free(s);
        free(path);
        ti_fail(ctx, GAN_ERR_NOMEM, "%s: out of host memory", op);
        return NULL;
    }
    if (parent) {
        memcpy(path, parent->path, plen);
        path[plen++] = '.';
    }
    memcpy(path + plen, name, nlen + 1);
    s->path = path;
    s->name = path + plen;
    s->parent = parent;
    s->fp32 = scope_matches(ctx, path);
    s->sibling = *first;
    *first = s;
    s->all_next = ctx->scope_all;
    ctx->scope_all = s;
    return s;
}

gan_status gan_ctx_scope_push(gan_ctx *ctx, const char *name)
{
    const char *op = "gan_ctx_scope_push";
    if (!ctx)
        return GAN_ERR_INVALID;
    size_t n = name ? strlen(name) : 0;
    int ok = n > 0 && n <= SCOPE_NAME_MAX;
    for (size_t i = 0; ok && i < n; i++)
        ok = scope_char(name[i]);
    if (!ok)
        return ti_fail(ctx, GAN_ERR_INVALID, "%s: \"%.*s\" is not a scope name: use 1 to %d "
                       "letters, digits, '_' or '-' (one level; push again to nest)", op,
                       SCOPE_NAME_MAX, name ? name : "(NULL)", SCOPE_NAME_MAX);
    if (ctx->scope_depth >= TI_SCOPE_MAX_DEPTH)
        return ti_fail(ctx, GAN_ERR_INVALID, "%s: \"%s\" inside \"%s\" would nest scopes "
                       "deeper than %d; a push without its pop is the likely cause", op, name,
                       ctx->scope ? ctx->scope->path : "", TI_SCOPE_MAX_DEPTH);
    struct ti_scope *s = scope_child(ctx, op, ctx->scope, name);
    if (!s)
        return ctx->status;
    ctx->scope_stack[ctx->scope_depth++] = ctx->scope;
    ctx->scope = s;
    return GAN_OK;
}

void gan_ctx_scope_pop(gan_ctx *ctx)
{
    if (!ctx)
        return;
    if (ctx->scope_depth == 0) {
        ti_fail(ctx, GAN_ERR_INVALID, "gan_ctx_scope_pop: no scope to leave; every pop needs "
                "a gan_ctx_scope_push before it");
        return;
    }
    ctx->scope = ctx->scope_stack[--ctx->scope_depth];
}

const char *gan_ctx_scope(const gan_ctx *ctx)
{
    return ctx && ctx->scope ? ctx->scope->path : "";
}

int gan_ctx_scope_is_fp32(const gan_ctx *ctx)
{
    return ctx && ctx->scope && ctx->scope->fp32;
}

void ti_precision_destroy(gan_ctx *ctx)
{
    gan_ctx_clear_fp32_scopes(ctx);
    free(ctx->fp32_patterns);
    ctx->fp32_patterns = NULL;
    ctx->cap_patterns = 0;
    while (ctx->scope_all) {
        struct ti_scope *s = ctx->scope_all;
        ctx->scope_all = s->all_next;
        free(s->path);
        free(s);
    }
    ctx->scope_top = NULL;
    ctx->scope = NULL;
    ctx->scope_depth = 0;
}

/* ------------------------------------------------------------------ casting inputs */

/* t in `dtype` for an op: a recorded gan_cast, or the one made earlier this step from
 * the same values. The cache is per source tensor and per kind (recorded or not: a
 * cast made under no-grad has no node, so gradients could not flow through it). */
static gan_tensor *policy_input(gan_ctx *ctx, gan_tensor *t, enum gan_dtype dtype)
{
    if (t->dtype == dtype)
        return t;
    struct ti_cast_cache *c = &t->cast[ti_wants_grad(ctx, t) ? 1 : 0];
    if (c->copy && c->step == ctx->step_no && c->version == t->version
        && c->copy->dtype == dtype) {
        ctx->cast_cache_hits++;
        return c->copy;
    }
    gan_tensor *y = gan_cast(ctx, t, dtype);
    if (!y)
        return NULL;
    /* A copy made for an op is the tensor it copies: a weight first cast inside a
     * backward pass is still no gradient (an FP8 product's format depends on it). */
    y->from_backward = t->from_backward;
    ctx->policy_casts++;
    c->copy = y;
    c->step = ctx->step_no;
    c->version = t->version;
    return y;
}

/* The dtype an op of class cls computes in, for inputs of dtypes a and b (b is
 * GAN_DTYPE_COUNT when the op has one input). */
static enum gan_dtype compute_dtype(const gan_ctx *ctx, enum ti_op_class cls,
                                    enum gan_dtype a, enum gan_dtype b)
{
    if (ctx->scope && ctx->scope->fp32)
        return GAN_F32;
    switch (cls) {
    case TI_CLASS_GEMM:
        return ctx->prec_mode;
    case TI_CLASS_POINTWISE:
        if (ctx->prec_level == GAN_PRECISION_O2 && (is_low(a) || is_low(b)))
            return ctx->prec_mode;
        return GAN_F32;
    case TI_CLASS_LOSS_REDUCE:
    default:
        return GAN_F32;
    }
}

static int policy_is_off(const gan_ctx *ctx)
{
    return ctx->prec_mode == GAN_F32 || ctx->policy_off > 0;
}

enum gan_dtype ti_policy_dtype(const gan_ctx *ctx, enum ti_op_class cls, enum gan_dtype a,
                               enum gan_dtype b)
{
    if (policy_is_off(ctx))   /* ti_result_dtype's rule, on dtypes */
        return b == GAN_DTYPE_COUNT || a == b ? a : GAN_F32;
    return compute_dtype(ctx, cls, a, b);
}

gan_tensor *ti_policy_cast(gan_ctx *ctx, gan_tensor *t, enum gan_dtype dtype)
{
    return policy_is_off(ctx) ? t : policy_input(ctx, t, dtype);
}

enum gan_dtype ti_policy_apply(gan_ctx *ctx, enum ti_op_class cls, gan_tensor **a,
                               gan_tensor **b)
{
    gan_tensor *b0 = b ? *b : NULL;
    if (policy_is_off(ctx))
        return ti_result_dtype(*a, b0);
    enum gan_dtype dt = compute_dtype(ctx, cls, (*a)->dtype, b0 ? b0->dtype : GAN_DTYPE_COUNT);
    gan_tensor *a2 = policy_input(ctx, *a, dt);
    gan_tensor *b2 = a2 && b0 ? policy_input(ctx, b0, dt) : b0;
    if (!a2 || (b0 && !b2))
        return GAN_DTYPE_COUNT;   /* gan_cast has recorded why */
    *a = a2;
    if (b)
        *b = b2;
    return dt;
}

enum gan_dtype ti_policy_apply_beside(gan_ctx *ctx, enum ti_op_class cls, gan_tensor **a,
                                      enum gan_dtype b_dtype)
{
    enum gan_dtype dt = ti_policy_dtype(ctx, cls, (*a)->dtype, b_dtype);
    if (policy_is_off(ctx))
        return dt;
    gan_tensor *a2 = policy_input(ctx, *a, dt);
    if (!a2)
        return GAN_DTYPE_COUNT;   /* gan_cast has recorded why */
    *a = a2;
    return dt;
}

/* ------------------------------------------------------------------ activation clamp */

gan_status gan_ctx_set_clamp(gan_ctx *ctx, float limit)
{
    if (!ctx)
        return GAN_ERR_INVALID;
    if (!(limit >= 0.0f) || isinf(limit))
        return ti_fail(ctx, GAN_ERR_INVALID, "gan_ctx_set_clamp: limit %g; it must be a finite "
                       "number, 0 (off) or above", (double)limit);
    ctx->clamp = limit;
    return GAN_OK;
}

float gan_ctx_clamp(const gan_ctx *ctx)
{
    return ctx ? ctx->clamp : 0.0f;
}

gan_status gan_ctx_clamp_count_start(gan_ctx *ctx, const char *pattern)
{
    if (!ctx)
        return GAN_ERR_INVALID;
    size_t n = pattern ? strlen(pattern) : 0;
    if (n >= sizeof ctx->clamp_pattern)
        return ti_fail(ctx, GAN_ERR_INVALID, "gan_ctx_clamp_count_start: a pattern of %zu "
                       "characters; at most %zu", n, sizeof ctx->clamp_pattern - 1);
    memcpy(ctx->clamp_pattern, n ? pattern : "", n + 1);
    ctx->clamp_counting = 1;
    ctx->clamp_changed = ctx->clamp_seen = 0;
    return GAN_OK;
}

void gan_ctx_clamp_count_stop(gan_ctx *ctx, uint64_t *changed, uint64_t *seen)
{
    if (changed)
        *changed = ctx ? ctx->clamp_changed : 0;
    if (seen)
        *seen = ctx ? ctx->clamp_seen : 0;
    if (ctx)
        ctx->clamp_counting = 0;
}

void gan_ctx_clamp_as(gan_ctx *ctx, enum gan_dtype mode, enum gan_precision_level level)
{
    if (!ctx)
        return;
    ctx->clamp_as = is_low(mode);
    ctx->clamp_as_level = level;
}

gan_tensor *ti_policy_clamp(gan_ctx *ctx, gan_tensor *y, int bias_add)
{
    if (!y || ctx->clamp <= 0.0f || ctx->in_backward)
        return y;
    int low;
    if (!policy_is_off(ctx))
        low = is_low(y->dtype);
    else   /* an FP32 shadow: where its 16-bit pass had a 16-bit result (rules in tensor.h) */
        low = ctx->clamp_as && ctx->policy_off == 0 && !(ctx->scope && ctx->scope->fp32)
              && !(bias_add && ctx->clamp_as_level == GAN_PRECISION_O1);
    if (!low)
        return y;
    int count = ctx->clamp_counting
                && (!ctx->clamp_pattern[0]
                    || (ctx->scope && path_matches(ctx->clamp_pattern, ctx->scope->path)));
    if (count)
        ctx->clamp_seen += (uint64_t)y->numel;
    return ti_clamp(ctx, y, -ctx->clamp, ctx->clamp, count ? &ctx->clamp_changed : NULL);
}

/* ------------------------------------------------------------------ 16-bit gradients */

void ti_note_grad16(gan_ctx *ctx, gan_tensor *src, gan_tensor *g)
{
    /* A reshape only relabels: its source's gradient is this one, reshaped. */
    while (src->grad_fn && src->grad_fn->n_in == 1 && strcmp(src->grad_fn->op, "gan_reshape") == 0)
        src = src->grad_fn->in[0];
    src->grad16 = g;
    src->grad16_step = ctx->step_no;
}

gan_tensor *gan_tensor_grad16(const gan_tensor *t)
{
    if (!t || !t->ctx || !t->grad16 || t->grad16_step != t->ctx->step_no)
        return NULL;
    return t->grad16;
}
