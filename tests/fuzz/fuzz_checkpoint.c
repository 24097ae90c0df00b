/* SPDX-License-Identifier: MIT */
/* fuzz_checkpoint.c — the checkpoint loader (core/train/state/checkpoint.c) on arbitrary
 * files, into two tiny networks built once per process (fuzz_nets.c): the critic is
 * loaded with its loss scaling, the generator without, as a run with one scaled
 * network would. gan_checkpoint_load reads only from a path, so each input goes
 * through a scratch file. A refusal must be one line naming the file; an acceptance must
 * leave in the networks and optimizers exactly the file's tensors and counters, and a
 * state within the ranges checkpoint.h gives. */
#include "config.h"

#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "io/safetensors/safetensors.h"
#include "fuzz_nets.h"
#include "fuzz.h"

static struct fuzz_nets nets;
static int nets_ready;

static void close_nets(void)
{
    fuzz_nets_close(&nets);
}

static void check_refusal(gan_status st, const struct gan_checkpoint_state *state,
                          const struct gan_error *err, const char *path)
{
    if (st != GAN_ERR_FORMAT && st != GAN_ERR_UNSUPPORTED)
        fuzz_fail("refused with status %s: %s", gan_status_string(st), err->message);
    if (!strstr(err->message, path))
        fuzz_fail("the message does not name the file: %s", err->message);
    if (strchr(err->message, '\n'))
        fuzz_fail("the message spans lines: %s", err->message);
    if (state->config_text)
        fuzz_fail("refused, but config_text is set");
}

/* The values `t` holds in the file, bit for bit, as the host floats `got`. */
static void check_values(const struct gan_st_tensor *t, const float *got, size_t count,
                         const char *what)
{
    if (!t)
        fuzz_fail("accepted a file without %s", what);
    if (t->dtype != GAN_ST_F32 || t->count != count || t->nbytes != count * sizeof(float))
        fuzz_fail("accepted %s as %s with %" PRIu64 " elements, for %zu", what,
                  gan_st_dtype_name(t->dtype), t->count, count);
    if (memcmp(t->data, got, t->nbytes) != 0)
        fuzz_fail("%s: the values loaded are not the file's", what);
}

static uint64_t meta_u64(const gan_st_file *f, const char *key)
{
    const char *text = gan_st_metadata_get(f, key);
    if (!text)
        fuzz_fail("accepted a file without metadata \"%s\"", key);
    return strtoull(text, NULL, 10);
}

/* What the networks hold now against the file, which the loader has accepted. */
static void check_loaded(const uint8_t *data, size_t size)
{
    gan_st_file *f = NULL;
    char msg[1024];
    if (gan_st_parse(data, size, "input", &f, msg, sizeof msg) != GAN_OK)
        fuzz_fail("the loader accepted a file the safetensors reader refuses: %s", msg);
    for (int k = 0; k < 2; k++) {
        gan_net *net = nets.net[k];
        size_t total = (size_t)gan_net_total(net);
        float *values = malloc(total * sizeof *values), *moment = malloc(total * sizeof *moment);
        if (!values || !moment)
            fuzz_fail("out of memory");
        char name[256];
        for (size_t i = 0; i < gan_net_count(net); i++) {
            size_t n = (size_t)gan_net_numel(net, i);
            if (gan_tensor_to_host(nets.ctx, gan_net_tensor(net, i), values, n) != GAN_OK)
                fuzz_fail("gan_tensor_to_host: %s", gan_ctx_error(nets.ctx));
            check_values(gan_st_find(f, gan_net_full_name(net, i)), values, n,
                         gan_net_full_name(net, i));
        }
        static const char *const moments[2] = { "exp_avg", "exp_avg_sq" };
        for (int m = 0; m < 2; m++) {
            if (gan_optimizer_moment_to_host(nets.opt[k], m, moment, total) != GAN_OK)
                fuzz_fail("gan_optimizer_moment_to_host: %s", gan_ctx_error(nets.ctx));
            for (size_t i = 0; i < gan_net_count(net); i++) {
                snprintf(name, sizeof name, "optimizer.%s.%s.%s", nets.cn[k].name, moments[m],
                         gan_net_name(net, i));
                check_values(gan_st_find(f, name), moment + gan_net_offset(net, i),
                             (size_t)gan_net_numel(net, i), name);
            }
        }
        snprintf(name, sizeof name, "optimizer.%s.step", nets.cn[k].name);
        if ((uint64_t)gan_optimizer_steps(nets.opt[k]) != meta_u64(f, name))
            fuzz_fail("%s: %" PRId64 " steps loaded", name, gan_optimizer_steps(nets.opt[k]));
        free(values);
        free(moment);
    }
    gan_st_close(f);
}

static void check_state(const struct gan_checkpoint_state *state)
{
    if (state->iteration < 0)
        fuzz_fail("accepted iteration %" PRId64, state->iteration);
    if (!isfinite(state->elapsed_s) || state->elapsed_s < 0)
        fuzz_fail("accepted elapsed_s %g", state->elapsed_s);
    if (state->config_text)
        fuzz_fail("config_text is set; checkpoint.h says a load leaves it NULL");
    const struct gan_checkpoint_scaling *sc = &nets.scaling;
    if (!sc->state.scaler[0] || !memchr(sc->state.scaler, '\0', sizeof sc->state.scaler))
        fuzz_fail("accepted a scaler without a name");
    if (sc->state.version < 1)
        fuzz_fail("accepted scaler state version %" PRId64, sc->state.version);
    if (sc->state.count > GAN_SCALER_STATE_MAX)
        fuzz_fail("accepted %zu scaler values", sc->state.count);
    for (size_t i = 0; i < sc->state.count; i++)
        if (!sc->state.values[i].name[0]
            || !memchr(sc->state.values[i].name, '\0', sizeof sc->state.values[i].name))
            fuzz_fail("scaler value %zu has no proper name", i);
    if (sc->skipped < 0 || sc->overflows < 0 || sc->overflows > 3)
        fuzz_fail("accepted counters skipped %" PRId64 ", overflows %" PRId64, sc->skipped,
                  sc->overflows);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (!nets_ready) {
        fuzz_nets_open(&nets);
        atexit(close_nets);
        nets_ready = 1;
    }
    const char *path = fuzz_scratch_file(data, size);
    struct gan_checkpoint_state state;
    struct gan_fp8_state fp8;
    memset(&state, 0, sizeof state);
    memset(&fp8, 0, sizeof fp8);
    state.fp8 = &fp8;
    struct gan_error err;
    gan_error_clear(&err);
    gan_status st = gan_checkpoint_load(path, nets.cn, 2, &state, &err);
    gan_fp8_state_clear(&fp8);
    if (st != GAN_OK) {
        check_refusal(st, &state, &err, path);
        return 0;
    }
    check_state(&state);
    check_loaded(data, size);
    return 0;
}
