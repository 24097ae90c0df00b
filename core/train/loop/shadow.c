/* SPDX-License-Identifier: MIT */
/* shadow.c — the trainer's debug level 2: at each metrics row, each network's last step is
 * repeated in FP32 (underflow_probe.h) and compared, op by op, with its 16-bit backward. */
#include "config.h"

#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "tensor/tensor_core.h"
#include "train/loop/trainer_internal.h"

/* The objective of network t->shadow.net again, with the precision set to FP32 (by
 * gan_probe_shadow), on the step's inputs. The critic's: the same real batch and the
 * same fake one (the critic step does not differentiate the generator, so G(z) is an
 * input like the data; a 16-bit one is widened, exactly). The generator's: G of the
 * same z, since its forward is part of what is differentiated. The loss terms read the
 * stream from a copy of the step's offset, so they draw the same α and advance nothing. */
static gan_tensor *shadow_objective(void *arg, gan_ctx *ctx)
{
    gan_trainer *t = arg;
    gan_session *s = t->s;
    struct gan_trainer_shadow *sh = &t->shadow;
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
            loss = gan_session_objective(s, GAN_LOSS_CRITIC, t->iteration, scale, sh->real, fake,
                                         NULL, &offset, &sink);
    } else {
        gan_tensor *fake = gan_session_forward(s, GAN_NET_GENERATOR, sh->z);
        if (fake)
            loss = gan_session_objective(s, GAN_LOSS_GENERATOR, t->iteration, scale, NULL, fake,
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
    gan_trainer *t = arg;
    gan_probe *probe = t->shadow.probe[t->shadow.net];
    gan_probe_clear(probe);
    if (!backward)
        return GAN_OK;
    return gan_probe_shadow(probe, t->s->net[t->shadow.net], a->scale_used, grads, 0,
                            shadow_objective, t);
}

void gan_trainer_shadow_step(gan_trainer *t, enum gan_net_role role, gan_tensor *real,
                             gan_tensor *fake, gan_tensor *z)
{
    struct gan_trainer_shadow *sh = &t->shadow;
    sh->net = role;
    sh->real = real;
    sh->fake = fake;
    sh->z = z;
    sh->loss_offset = t->batch.loss_offset;
    struct gan_amp_net *a = &t->s->amp[role];
    if (sh->due && sh->probe[role])
        a->hook = (struct gan_amp_hook){ compare, t };
    else
        memset(&a->hook, 0, sizeof a->hook);
}

static void log_line(void *arg, const char *text)
{
    gan_trainer *t = arg;
    gan_log_write(t->log, GAN_LOG_INFO, "%s", text);
}

gan_status gan_trainer_write_underflow(gan_trainer *t, struct gan_error *err)
{
    gan_log_write(t->log, GAN_LOG_INFO,
                  "true underflow at iteration %lld (each network's last step: values zero in 16 bit but not in its FP32 shadow):",
                  (long long)t->iteration);
    for (int i = GAN_NET_CRITIC; i >= 0; i--) {
        gan_probe_report(t->shadow.probe[i], gan_net_role_names[i], 5, log_line, t);
        gan_status st = gan_probe_write_csv(t->shadow.probe[i], t->shadow.csv, t->iteration,
                                            gan_net_role_names[i], err);
        if (st != GAN_OK)
            return st;
    }
    return GAN_OK;
}

/* At debug level 2 in 16-bit precision: the probes and grad_underflow.csv (new, or
 * continued by a resumed run that had it). Level 2 in FP32 has nothing to compare. */
gan_status gan_trainer_set_up_probes(gan_trainer *t, int64_t resume_after, struct gan_error *err)
{
    if (t->set.debug_level < 2)
        return GAN_OK;
    if (t->s->set.precision == GAN_F32) {
        gan_log_write(t->log, GAN_LOG_INFO,
                      "run.debug_level 2 compares 16-bit backward passes with FP32 ones; this run computes in FP32, so it shows level 1's statistics only");
        return GAN_OK;
    }
    for (int i = 0; i < GAN_NET_ROLES; i++)
        if (gan_probe_new(&t->shadow.probe[i]) != GAN_OK)
            return gan_trainer_nomem(err);
    char *path = gan_run_path(t->folder.run_dir, GAN_RUN_GRAD_UNDERFLOW);
    if (!path)
        return gan_trainer_nomem(err);
    gan_status st = gan_metrics_csv_open(path, gan_probe_csv_columns, GAN_PROBE_CSV_COLUMNS,
                                         resume_after >= 0 && access(path, F_OK) == 0 ? resume_after : -1,
                                         &t->shadow.csv, err);
    free(path);
    return st;
}

void gan_trainer_shadow_free(gan_trainer *t)
{
    gan_metrics_csv_close(t->shadow.csv, NULL);
    for (int i = 0; i < GAN_NET_ROLES; i++)
        gan_probe_free(t->shadow.probe[i]);
}
