/* SPDX-License-Identifier: MIT */
/* curves.c — draws a run's metrics.csv (read by curves_table.c) as curves.png with cairo:
 * six panels of series against iteration, axes with ticks and labels, legends, markers for
 * overflows, skips and non-finite values; written through png_write.c (atomically). */
#include "config.h"

#include <cairo.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "io/plot/curves.h"
#include "io/plot/curves_table.h"
#include "io/image/png_write.h"

/* ------------------------------------------------------------------ drawing */

struct rgb {
    double r, g, b;
};

static const struct rgb CRITIC = { 0.12, 0.42, 0.75 }, GENERATOR = { 0.85, 0.40, 0.05 },
                        THIRD = { 0.20, 0.60, 0.25 }, FOURTH = { 0.50, 0.30, 0.65 },
                        BAD = { 0.85, 0.05, 0.10 }, INK = { 0.15, 0.15, 0.15 },
                        GRID = { 0.88, 0.88, 0.88 };

enum axis { AXIS_LINEAR, AXIS_LOG10, AXIS_LOG2, AXIS_SYMLOG };

struct series {
    const char *column;
    const char *label;
    struct rgb colour;
    int dashed;
};

struct panel {
    const char *title, *ylabel;
    struct series s[4];
    enum axis axis;               /* AXIS_LINEAR: chosen from the data (see curves.h) */
    int auto_axis;                /* pick linear, log10 or symlog from the values */
    int scale_panel;              /* the loss-scale panel's markers */
    int cumulative;               /* label each series' last value */
    double ymin_fixed, ymax_fixed;  /* both 0: from the data */
};

struct frame {
    double x, y, w, h;            /* the plot area */
    double xmin, xmax, ymin, ymax;  /* in axis units (after the transform) */
    enum axis axis;
};

static void colour(cairo_t *cr, struct rgb c)
{
    cairo_set_source_rgb(cr, c.r, c.g, c.b);
}

static double transform(enum axis a, double v)
{
    switch (a) {
    case AXIS_LOG10: return v > 0 ? log10(v) : -INFINITY;
    case AXIS_LOG2: return v > 0 ? log2(v) : -INFINITY;
    case AXIS_SYMLOG: return copysign(log10(1.0 + fabs(v)), v);
    default: return v;
    }
}

static double px(const struct frame *f, double x)
{
    return f->x + (x - f->xmin) / (f->xmax - f->xmin) * f->w;
}

static double py(const struct frame *f, double y)
{
    return f->y + f->h - (y - f->ymin) / (f->ymax - f->ymin) * f->h;
}

static void text_at(cairo_t *cr, double x, double y, double size, const char *s, double align_x,
                    double align_y)
{
    cairo_set_font_size(cr, size);
    cairo_text_extents_t e;
    cairo_text_extents(cr, s, &e);
    cairo_move_to(cr, x - align_x * e.width - e.x_bearing, y - align_y * e.height - e.y_bearing);
    cairo_show_text(cr, s);
}

/* A "nice" step (1, 2 or 5 × 10^k) for about `want` ticks over `span`. */
static double nice_step(double span, int want)
{
    double raw = span / want, p = pow(10, floor(log10(raw))), m = raw / p;
    return (m < 1.5 ? 1 : m < 3.5 ? 2 : m < 7.5 ? 5 : 10) * p;
}

static void tick_label(char *buf, size_t size, enum axis a, double v, double step)
{
    if (a == AXIS_LOG2) {
        snprintf(buf, size, "2^%g", v);
    } else if (a == AXIS_LOG10) {
        snprintf(buf, size, "1e%g", v);
    } else if (a == AXIS_SYMLOG) {
        if (fabs(v) < 1e-9)
            snprintf(buf, size, "0");
        else
            snprintf(buf, size, "%s1e%g", v < 0 ? "-" : "", fabs(v));
    } else {
        if (fabs(v) < step * 1e-6)
            v = 0;
        if (fabs(v) >= 1e5 || (fabs(v) < 1e-3 && v != 0))
            snprintf(buf, size, "%.1e", v);
        else
            snprintf(buf, size, "%g", v);
    }
}

