/* SPDX-License-Identifier: MIT */
/* scaler_common.h — what every shipped scaler module shares: reading and checking its
 * settings, classifying a step's overflow, FP32 scale arithmetic, and state lists. */
#ifndef GANCTL_PLUGINS_SCALER_COMMON_H
#define GANCTL_PLUGINS_SCALER_COMMON_H

#include <stddef.h>
#include <stdint.h>
#include <ganctl/ganctl.h>

/* FP16's largest finite value. */
#define SCALER_F16_MAX 65504.0

/* Settings without a declared default (the dynamic rule's, whose preset supplies it).
 * Each reader leaves *value alone and returns GAN_OK when the key is unset
 * (NOT_FOUND), so the caller's preset value stays; `*set` (may be NULL) says whether it was
 * set. Any other failure is reported through host->fail naming `who` and the key. */
gan_status scaler_read_float(const struct gan_host *host, const char *who, const char *key,
                             double *value, int *set);
gan_status scaler_read_int(const struct gan_host *host, const char *who, const char *key,
                           int64_t *value, int *set);
gan_status scaler_read_bool(const struct gan_host *host, const char *who, const char *key,
                            int *value, int *set);
gan_status scaler_read_string(const struct gan_host *host, const char *who, const char *key,
                              const char **value, int *set);

/* A setting that declares a default in the module's settings table, which is its only
 * copy: the host answers an unset key with it, so these fail (through host->fail) when
 * the host gives no value, as well as for a value of the wrong type. */
gan_status scaler_get_float(const struct gan_host *host, const char *who, const char *key,
                            double *value);
gan_status scaler_get_string(const struct gan_host *host, const char *who, const char *key,
                             const char **value);

/* A scale setting: finite, ≥ lowest (and > 0 when positive is set), at most FP32's
 * largest value; rounded to the nearest FP32 number, since that is what the core uses. */
gan_status scaler_check_scale(const struct gan_host *host, const char *who, const char *key,
                              double *value, int positive);

/* The scale `s · factor` as the core will use it: the product in double, rounded once to
 * FP32 (PyTorch's update kernel stores the product into its FP32 scale the same way).
 * May be 0 or inf; callers decide. */
double scaler_times(double s, double factor);

/* A step's overflow class from the input: forward when the core flagged the forward,
 * gradient when any tensor holds inf or NaN or the scale was 0, else none. Checks the
 * input's shape and that its scale is `own_scale`; GAN_ERR_INVALID through host->fail. */
gan_status scaler_classify(const struct gan_host *host, const char *who,
                           const struct gan_scaler_input *in, double own_scale,
                           enum gan_scaler_overflow *overflow);

/* Writes the fields of `out` that lie inside its struct_size. */
void scaler_decide(struct gan_scaler_decision *out, int skip, double scale,
                   enum gan_scaler_overflow overflow, enum gan_scaler_change change);

/* One value a scaler's state format holds. */
struct scaler_field {
    const char *name;
    enum gan_scaler_value_type type;
};

/* Starts a state for `scaler` at `version`, no values. */
void scaler_state_begin(struct gan_scaler_state *st, const char *scaler, int64_t version);
void scaler_state_put_int(struct gan_scaler_state *st, const char *name, int64_t v);
void scaler_state_put_float(struct gan_scaler_state *st, const char *name, double v);

/* Checks `st` against the format `fields` (n of them) of scaler `who` at `version`:
 * the right scaler and version, every field exactly once with its type, nothing else.
 * GAN_ERR_INVALID / UNSUPPORTED / FORMAT as scaler.h says, through host->fail. */
gan_status scaler_state_check(const struct gan_host *host, const char *who,
                              const struct gan_scaler_state *st, int64_t version,
                              const struct scaler_field *fields, size_t n);

/* The value named `name` (present: check it with scaler_state_check first). */
int64_t scaler_state_int(const struct gan_scaler_state *st, const char *name);
double scaler_state_float(const struct gan_scaler_state *st, const char *name);

/* Range checks for loaded values, failing with GAN_ERR_FORMAT naming the value. */
gan_status scaler_state_counter(const struct gan_host *host, const char *who,
                                const struct gan_scaler_state *st, const char *name,
                                int64_t least, int64_t *out);
gan_status scaler_state_scale(const struct gan_host *host, const char *who,
                              const struct gan_scaler_state *st, const char *name,
                              double *out);

#endif
