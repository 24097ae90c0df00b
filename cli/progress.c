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

#include "progress.h"

/* Fields in the order the line shows them. */
enum field {
    F_ITER, F_RATE, F_ETA, F_CRITIC, F_GEN, F_W, F_CRITIC_SCALE, F_GEN_SCALE, F_QUALITY,
    F_COUNT
};

/* Each field's rank: 0 is kept longest. The loss scales and skips are the line's reason
 * to exist in mixed precision, so they outrank everything but the iteration. */
static const int rank[F_COUNT] = {
    [F_ITER] = 0, [F_CRITIC_SCALE] = 1, [F_GEN_SCALE] = 2, [F_CRITIC] = 3, [F_ETA] = 4,
    [F_W] = 5, [F_GEN] = 6, [F_QUALITY] = 7, [F_RATE] = 8,
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

/* "2^13", "2^-14", "2^9.97", "0", "inf". */
static void scale_text(char *buf, size_t size, double scale)
{
    if (!(scale > 0) || !isfinite(scale)) {
        snprintf(buf, size, "%g", scale);
        return;
    }
    double k = log2(scale);
    if (k == floor(k))
        snprintf(buf, size, "2^%.0f", k);
    else
        snprintf(buf, size, "2^%.2f", k);
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
        scale_text(c, sizeof c, p->critic_scale);
        scale_text(g, sizeof g, p->generator_scale);
        field(text, F_CRITIC_SCALE, "C %s skip %lld", c, (long long)p->critic_skipped);
        field(text, F_GEN_SCALE, "G %s skip %lld", g, (long long)p->generator_skipped);
    }
    if (p->has_quality && p->quality_count) {
        size_t used = 0;
        for (size_t i = 0; p->quality_values && i < p->quality_count && used < FIELD_SIZE; i++) {
            int n = snprintf(text[F_QUALITY] + used, FIELD_SIZE - used, "%s%s %.4g",
                             i ? SEPARATOR : "", p->quality_values[i].name,
                             p->quality_values[i].value);
            used = n > 0 && (size_t)n < FIELD_SIZE - used ? used + (size_t)n : FIELD_SIZE;
        }
    } else if (p->has_quality) {
        const struct gan_toy_quality *q = &p->quality;
        if (q->has_modes)
            field(text, F_QUALITY, "modes %ld/%zu" SEPARATOR "hq %.1f%%" SEPARATOR "sW1 %.4g",
                  q->modes_covered, q->modes_total, q->high_quality_pct, q->sliced_w1);
        else
            field(text, F_QUALITY, "sW1 %.4g", q->sliced_w1);
    }
}

void gan_progress_line(char *buf, size_t size, const struct gan_progress *p, unsigned width)
{
    char text[F_COUNT][FIELD_SIZE];
    make_fields(text, p);
    int shown[F_COUNT];
    size_t length = 0, count = 0;
    for (int f = 0; f < F_COUNT; f++) {
        shown[f] = text[f][0] != '\0';
        if (shown[f]) {
            length += strlen(text[f]) + (count ? strlen(SEPARATOR) : 0);
            count++;
        }
    }
    size_t limit = width > 0 ? width - 1 : (size_t)-1;
    /* Leave out the lowest-ranked field until the line fits or only the iteration is left. */
    while (length > limit && count > 1) {
        int worst = -1;
        for (int f = 0; f < F_COUNT; f++)
            if (shown[f] && rank[f] > 0 && (worst < 0 || rank[f] > rank[worst]))
                worst = f;
        shown[worst] = 0;
        length -= strlen(text[worst]) + strlen(SEPARATOR);
        count--;
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
    if (used > limit)
        buf[limit] = '\0';
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