static void draw_axes(cairo_t *cr, const struct frame *f, const char *xlabel, const char *ylabel)
{
    char label[48];
    cairo_set_line_width(cr, 1);
    /* y ticks: integer exponents on log axes, nice steps on linear ones */
    double span = f->ymax - f->ymin;
    /* log axes: whole exponents, in steps of 1, 2, 5, 10, ... */
    double step = f->axis == AXIS_LINEAR ? nice_step(span, 5) : fmax(1, nice_step(span, 6));
    for (double v = ceil(f->ymin / step) * step; v <= f->ymax + step * 1e-9; v += step) {
        double y = py(f, v);
        colour(cr, GRID);
        cairo_move_to(cr, f->x, y);
        cairo_line_to(cr, f->x + f->w, y);
        cairo_stroke(cr);
        colour(cr, INK);
        tick_label(label, sizeof label, f->axis, v, step);
        text_at(cr, f->x - 6, y, 11, label, 1.0, 0.5);
    }
    double xstep = nice_step(f->xmax - f->xmin, 6);
    for (double v = ceil(f->xmin / xstep) * xstep; v <= f->xmax + xstep * 1e-9; v += xstep) {
        double x = px(f, v);
        colour(cr, GRID);
        cairo_move_to(cr, x, f->y);
        cairo_line_to(cr, x, f->y + f->h);
        cairo_stroke(cr);
        colour(cr, INK);
        snprintf(label, sizeof label, "%g", v);
        text_at(cr, x, f->y + f->h + 5, 11, label, 0.5, 0.0);
    }
    colour(cr, INK);
    cairo_rectangle(cr, f->x, f->y, f->w, f->h);
    cairo_stroke(cr);
    text_at(cr, f->x + f->w / 2, f->y + f->h + 22, 12, xlabel, 0.5, 0.0);
    cairo_save(cr);
    cairo_translate(cr, f->x - 58, f->y + f->h / 2);
    cairo_rotate(cr, -M_PI / 2);
    text_at(cr, 0, 0, 12, ylabel, 0.5, 0.5);
    cairo_restore(cr);
}

static void marker(cairo_t *cr, double x, double y, int kind, struct rgb c)
{
    colour(cr, c);
    switch (kind) {
    case 0:   /* a cross: a non-finite value */
        cairo_set_line_width(cr, 2);
        cairo_move_to(cr, x - 4, y - 4);
        cairo_line_to(cr, x + 4, y + 4);
        cairo_move_to(cr, x + 4, y - 4);
        cairo_line_to(cr, x - 4, y + 4);
        cairo_stroke(cr);
        break;
    case 1:   /* a triangle: a gradient overflow */
        cairo_move_to(cr, x, y - 5);
        cairo_line_to(cr, x + 5, y + 4);
        cairo_line_to(cr, x - 5, y + 4);
        cairo_close_path(cr);
        cairo_fill(cr);
        break;
    case 2:   /* a square: a forward overflow */
        cairo_rectangle(cr, x - 4, y - 4, 8, 8);
        cairo_fill(cr);
        break;
    default:  /* a disc: a scale of 0 */
        cairo_arc(cr, x, y, 4, 0, 2 * M_PI);
        cairo_fill(cr);
        break;
    }
}

/* The legend: one row per entry in the panel's top-left corner, on white. */
struct legend_entry {
    const char *label;
    struct rgb colour;
    int dashed;
    int marker;                   /* -1: a line; else a marker kind */
};

/* The drawn points of the series in `cols` that fall in the box (x0, y0, w, h). */
static size_t points_in(const struct gan_curves_table *t, const struct frame *f, const int *cols,
                        int n, double x0, double y0, double w, double h)
{
    size_t count = 0;
    for (int i = 0; i < n; i++)
        for (size_t r = 0; cols[i] >= 0 && r < t->rows; r++) {
            double v = transform(f->axis, gan_curves_at(t, r, cols[i]));
            double x = px(f, gan_curves_at(t, r, 0)), y = isfinite(v) ? py(f, v) : f->y + f->h;
            count += x >= x0 && x <= x0 + w && y >= y0 && y <= y0 + h;
        }
    return count;
}

