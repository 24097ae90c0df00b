/* SPDX-License-Identifier: MIT */
/* progress.c — the progress line, fitted to the terminal: each field has a place in the
 * line and a rank; the lowest-ranked fields go first when the line is too long. */
#include "config.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include "amp/scaling.h"
#include "progress.h"

/* Fields in the order the line shows them. */
enum field {
    F_ITER, F_RATE, F_ETA, F_CRITIC, F_GEN, F_W, F_CRITIC_SCALE, F_GEN_SCALE, F_FP8,
    F_QUALITY0, F_QUALITY1, F_QUALITY2,   /* toys: modes, hq, sW1; images: sW1, Fréchet */
    F_COUNT
};

/* The fields from the one kept longest to the first left out. The loss scales and skips
 * are the line's reason to exist in mixed precision, so they come right after the
 * iteration. */
static const enum field by_rank[F_COUNT] = {
    F_ITER, F_CRITIC_SCALE, F_GEN_SCALE, F_FP8, F_CRITIC, F_ETA, F_W, F_GEN,
    F_QUALITY2, F_QUALITY0, F_QUALITY1, F_RATE,
};

#define FIELD_SIZE 160
#define SEPARATOR "  "

static void field(char (*text)[FIELD_SIZE], enum field f, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static void field(char (*text)[FIELD_SIZE], enum field f, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(text[f], FIELD_SIZE, fmt, ap);
    va_end(ap);
}

/* Formats every field p has; an empty text is a field it lacks. */
static void make_fields(char (*text)[FIELD_SIZE], const struct gan_progress *p)
{
    memset(text, 0, F_COUNT * sizeof *text);
    field(text, F_ITER, "iter %lld/%lld", (long long)p->iteration, (long long)p->total);
    if (p->it_per_s > 0) {
        char eta[32];
        gan_format_duration(eta, sizeof eta, (double)(p->total - p->iteration) / p->it_per_s);
        field(text, F_RATE, "%.1f it/s", p->it_per_s);
        field(text, F_ETA, "ETA %s", eta);
    }
    if (!isnan(p->critic_loss))
        field(text, F_CRITIC, "critic %.4g", p->critic_loss);
    if (!isnan(p->generator_loss))
        field(text, F_GEN, "gen %.4g", p->generator_loss);
    if (!isnan(p->w_distance))
        field(text, F_W, "W %.4g", p->w_distance);
    if (p->scaled) {
        char c[32], g[32];
        gan_amp_scale_text(c, sizeof c, p->critic_scale);
        gan_amp_scale_text(g, sizeof g, p->generator_scale);
        field(text, F_CRITIC_SCALE, "C %s skip %lld", c, (long long)p->critic_skipped);
        field(text, F_GEN_SCALE, "G %s skip %lld", g, (long long)p->generator_skipped);
    }
    if (p->fp8) {
        char lo[32], hi[32];
        gan_amp_scale_text(lo, sizeof lo, p->fp8_scale_min);
        gan_amp_scale_text(hi, sizeof hi, p->fp8_scale_max);
        field(text, F_FP8, "fp8 %s..%s", lo, hi);
    }
    if (p->has_quality && p->quality_count) {
        /* Image runs: the last value (the Fréchet distance) is ranked like the toys' sW1. */
        static const enum field slot[2] = { F_QUALITY0, F_QUALITY2 };
        for (size_t i = 0; p->quality_values && i < p->quality_count && i < 2; i++)
            field(text, slot[i], "%s %.4g", p->quality_values[i].name, p->quality_values[i].value);
    } else if (p->has_quality) {
        const struct gan_toy_quality *q = &p->quality;
        if (q->has_modes) {
            field(text, F_QUALITY0, "modes %ld/%zu", q->modes_covered, q->modes_total);
            field(text, F_QUALITY1, "hq %.1f%%", q->high_quality_pct);
        }
        field(text, F_QUALITY2, "sW1 %.4g", q->sliced_w1);
    }
}

void gan_progress_line(char *buf, size_t size, const struct gan_progress *p, unsigned width)
{
    char text[F_COUNT][FIELD_SIZE];
    make_fields(text, p);
    size_t limit = width > 0 ? width - 1 : (size_t)-1;
    /* Fields by rank, each where it still fits: a long one left out does not keep a
     * shorter one of lower rank from the room that is left. */
    int shown[F_COUNT] = { 0 };
    size_t length = 0;
    for (int r = 0; r < F_COUNT; r++) {
        enum field f = by_rank[r];
        if (!text[f][0])
            continue;
        size_t more = strlen(text[f]) + (length ? strlen(SEPARATOR) : 0);
        if (f == F_ITER || length + more <= limit) {
            shown[f] = 1;
            length += more;
        }
    }
    size_t used = 0;
    buf[0] = '\0';
    for (int f = 0; f < F_COUNT; f++) {
        if (!shown[f])
            continue;
        int n = snprintf(buf + used, size - used, "%s%s", used ? SEPARATOR : "", text[f]);
        if (n < 0 || (size_t)n >= size - used) {
            used = size - 1;
            break;
        }
        used += (size_t)n;
    }
    /* Only the iteration is left and it is too long: cut, without a dangling space. */
    if (used > limit) {
        buf[limit] = '\0';
        while (limit > 0 && buf[limit - 1] == ' ')
            buf[--limit] = '\0';
    }
}

unsigned gan_terminal_width(int fd)
{
    struct winsize ws;
    if (ioctl(fd, TIOCGWINSZ, &ws) == 0 && ws.ws_col > 0)
        return ws.ws_col;
    const char *columns = getenv("COLUMNS");
    if (columns && *columns) {
        char *end;
        long n = strtol(columns, &end, 10);
        if (*end == '\0' && n > 0 && n < 100000)
            return (unsigned)n;
    }
    return GAN_PROGRESS_DEFAULT_WIDTH;
}
