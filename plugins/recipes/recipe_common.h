/* SPDX-License-Identifier: MIT */
/* recipe_common.h — what every shipped FP8 scaling recipe shares: its settings read and
 * checked, the operand and the plan checked, the FP8 formats' limits, and power-of-two
 * scales computed exactly. */
#ifndef GANCTL_PLUGINS_RECIPE_COMMON_H
#define GANCTL_PLUGINS_RECIPE_COMMON_H

#include <stddef.h>
#include <stdint.h>
#include <ganctl/ganctl.h>

/* The range of a scale's exponent: E8M0's, 2^-127 … 2^127, which FP32 also holds
 * (2^-127 as a subnormal), so that a scale and its reciprocal are both finite and
 * non-zero in FP32. */
#define RECIPE_EXPONENT_MIN (-127)
#define RECIPE_EXPONENT_MAX 127

/* What a recipe needs of an FP8 format. */
struct recipe_format {
    const char *name;             /* "E4M3", "E5M2" */
    double max;                   /* the largest finite value: 448, 57344 */
    int log2_subnormal;           /* log2 of the smallest subnormal: -9, -16 */
};

/* A declared integer setting (the host answers an unset key with the declared default)
 * within [least, most]; GAN_ERR_CONFIG through host->fail naming the setting, its value
 * and the range otherwise. */
gan_status recipe_get_int(const struct gan_host *host, const char *who, const char *key,
                          long long least, long long most, long long *value);
/* A declared number strictly between `above` and `below`. */
gan_status recipe_get_fraction(const struct gan_host *host, const char *who, const char *key,
                               double above, double below, double *value);
/* A declared string that is one of `choices` (NULL-terminated): its index there. */
gan_status recipe_get_choice(const struct gan_host *host, const char *who, const char *key,
                             const char *const *choices, int *index);

/* Checks the operand the core hands a recipe (its struct_size, a name, an FP8 format,
 * a layout whose sizes are not negative) and gives its format's limits; the scale
 * count of its layout goes to *count when count is not NULL. GAN_ERR_INVALID through
 * host->fail otherwise. */
gan_status recipe_check_operand(const struct gan_host *host, const char *who,
                                const struct gan_recipe_operand *op, struct recipe_format *fmt,
                                int64_t *count);
/* The same, and that the layout has the block length `block` that the recipe's plan
 * chose (0: per tensor), since the scales' count and order follow from it. */
gan_status recipe_check_blocks(const struct gan_host *host, const char *who,
                               const struct gan_recipe_operand *op, int64_t block,
                               struct recipe_format *fmt, int64_t *count);

/* Fills the plan after checking that the core's struct holds every field of ABI 1.6. */
gan_status recipe_fill_plan(const struct gan_host *host, const char *who,
                            struct gan_recipe_plan *plan, uint32_t want, int64_t block,
                            enum gan_recipe_scale_type type);

/* Checks a measured amax: finite and not negative (GAN_ERR_INVALID naming `what`). */
gan_status recipe_check_amax(const struct gan_host *host, const char *who, const char *what,
                             double amax);

/* The largest e with amax · 2^e ≤ max, exactly, for a finite amax > 0: the scale
 * 2^e puts the operand's largest value as high as it goes without overflowing. */
int recipe_headroom_exponent(double amax, double max);

/* e brought into [RECIPE_EXPONENT_MIN, RECIPE_EXPONENT_MAX]. */
int recipe_clamp_exponent(int e);

/* 2^e as an FP32 number, e within the range above. */
float recipe_pow2(int e);

/* Writes the reason for the debug log into reason[0 … 95] when reason is not NULL,
 * cut short if it is longer. */
void recipe_reason(char reason[96], const char *fmt, ...) GAN_PRINTF_LIKE(2, 3);

/* The scale 2^(headroom − margin), clamped; scale 1 for an amax of 0 (no finite non-zero
 * value to scale). Writes the reason "amax A → 2^E" (margin and clamp said when they
 * apply) into reason when it is not NULL. */
float recipe_amax_scale(double amax, double max, int margin, char reason[96]);

#endif