/* In the corner of the plot area that hides the fewest points. */
static void draw_legend(cairo_t *cr, const struct gan_curves_table *t, const struct frame *f,
                        const int *cols, int n_cols, const struct legend_entry *e, size_t n)
{
    if (!n)
        return;
    double w = 0;
    cairo_set_font_size(cr, 11);
    for (size_t i = 0; i < n; i++) {
        cairo_text_extents_t x;
        cairo_text_extents(cr, e[i].label, &x);
        w = fmax(w, x.x_advance);
    }
    double row = 15, bw = w + 40, bh = row * (double)n + 6;
    double x0 = f->x + 8, y0 = f->y + 8;
    size_t best = SIZE_MAX;
    for (int corner = 0; corner < 4; corner++) {
        double cx = corner & 1 ? f->x + f->w - 8 - bw : f->x + 8;
        double cy = corner & 2 ? f->y + f->h - 8 - bh : f->y + 8;
        size_t hidden = points_in(t, f, cols, n_cols, cx, cy, bw, bh);
        if (hidden < best) {
            best = hidden;
            x0 = cx;
            y0 = cy;
        }
    }
    cairo_set_source_rgba(cr, 1, 1, 1, 0.85);
    cairo_rectangle(cr, x0, y0, bw, bh);
    cairo_fill(cr);
    for (size_t i = 0; i < n; i++) {
        double y = y0 + 3 + row * ((double)i + 0.5);
        if (e[i].marker >= 0) {
            marker(cr, x0 + 14, y, e[i].marker, e[i].colour);
        } else {
            colour(cr, e[i].colour);
            cairo_set_line_width(cr, 2);
            double dash[] = { 5, 3 };
            cairo_set_dash(cr, dash, e[i].dashed ? 2 : 0, 0);
            cairo_move_to(cr, x0 + 4, y);
            cairo_line_to(cr, x0 + 24, y);
            cairo_stroke(cr);
            cairo_set_dash(cr, NULL, 0, 0);
        }
        colour(cr, INK);
        text_at(cr, x0 + 32, y, 11, e[i].label, 0.0, 0.5);
    }
}

/* The iteration range of the whole table. */
static void x_range(const struct gan_curves_table *t, double *lo, double *hi)
{
    *lo = 0;
    *hi = 1;
    if (t->rows) {
        *hi = gan_curves_at(t, t->rows - 1, 0);
        if (!(*hi > *lo))
            *hi = *lo + 1;
    }
}

/* Words where the story is: on the loss-scale panel the iteration from which each
 * network's scale is 0; on a cumulative panel (the skipped steps) each series' last
 * value at its end. */
static void annotate(cairo_t *cr, const struct gan_curves_table *t, const struct frame *f,
                     const struct panel *p, const int *cols)
{
    char text[96];
    double line = 0;
    for (int i = 0; i < 4; i++) {
        if (cols[i] < 0 || t->rows == 0)
            continue;
        const struct series *s = &p->s[i];
        if (p->scale_panel) {
            size_t r = 0;
            while (r < t->rows && gan_curves_at(t, r, cols[i]) != 0)
                r++;
            if (r == t->rows)
                continue;
            /* the first row of the run of zeros that lasts to the end */
            size_t from = r;
            for (; r < t->rows; r++)
                if (gan_curves_at(t, r, cols[i]) != 0)
                    from = r + 1;
            if (from >= t->rows)
                continue;
            snprintf(text, sizeof text, "%s 0 from iteration %.0f", s->label,
                     gan_curves_at(t, from, 0));
            cairo_select_font_face(cr, "sans-serif", CAIRO_FONT_SLANT_NORMAL, CAIRO_FONT_WEIGHT_BOLD);
            cairo_set_font_size(cr, 12);
            cairo_text_extents_t e;
            cairo_text_extents(cr, text, &e);
            double x = fmin(px(f, gan_curves_at(t, from, 0)) + 6, f->x + f->w - e.x_advance - 8);
            double y = py(f, f->ymin) - 36 - line;
            cairo_set_source_rgba(cr, 1, 1, 1, 0.9);
            cairo_rectangle(cr, x - 3, y - 15, e.x_advance + 6, 19);
            cairo_fill(cr);
            colour(cr, s->colour);
            text_at(cr, x, y, 12, text, 0.0, 1.0);
            cairo_select_font_face(cr, "sans-serif", CAIRO_FONT_SLANT_NORMAL, CAIRO_FONT_WEIGHT_NORMAL);
            line += 21;
        } else if (p->cumulative) {
            double v = gan_curves_at(t, t->rows - 1, cols[i]);
            if (!isfinite(v) || v == 0)
                continue;
            snprintf(text, sizeof text, "%.0f", v);
            colour(cr, s->colour);
            text_at(cr, f->x + f->w - 4, py(f, transform(f->axis, v)) - 3, 12, text, 1.0, 1.0);
        }
    }
}

