/* SPDX-License-Identifier: MIT */
/* fuzz_checkpoint_full.c — a whole checkpoint as `ganctl sample`, `eval`, `export` and
 * `grads` open it: the settings saved in it read back (gan_saved_config_open, with the
 * command line's changes: one allowed, backend.threads, and on every other input one
 * refused), then its tensors and counters loaded into two tiny networks (fuzz_nets.c),
 * all from one scratch file. Whatever the file says, the load must not crash, leak or
 * wait, and must open no file but the input: every other open is refused and counted
 * while it runs (fuzz_opens.c), so a saved @include cannot read, or block on, anything.
 *
 * FUZZ_FORBID_OUTSIDE_OPENS makes such an attempt itself a failure: saved settings that
 * hold @include are refused before they are parsed, so an include that gets as far as
 * libconfig is a finding. */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "train/state/saved_config.h"
#include "fuzz_nets.h"
#include "fuzz_opens.h"
#include "fuzz.h"

#ifndef FUZZ_FORBID_OUTSIDE_OPENS
#define FUZZ_FORBID_OUTSIDE_OPENS 1
#endif

static struct fuzz_nets nets;
static int nets_ready;

static void close_nets(void)
{
    fuzz_nets_close(&nets);
}

static void check_message(const struct gan_error *err, const char *what)
{
    if (!err->message[0])
        fuzz_fail("%s refused without a message", what);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (!nets_ready) {
        fuzz_nets_open(&nets);
        atexit(close_nets);
        nets_ready = 1;
    }
    const char *path = fuzz_scratch_file(data, size);
    /* One change the commands allow and, on odd-sized inputs, one they refuse. */
    const struct gan_saved_setting settings[2] = {
        { "backend.threads=1", NULL },
        { "run.iterations=1", NULL },
    };
    size_t count = size % 2 ? 2 : 1;

    fuzz_opens_begin(path);
    gan_config *cfg = NULL;
    char *text = NULL;
    struct gan_error err;
    gan_error_clear(&err);
    gan_status cst = gan_saved_config_open(path, settings, count, "fuzzing", &cfg, &text, &err);
    if (cst != GAN_OK)
        check_message(&err, "the saved configuration");
    else if (count == 2)
        fuzz_fail("--set run.iterations=1 was accepted on a checkpoint's configuration");
    else if (!text)
        fuzz_fail("the saved configuration was read, but its text is not given back");
    gan_config_free(cfg);
    free(text);

    struct gan_checkpoint_state state;
    struct gan_fp8_state fp8;
    memset(&state, 0, sizeof state);
    memset(&fp8, 0, sizeof fp8);
    state.fp8 = &fp8;
    gan_error_clear(&err);
    gan_status lst = gan_checkpoint_load(path, nets.cn, 2, &state, &err);
    gan_fp8_state_clear(&fp8);
    if (lst != GAN_OK)
        check_message(&err, "the checkpoint");
    else if (state.config_text)
        fuzz_fail("config_text is set; checkpoint.h says a load leaves it NULL");
    char first[4096];
    size_t outside = fuzz_opens_end(first, sizeof first);
    if (FUZZ_FORBID_OUTSIDE_OPENS && outside)
        fuzz_fail("opened %zu files outside the input, the first %s", outside, first);
    return 0;
}
