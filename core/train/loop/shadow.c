/* SPDX-License-Identifier: MIT */
/* shadow.c — the trainer's debug level 2: at each metrics row, each network's last step is
 * repeated in FP32 (underflow_probe.h) and compared, op by op, with its 16-bit backward,
 * and the values the activation clamp changed in that step are counted. */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "tensor/tensor_core.h"
#include "train/loop/shadow.h"
#include "train/run/run.h"

/* The objective of network sh->net again, with the precision set to FP32 (by
 * gan_probe_shadow), on the step's inputs. The critic's: the same real batch and the
 * same fake one (the critic step does not differentiate the generator, so G(z) is an
 * input like the data; a 16-bit one is widened, exactly). The generator's: G of the
 * same z, since its forward is part of what is differentiated. The loss terms read the
 * stream from a copy of the step's offset, so they draw the same α and advance nothing. */
static gan_tensor *shadow_objective(void *arg, gan_ctx *ctx)
{
    struct gan_shadow *sh = arg;
    gan_session *s = sh->s;
    uint64_t offset = sh->loss_offset;
    struct gan_objective_sink sink = { .count = 0 };
    double scale = s->amp[sh->net].scale_used;
    gan_tensor *loss = NULL;
    s->inner.paused = 1;
    if (sh->net == GAN_NET_CRITIC) {
        gan_tensor *fake = sh->fake;
        if (fake && gan_tensor_dtype(fake) != GAN_F32) {
            gan_ctx_no_grad_push(ctx);
            fake = gan_cast(ctx, fake, GAN_F32);
            gan_ctx_no_grad_pop(ctx);
        }
        if (fake && sh->real)
            loss = gan_session_objective(s, GAN_LOSS_CRITIC, sh->iteration, scale, sh->real, fake,
                                         NULL, &offset, &sink);
    } else {
        gan_tensor *fake = gan_session_forward(s, GAN_NET_GENERATOR, sh->z);
        if (fake)
            loss = gan_session_objective(s, GAN_LOSS_GENERATOR, sh->iteration, scale, NULL, fake,
                                         NULL, &offset, &sink);
    }
    s->inner.paused = 0;
    return loss;
}

/* gan_amp_scaled_backward's hook: the network's FP32 shadow of the backward just run,
 * compared with it. A step starts on an empty tape (the last one ended with
 * gan_ctx_step_end), and only its objective records: its nodes are the whole tape. */
static gan_status compare(void *arg, struct gan_amp_net *a, int backward, gan_tensor *const *grads)
{
    struct gan_shadow *sh = arg;
    gan_probe *probe = sh->probe[sh->net];
    /* The step's forward passes are over (the FP32 shadow's own clamps nothing). */
    if (sh->counting) {
        gan_ctx_clamp_count_stop(sh->s->ctx, &sh->clamp_changed[sh->net], &sh->clamp_seen[sh->net]);
        sh->counting = 0;
        sh->counted[sh->net] = 1;
    }
    gan_probe_clear(probe);
    if (!backward)
        return GAN_OK;
    return gan_probe_shadow(probe, sh->s->net[sh->net], a->scale_used, grads, 0,
                            shadow_objective, sh);
}

void gan_shadow_begin(struct gan_shadow *sh, gan_session *s, enum gan_net_role role)
{
    /* A count left on by a step that failed before its comparison must not run on. */
    if (sh->counting)
        gan_ctx_clamp_count_stop(s->ctx, NULL, NULL);
    sh->counting = sh->due && sh->probe[role] && s->set.clamp > 0
                   && gan_ctx_clamp_count_start(s->ctx, gan_net_role_names[role]) == GAN_OK;
}

void gan_shadow_step(struct gan_shadow *sh, gan_session *s, enum gan_net_role role,
                     int64_t iteration, uint64_t loss_offset, gan_tensor *real, gan_tensor *fake,
                     gan_tensor *z)
{
    sh->s = s;
    sh->net = role;
    sh->iteration = iteration;
    sh->real = real;
    sh->fake = fake;
    sh->z = z;
    sh->loss_offset = loss_offset;
    struct gan_amp_net *a = &s->amp[role];
    if (sh->due && sh->probe[role])
        a->hook = (struct gan_amp_hook){ compare, sh };
    else
        memset(&a->hook, 0, sizeof a->hook);
}

static void log_line(void *arg, const char *text)
{
    gan_log_write(arg, GAN_LOG_INFO, "%s", text);
}

gan_status gan_shadow_write(struct gan_shadow *sh, int64_t iteration, const struct gan_log *log,
                            struct gan_error *err)
{
    gan_log_write(log, GAN_LOG_INFO,
                  "true underflow at iteration %lld (each network's last step: values zero in 16 bit but not in its FP32 shadow):",
                  (long long)iteration);
    for (int i = GAN_NET_CRITIC; i >= 0; i--) {
        gan_probe_report(sh->probe[i], gan_net_role_names[i], 5, log_line, (void *)log);
        gan_status st = gan_probe_write_csv(sh->probe[i], sh->csv, iteration,
                                            gan_net_role_names[i], err);
        if (st != GAN_OK)
            return st;
    }
    if (sh->s && sh->s->set.clamp > 0 && (sh->counted[0] || sh->counted[1])) {
        char part[GAN_NET_ROLES][96];
        for (int i = 0; i < GAN_NET_ROLES; i++)
            snprintf(part[i], sizeof part[i], sh->counted[i] ? "%s %llu of %llu" : "%s not counted",
                     gan_net_role_names[i], (unsigned long long)sh->clamp_changed[i],
                     (unsigned long long)sh->clamp_seen[i]);
        gan_log_write(log, GAN_LOG_INFO,
                      "activation clamp at iteration %lld (values beyond +-%g moved to it, in each network's own layers during its last step): %s, %s",
                      (long long)iteration, sh->s->set.clamp, part[GAN_NET_CRITIC], part[GAN_NET_GENERATOR]);
    }
    for (int i = 0; i < GAN_NET_ROLES; i++)
        sh->counted[i] = 0;
    return GAN_OK;
}

/* Level 2 in FP32 has nothing to compare: it says so and makes nothing. */
gan_status gan_shadow_open(struct gan_shadow *sh, const gan_session *s, long long debug_level,
                           const char *run_dir, int64_t resume_after, const struct gan_log *log,
                           struct gan_error *err)
{
    if (debug_level < 2)
        return GAN_OK;
    if (s->set.precision == GAN_F32) {
        gan_log_write(log, GAN_LOG_INFO,
                      "run.debug_level 2 compares 16-bit backward passes with FP32 ones; this run computes in FP32, so it shows level 1's statistics only");
        return GAN_OK;
    }
    for (int i = 0; i < GAN_NET_ROLES; i++)
        if (gan_probe_new(&sh->probe[i]) != GAN_OK)
            return gan_error_nomem(err, "setting up debug level 2");
    char *path = gan_run_path(run_dir, GAN_RUN_GRAD_UNDERFLOW);
    if (!path)
        return gan_error_nomem(err, "setting up debug level 2");
    gan_status st = gan_metrics_csv_open(path, gan_probe_csv_columns, GAN_PROBE_CSV_COLUMNS,
                                         resume_after >= 0 && access(path, F_OK) == 0 ? resume_after : -1,
                                         &sh->csv, err);
    free(path);
    return st;
}

void gan_shadow_free(struct gan_shadow *sh)
{
    gan_metrics_csv_close(sh->csv, NULL);
    for (int i = 0; i < GAN_NET_ROLES; i++)
        gan_probe_free(sh->probe[i]);
}