static void draw_panel(cairo_t *cr, const struct gan_curves_table *t, const struct panel *p,
                       double x, double y, double w, double h)
{
    struct frame f = { x + 72, y + 28, w - 90, h - 75, 0, 1, 0, 1, p->axis };
    x_range(t, &f.xmin, &f.xmax);
    colour(cr, INK);
    cairo_select_font_face(cr, "sans-serif", CAIRO_FONT_SLANT_NORMAL, CAIRO_FONT_WEIGHT_BOLD);
    text_at(cr, f.x + f.w / 2, y + 6, 14, p->title, 0.5, 0.0);
    cairo_select_font_face(cr, "sans-serif", CAIRO_FONT_SLANT_NORMAL, CAIRO_FONT_WEIGHT_NORMAL);

    int cols[4];
    size_t present = 0;
    double lo = INFINITY, hi = -INFINITY, absmax = 0, absmin = INFINITY;
    int any_positive_only = 1;
    for (int i = 0; i < 4; i++) {
        cols[i] = p->s[i].column ? gan_curves_column(t, p->s[i].column) : -1;
        if (cols[i] < 0)
            continue;
        present++;
        for (size_t r = 0; r < t->rows; r++) {
            double v = gan_curves_at(t, r, cols[i]);
            if (!isfinite(v))
                continue;
            lo = fmin(lo, v);
            hi = fmax(hi, v);
            absmax = fmax(absmax, fabs(v));
            if (v != 0)
                absmin = fmin(absmin, fabs(v));
            if (v <= 0)
                any_positive_only = 0;
        }
    }
    if (p->auto_axis && lo <= hi) {
        if (any_positive_only && hi / lo > 100)
            f.axis = AXIS_LOG10;
        else if (absmax > 1000 && absmax / fmax(absmin, 1e-3) > 1000)
            f.axis = AXIS_SYMLOG;
        else
            f.axis = AXIS_LINEAR;
    }
    if (lo <= hi) {
        /* the axis range in transformed units, over the values the axis can show */
        double tlo = INFINITY, thi = -INFINITY;
        for (int i = 0; i < 4; i++)
            for (size_t r = 0; cols[i] >= 0 && r < t->rows; r++) {
                double v = transform(f.axis, gan_curves_at(t, r, cols[i]));
                if (isfinite(v)) {
                    tlo = fmin(tlo, v);
                    thi = fmax(thi, v);
                }
            }
        if (!(tlo <= thi))
            tlo = 0, thi = 1;
        if (p->ymin_fixed != 0 || p->ymax_fixed != 0) {
            tlo = fmin(tlo, p->ymin_fixed);
            thi = fmax(thi, p->ymax_fixed);
        }
        double pad = thi > tlo ? 0.06 * (thi - tlo) : fmax(1, fabs(thi) * 0.1);
        /* room below for a scale of 0 drawn on the floor */
        f.ymin = tlo - pad - (p->scale_panel ? 2 * pad : 0);
        f.ymax = thi + pad;
        if (f.axis != AXIS_LINEAR) {
            f.ymin = floor(f.ymin);
            f.ymax = ceil(f.ymax);
        }
    }
    cairo_set_source_rgb(cr, 1, 1, 1);
    cairo_rectangle(cr, f.x, f.y, f.w, f.h);
    cairo_fill(cr);

    struct legend_entry legend[10];
    size_t n_legend = 0;
    /* Skips: the rows where a network's skipped count rose, shaded in its colour. */
    if (p->scale_panel) {
        static const char *const skip_cols[2] = { "critic_skipped", "generator_skipped" };
        for (int k = 0; k < 2; k++) {
            int c = gan_curves_column(t, skip_cols[k]);
            struct rgb rc = k ? GENERATOR : CRITIC;
            int shaded = 0;
            for (size_t r = 1; c >= 0 && r < t->rows; r++)
                if (gan_curves_at(t, r, c) > gan_curves_at(t, r - 1, c)) {
                    double x0 = px(&f, gan_curves_at(t, r - 1, 0));
                    double x1 = px(&f, gan_curves_at(t, r, 0));
                    cairo_set_source_rgba(cr, rc.r, rc.g, rc.b, 0.13);
                    double band = f.h / 2;
                    cairo_rectangle(cr, x0, f.y + (k ? band : 0), x1 - x0, band);
                    cairo_fill(cr);
                    shaded = 1;
                }
            if (shaded && n_legend < 10) {
                static const char *const names[2] = { "critic skipped steps (shaded)",
                                                      "generator skipped steps (shaded)" };
                legend[n_legend++] = (struct legend_entry){ names[k], (struct rgb){ rc.r * 0.4 + 0.6, rc.g * 0.4 + 0.6, rc.b * 0.4 + 0.6 }, 0, 2 };
            }
        }
    }
    draw_axes(cr, &f, "iteration", p->ylabel);
    if (!present || t->rows == 0) {
        colour(cr, INK);
        text_at(cr, f.x + f.w / 2, f.y + f.h / 2, 13, "no data", 0.5, 0.5);
        return;
    }
    int nonfinite = 0, zero_scale = 0, overflow_seen[3] = { 0, 0, 0 };
    cairo_save(cr);
    /* A margin on every side: the markers of the first and last rows (the final
     * evaluation's dots) sit on the frame and are drawn whole. */
    cairo_rectangle(cr, f.x - 6, f.y - 6, f.w + 12, f.h + 12);
    cairo_clip(cr);
    for (int i = 0; i < 4; i++) {
        if (cols[i] < 0)
            continue;
        const struct series *s = &p->s[i];
        colour(cr, s->colour);
        cairo_set_line_width(cr, 1.6);
        double dash[] = { 6, 4 };
        cairo_set_dash(cr, dash, s->dashed ? 2 : 0, 0);
        int pen = 0, values = 0;
        for (size_t r = 0; r < t->rows; r++) {
            double raw = gan_curves_at(t, r, cols[i]), v = transform(f.axis, raw);
            double xr = px(&f, gan_curves_at(t, r, 0));
            const char *cell = t->text[r * t->cols + (size_t)cols[i]];
            if (!cell || !*cell)
                continue;   /* not measured at this row (quality between evaluations) */
            values++;
            if (p->scale_panel && raw == 0)
                v = f.ymin + 0.02 * (f.ymax - f.ymin);   /* a scale of 0: on the floor */
            if (!isfinite(v)) {
                pen = 0;
                continue;
            }
            if (pen)
                cairo_line_to(cr, xr, py(&f, v));
            else
                cairo_move_to(cr, xr, py(&f, v));
            pen = 1;
        }
        cairo_stroke(cr);
        cairo_set_dash(cr, NULL, 0, 0);
        /* A sparse series (measured at evaluations only) gets a dot at each value. */
        int sparse = values > 0 && (size_t)values * 3 < t->rows;
        for (size_t r = 0; sparse && r < t->rows; r++) {
            double v = transform(f.axis, gan_curves_at(t, r, cols[i]));
            if (isfinite(v)) {
                colour(cr, s->colour);
                cairo_arc(cr, px(&f, gan_curves_at(t, r, 0)), py(&f, v), 2.5, 0, 2 * M_PI);
                cairo_fill(cr);
            }
        }
        for (size_t r = 0; r < t->rows; r++) {
            double raw = gan_curves_at(t, r, cols[i]), xr = px(&f, gan_curves_at(t, r, 0));
            const char *cell = t->text[r * t->cols + (size_t)cols[i]];
            if (p->scale_panel && raw == 0) {
                marker(cr, xr, py(&f, f.ymin + 0.02 * (f.ymax - f.ymin)), 3, s->colour);
                zero_scale = 1;
            } else if (!isfinite(raw) && cell && *cell) {
                marker(cr, xr, f.y + 1, 0, BAD);
                nonfinite = 1;
            }
        }
        if (values && n_legend < 10)
            legend[n_legend++] = (struct legend_entry){ s->label, s->colour, s->dashed, -1 };
    }
    /* Overflow kinds beside each network's scale. */
    if (p->scale_panel) {
        static const char *const ov_cols[2] = { "critic_overflow", "generator_overflow" };
        static const char *const sc_cols[2] = { "critic_scale", "generator_scale" };
        for (int k = 0; k < 2; k++) {
            int oc = gan_curves_column(t, ov_cols[k]), sc = gan_curves_column(t, sc_cols[k]);
            if (oc < 0 || sc < 0)
                continue;
            for (size_t r = 0; r < t->rows; r++) {
                const char *cell = t->text[r * t->cols + (size_t)oc];
                if (!cell)
                    continue;
                int grad = strcmp(cell, "gradient") == 0 || strcmp(cell, "both") == 0;
                int fwd = strcmp(cell, "forward") == 0 || strcmp(cell, "both") == 0;
                double raw = gan_curves_at(t, r, sc), v = transform(f.axis, raw);
                double yy = isfinite(v) ? py(&f, v) : py(&f, f.ymin) - 4;
                double xr = px(&f, gan_curves_at(t, r, 0));
                struct rgb mc = k ? GENERATOR : CRITIC;
                if (grad) {
                    marker(cr, xr, yy - 9, 1, mc);
                    overflow_seen[1] = 1;
                }
                if (fwd) {
                    marker(cr, xr, yy + 9, 2, mc);
                    overflow_seen[2] = 1;
                }
            }
        }
    }
    cairo_restore(cr);
    annotate(cr, t, &f, p, cols);
    if (overflow_seen[1] && n_legend < 10)
        legend[n_legend++] = (struct legend_entry){ "gradient overflow", INK, 0, 1 };
    if (overflow_seen[2] && n_legend < 10)
        legend[n_legend++] = (struct legend_entry){ "forward overflow", INK, 0, 2 };
    if (zero_scale && n_legend < 10)
        legend[n_legend++] = (struct legend_entry){ "scale = 0 (on the floor)", INK, 0, 3 };
    if (nonfinite && n_legend < 10)
        legend[n_legend++] = (struct legend_entry){ "inf or NaN (top edge)", BAD, 0, 0 };
    draw_legend(cr, t, &f, cols, 4, legend, n_legend);
}

/* ------------------------------------------------------------------ the picture */

static gan_status write_surface(cairo_surface_t *surface, const char *path, const char *title,
                                struct gan_error *err)
{
    cairo_surface_flush(surface);
    int w = cairo_image_surface_get_width(surface), h = cairo_image_surface_get_height(surface);
    int stride = cairo_image_surface_get_stride(surface);
    const unsigned char *data = cairo_image_surface_get_data(surface);
    unsigned char *rgb = malloc((size_t)w * (size_t)h * 3);
    if (!rgb)
        return gan_error_nomem(err, path);
    for (int y = 0; y < h; y++)
        for (int x = 0; x < w; x++) {
            uint32_t px32;
            memcpy(&px32, data + (size_t)y * (size_t)stride + 4 * (size_t)x, 4);
            unsigned char *o = rgb + 3 * ((size_t)y * (size_t)w + (size_t)x);
            o[0] = (unsigned char)(px32 >> 16);
            o[1] = (unsigned char)(px32 >> 8);
            o[2] = (unsigned char)px32;
        }
    struct gan_png_picture pic = { (unsigned)w, (unsigned)h, 1, rgb, title, 1 };
    gan_status st = gan_png_write(path, &pic, "the curves", err);
    free(rgb);
    return st;
}

gan_status gan_curves_draw(const char *csv_path, const char *png_path, const char *title,
                           struct gan_error *err)
{
    struct gan_curves_table t;
    gan_status st = gan_curves_table_read(csv_path, &t, err);
    if (st != GAN_OK) {
        gan_curves_table_free(&t);
        return st;
    }
    int image = gan_curves_column(&t, "frechet") >= 0;
    int fp8 = gan_curves_column(&t, "fp8_scale_min") >= 0;
    const struct panel panels[6] = {
        { "losses", "loss (critic, generator) and W estimate",
          { { "critic_loss", "critic loss", CRITIC, 0 }, { "generator_loss", "generator loss", GENERATOR, 0 },
            { "w_distance", "Wasserstein estimate", THIRD, 1 } }, AXIS_LINEAR, 1, 0, 0, 0, 0 },
        { "gradient penalty", "penalty, critic gradient norm",
          { { "penalty", "gradient penalty", FOURTH, 0 }, { "grad_norm", "||grad_x D|| (mean)", THIRD, 1 } },
          AXIS_LINEAR, 1, 0, 0, 0, 0 },
        { "loss scale", fp8 ? "log2 loss scale; FP8 casts' scales" : "log2 loss scale",
          { { "critic_scale", "critic scale", CRITIC, 0 }, { "generator_scale", "generator scale", GENERATOR, 0 },
            { "fp8_scale_min", "FP8 scale, least", THIRD, 1 }, { "fp8_scale_max", "FP8 scale, most", FOURTH, 1 } },
          AXIS_LOG2, 0, 1, 0, 0, 0 },
        { "skipped steps", "skipped steps (cumulative)",
          { { "critic_skipped", "critic", CRITIC, 0 }, { "generator_skipped", "generator", GENERATOR, 0 } },
          AXIS_LINEAR, 0, 0, 1, 0, 0 },
        { "gradient underflow", "fraction of gradient values",
          { { "critic_underflow_frac", "critic zero or subnormal", CRITIC, 0 },
            { "generator_underflow_frac", "generator zero or subnormal", GENERATOR, 0 },
            { "critic_true_underflow", "critic true underflow (vs FP32)", CRITIC, 1 },
            { "generator_true_underflow", "generator true underflow (vs FP32)", GENERATOR, 1 } },
          AXIS_LINEAR, 0, 0, 0, 0, 1 },
        image ? (struct panel){ "quality", "distance to the test images",
                  { { "frechet", "Frechet distance", THIRD, 0 }, { "sliced_w1_pixel", "sliced W1 (pixels)", FOURTH, 0 } },
                  AXIS_LINEAR, 1, 0, 0, 0, 0 }
              : (struct panel){ "quality", "sliced W1; high-quality %, modes",
                  { { "sliced_w1", "sliced W1 (data units)", THIRD, 0 },
                    { "high_quality_pct", "high-quality %", FOURTH, 0 },
                    { "modes_covered", "modes covered", GENERATOR, 1 } },
                  AXIS_LINEAR, 1, 0, 0, 0, 0 },
    };
    cairo_surface_t *surface = cairo_image_surface_create(CAIRO_FORMAT_RGB24, (int)GAN_CURVES_WIDTH,
                                                          (int)GAN_CURVES_HEIGHT);
    if (cairo_surface_status(surface) != CAIRO_STATUS_SUCCESS) {
        cairo_surface_destroy(surface);
        gan_curves_table_free(&t);
        return gan_error_set(err, GAN_ERR_NOMEM, "%s: cairo could not make a %ux%u picture",
                             png_path, GAN_CURVES_WIDTH, GAN_CURVES_HEIGHT);
    }
    cairo_t *cr = cairo_create(surface);
    cairo_set_source_rgb(cr, 0.97, 0.97, 0.97);
    cairo_paint(cr);
    cairo_select_font_face(cr, "sans-serif", CAIRO_FONT_SLANT_NORMAL, CAIRO_FONT_WEIGHT_BOLD);
    colour(cr, INK);
    char heading[400];
    snprintf(heading, sizeof heading, "%s%s%zu metrics rows", title ? title : "",
             title && *title ? " - " : "", t.rows);
    text_at(cr, GAN_CURVES_WIDTH / 2.0, 10, 16, heading, 0.5, 0.0);
    double top = 36, pw = GAN_CURVES_WIDTH / 2.0, ph = (GAN_CURVES_HEIGHT - top) / 3.0;
    for (int i = 0; i < 6; i++)
        draw_panel(cr, &t, &panels[i], (i % 2) * pw, top + (i / 2) * ph, pw, ph);
    cairo_status_t cs = cairo_status(cr);
    cairo_destroy(cr);
    if (cs != CAIRO_STATUS_SUCCESS)
        st = gan_error_set(err, GAN_ERR_INVALID, "%s: drawing the curves failed: %s", png_path,
                           cairo_status_to_string(cs));
    else
        st = write_surface(surface, png_path, title, err);
    cairo_surface_destroy(surface);
    gan_curves_table_free(&t);
    return st;
}
