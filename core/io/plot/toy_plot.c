/* SPDX-License-Identifier: MIT */
/* toy_plot.c — renders a 2-D toy picture (critic field, real and generated points; the
 * title, tick labels, legend and colour bar drawn with cairo) and writes it as a PNG,
 * atomically (png_write.c). */
#include "config.h"

#include <cairo.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "io/image/png_write.h"
#include "io/plot/toy_plot.h"

/* ------------------------------------------------------------------ the canvas */

struct rgb {
    unsigned char r, g, b;
};

struct canvas {
    int w, h;
    unsigned char *px;            /* w × h × 3, rows top first */
};

static struct rgb rgb_hex(unsigned long hex)
{
    struct rgb c = { (unsigned char)(hex >> 16), (unsigned char)(hex >> 8), (unsigned char)hex };
    return c;
}

static unsigned char lerp_byte(unsigned char from, unsigned char to, double a)
{
    return (unsigned char)lrint(from + a * ((double)to - from));
}

/* Paints colour c over pixel (x, y) with opacity a in [0, 1]; outside the canvas
 * nothing happens. */
static void blend(struct canvas *cv, int x, int y, struct rgb c, double a)
{
    if (x < 0 || y < 0 || x >= cv->w || y >= cv->h || !(a > 0.0))
        return;
    if (a > 1.0)
        a = 1.0;
    unsigned char *p = cv->px + ((size_t)y * (size_t)cv->w + (size_t)x) * 3;
    p[0] = lerp_byte(p[0], c.r, a);
    p[1] = lerp_byte(p[1], c.g, a);
    p[2] = lerp_byte(p[2], c.b, a);
}

static void fill_rect(struct canvas *cv, int x0, int y0, int x1, int y1, struct rgb c)
{
    for (int y = y0; y < y1; y++)
        for (int x = x0; x < x1; x++)
            blend(cv, x, y, c, 1.0);
}

/* A disc of radius r centred at (cx, cy) in pixel units (pixel k spans [k, k + 1)),
 * with one pixel of anti-aliased edge. */
static void disc(struct canvas *cv, double cx, double cy, double r, struct rgb c, double a)
{
    int x0 = (int)floor(cx - r - 1.0), x1 = (int)ceil(cx + r + 1.0);
    int y0 = (int)floor(cy - r - 1.0), y1 = (int)ceil(cy + r + 1.0);
    for (int y = y0; y <= y1; y++) {
        for (int x = x0; x <= x1; x++) {
            double dx = x + 0.5 - cx, dy = y + 0.5 - cy;
            double cover = r + 0.5 - sqrt(dx * dx + dy * dy);
            if (cover > 0.0)
                blend(cv, x, y, c, a * (cover < 1.0 ? cover : 1.0));
        }
    }
}

/* ------------------------------------------------------------------ the picture */

/* A light sequential colour map whose lightness falls steadily from a warm near-white
 * (the field's minimum) to a mid blue (its maximum): light enough everywhere for the
 * orange and green dots to stand out, and readable without colour. */
static struct rgb field_colour(double t)
{
    static const unsigned char stops[][3] = {
        { 250, 248, 240 }, { 222, 229, 237 }, { 189, 206, 229 }, { 150, 177, 216 },
        { 108, 143, 198 },
    };
    const int last = (int)(sizeof stops / sizeof stops[0]) - 1;
    if (!(t > 0.0))
        t = 0.0;
    if (t > 1.0)
        t = 1.0;
    double f = t * last;
    int i = (int)f;
    if (i >= last)
        i = last - 1;
    double a = f - i;
    struct rgb c = {
        lerp_byte(stops[i][0], stops[i + 1][0], a),
        lerp_byte(stops[i][1], stops[i + 1][1], a),
        lerp_byte(stops[i][2], stops[i + 1][2], a),
    };
    return c;
}

#define CONTOUR_BANDS 10

struct layout {
    double font;                  /* text size in pixels */
    int margin;                   /* white border around the plot area */
    int strip;                    /* title strip height; 0 without a title */
    int left;                     /* room for the y tick labels */
    int labels;                   /* room for the x tick labels below the plot */
    int legend;                   /* legend strip height */
    int ox, oy, size;             /* the plot area */
    int width, height;            /* the image */
};

/* The field at grid coordinates (gx, gy), bilinear between the four grid points
 * around it; NaN when any of them is not finite. */
static double field_value(const struct gan_toy_plot *p, size_t g, double gx, double gy)
{
    size_t j = (size_t)gx, i = (size_t)gy;
    if (j > g - 2)
        j = g - 2;
    if (i > g - 2)
        i = g - 2;
    double fx = gx - (double)j, fy = gy - (double)i;
    const float *row0 = p->field + i * g, *row1 = row0 + g;
    double v00 = row0[j], v01 = row0[j + 1], v10 = row1[j], v11 = row1[j + 1];
    if (!isfinite(v00) || !isfinite(v01) || !isfinite(v10) || !isfinite(v11))
        return NAN;
    /* In the a + f·(b − a) form a constant stretch stays exactly constant. */
    double bottom = v00 + fx * (v01 - v00), top = v10 + fx * (v11 - v10);
    return bottom + fy * (top - bottom);
}

/* Shades the plot area with the field (bilinear between grid points), draws the
 * contours, and hatches where the field is not finite. */
static gan_status draw_field(struct canvas *cv, const struct layout *L,
                             const struct gan_toy_plot *p, double lo, double hi)
{
    size_t g = p->grid, n = (size_t)L->size;
    float *t = malloc(n * n * sizeof *t);
    if (!t)
        return GAN_ERR_NOMEM;
    double span = hi - lo;
    for (size_t py = 0; py < n; py++) {
        /* Pixel rows run top down, field rows bottom up. */
        double gy = (1.0 - (py + 0.5) / n) * (double)(g - 1);
        for (size_t px = 0; px < n; px++) {
            double gx = (px + 0.5) / n * (double)(g - 1);
            double v = field_value(p, g, gx, gy);
            /* A flat field sits mid-scale rather than at an end. */
            t[py * n + px] = (float)(!isfinite(v) ? NAN : span > 0.0 ? (v - lo) / span : 0.5);
        }
    }
    const struct rgb hatch_a = { 214, 214, 214 }, hatch_b = { 240, 240, 240 };
    for (size_t py = 0; py < n; py++) {
        for (size_t px = 0; px < n; px++) {
            float v = t[py * n + px];
            int x = L->ox + (int)px, y = L->oy + (int)py;
            if (isnan(v)) {
                blend(cv, x, y, ((px + py) / 4) % 2 ? hatch_a : hatch_b, 1.0);
                continue;
            }
            struct rgb c = field_colour(v);
            /* A contour where the band changes towards the right or downwards. */
            int band = (int)(v * CONTOUR_BANDS), edge = 0;
            if (band >= CONTOUR_BANDS)
                band = CONTOUR_BANDS - 1;
            for (int d = 0; d < 2 && !edge; d++) {
                size_t qx = px + (d == 0), qy = py + (d == 1);
                if (qx >= n || qy >= n || isnan(t[qy * n + qx]))
                    continue;
                int other = (int)(t[qy * n + qx] * CONTOUR_BANDS);
                if (other >= CONTOUR_BANDS)
                    other = CONTOUR_BANDS - 1;
                edge = other != band;
            }
            if (edge) {
                c.r = (unsigned char)(c.r * 0.8);
                c.g = (unsigned char)(c.g * 0.8);
                c.b = (unsigned char)(c.b * 0.8);
            }
            blend(cv, x, y, c, 1.0);
        }
    }
    free(t);
    return GAN_OK;
}

static void draw_points(struct canvas *cv, const struct layout *L, const struct gan_toy_plot *p,
                        const float *xy, size_t n, struct rgb c)
{
    double r = fmax(1.2, 2.2 * L->size / 512.0);
    double sx = L->size / (p->xmax - p->xmin), sy = L->size / (p->ymax - p->ymin);
    for (size_t i = 0; i < n; i++) {
        double x = xy[2 * i], y = xy[2 * i + 1];
        if (!(x >= p->xmin && x <= p->xmax && y >= p->ymin && y <= p->ymax))
            continue; /* outside the view, or NaN */
        disc(cv, L->ox + (x - p->xmin) * sx, L->oy + (p->ymax - y) * sy, r, c,
             GAN_TOY_PLOT_DOT_ALPHA);
    }
}

/* A step of 1, 2 or 5 times a power of ten that puts at most 12 ticks across span. */
static double tick_step(double span)
{
    double step = pow(10.0, floor(log10(span / 12.0)));
    if (span / step > 12.0)
        step *= 2.0;
    if (span / step > 12.0)
        step *= 2.5;
    if (span / step > 12.0)
        step *= 2.0;
    return step;
}

/* The frame, and ticks pointing inwards from all four sides at round values. */
static void draw_frame(struct canvas *cv, const struct layout *L, const struct gan_toy_plot *p)
{
    const struct rgb ink = { 70, 70, 70 };
    int x0 = L->ox - 1, y0 = L->oy - 1, x1 = L->ox + L->size, y1 = L->oy + L->size;
    fill_rect(cv, x0, y0, x1 + 1, y0 + 1, ink);
    fill_rect(cv, x0, y1, x1 + 1, y1 + 1, ink);
    fill_rect(cv, x0, y0, x0 + 1, y1 + 1, ink);
    fill_rect(cv, x1, y0, x1 + 1, y1 + 1, ink);
    int len = L->size >= 256 ? 6 : 3;
    for (int axis = 0; axis < 2; axis++) {
        double lo = axis == 0 ? p->xmin : p->ymin, hi = axis == 0 ? p->xmax : p->ymax;
        double step = tick_step(hi - lo);
        for (double v = ceil(lo / step) * step; v <= hi; v += step) {
            int at = (int)floor((v - lo) / (hi - lo) * L->size);
            if (at <= 0 || at >= L->size)
                continue;
            if (axis == 0) {
                int x = L->ox + at;
                fill_rect(cv, x, L->oy, x + 1, L->oy + len, ink);
                fill_rect(cv, x, y1 - len, x + 1, y1, ink);
            } else {
                int y = L->oy + L->size - 1 - at;
                fill_rect(cv, L->ox, y, L->ox + len, y + 1, ink);
                fill_rect(cv, x1 - len, y, x1, y + 1, ink);
            }
        }
    }
}

/* The labelled ticks: whole steps of 1, 2 or 5 times a power of ten, at most 7 across
 * the view (the frame's ticks are finer). */
static double label_step(double span)
{
    double step = pow(10.0, floor(log10(span / 7.0)));
    if (span / step > 7.0)
        step *= 2.0;
    if (span / step > 7.0)
        step *= 2.5;
    if (span / step > 7.0)
        step *= 2.0;
    return step;
}

/* The longest tick label of an axis from lo to hi, in characters. */
static size_t label_chars(double lo, double hi)
{
    double step = label_step(hi - lo);
    size_t most = 1;
    for (double v = ceil(lo / step) * step; v <= hi + step * 1e-9; v += step) {
        char t[32];
        snprintf(t, sizeof t, "%g", fabs(v) < step * 1e-9 ? 0.0 : v);
        most = strlen(t) > most ? strlen(t) : most;
    }
    return most;
}

static void ink(cairo_t *cr, unsigned long hex)
{
    cairo_set_source_rgb(cr, (double)((hex >> 16) & 255) / 255.0,
                         (double)((hex >> 8) & 255) / 255.0, (double)(hex & 255) / 255.0);
}

/* `text` at (x, y), aligned by the fractions ax, ay of its box (0, 0: top left). */
static double show(cairo_t *cr, double x, double y, const char *text, double ax, double ay)
{
    cairo_text_extents_t e;
    cairo_text_extents(cr, text, &e);
    cairo_move_to(cr, x - ax * e.x_advance, y - ay * e.height - e.y_bearing);
    cairo_show_text(cr, text);
    return e.x_advance;
}

/* The text of the picture: the title, the tick labels, and the strip below the plot
 * with "● real  ● generated" and, with a field, a colour bar of the critic's value
 * from its minimum to its maximum with its ends and middle labelled. */
static void draw_text_layer(cairo_t *cr, const struct layout *L, const struct gan_toy_plot *p,
                            double lo, double hi)
{
    cairo_select_font_face(cr, "sans-serif", CAIRO_FONT_SLANT_NORMAL, CAIRO_FONT_WEIGHT_NORMAL);
    cairo_set_font_size(cr, L->font);
    char t[64];
    if (L->strip && p->title) {
        ink(cr, 0x222222);
        cairo_save(cr);
        cairo_rectangle(cr, 0, 0, L->ox + L->size, L->strip);
        cairo_clip(cr);
        cairo_select_font_face(cr, "sans-serif", CAIRO_FONT_SLANT_NORMAL, CAIRO_FONT_WEIGHT_BOLD);
        show(cr, L->ox, (L->strip - L->font) / 2.0, p->title, 0, 0);
        cairo_restore(cr);
        cairo_select_font_face(cr, "sans-serif", CAIRO_FONT_SLANT_NORMAL, CAIRO_FONT_WEIGHT_NORMAL);
    }
    ink(cr, 0x333333);
    for (int axis = 0; axis < 2; axis++) {
        double vlo = axis == 0 ? p->xmin : p->ymin, vhi = axis == 0 ? p->xmax : p->ymax;
        double step = label_step(vhi - vlo);
        for (double v = ceil(vlo / step) * step; v <= vhi + step * 1e-9; v += step) {
            double at = (v - vlo) / (vhi - vlo) * L->size;
            snprintf(t, sizeof t, "%g", fabs(v) < step * 1e-9 ? 0.0 : v);
            if (axis == 0)
                show(cr, L->ox + at, L->oy + L->size + 3, t, 0.5, 0);
            else
                show(cr, L->ox - 4, L->oy + L->size - at, t, 1.0, 0.5);
        }
    }
    double top = L->oy + L->size + L->labels, mid = top + L->legend / 2.0;
    double r = L->font * 0.3, x = L->ox + r;
    static const struct {
        unsigned long rgb;
        const char *name;
    } sets[] = { { GAN_TOY_PLOT_REAL_RGB, "real" }, { GAN_TOY_PLOT_FAKE_RGB, "generated" } };
    for (int i = 0; i < 2; i++) {
        ink(cr, sets[i].rgb);
        cairo_arc(cr, x, mid, r, 0, 2 * M_PI);
        cairo_fill(cr);
        ink(cr, 0x222222);
        x += r + L->font * 0.4;
        x += show(cr, x, mid, sets[i].name, 0, 0.5) + L->font;
    }
    if (!p->field || !isfinite(lo))
        return;
    char lo_text[24], hi_text[24];
    snprintf(lo_text, sizeof lo_text, "%.3g", lo);
    snprintf(hi_text, sizeof hi_text, "%.3g", hi);
    cairo_text_extents_t e;
    cairo_text_extents(cr, "critic ", &e);
    double caption = e.x_advance;
    cairo_text_extents(cr, hi_text, &e);
    double right = L->ox + L->size - e.x_advance / 2.0;
    double bar = fmin(L->size * 0.35, right - x - caption - L->font);
    if (bar < L->font * 3)
        return;
    double bx = right - bar, bh = L->font * 0.55, by = mid - bh - 1;
    ink(cr, 0x222222);
    show(cr, bx - L->font * 0.5, by + bh / 2.0, "critic", 1.0, 0.5);
    for (int i = 0; i < (int)bar; i++) {
        struct rgb c = field_colour((i + 0.5) / bar);
        cairo_set_source_rgb(cr, c.r / 255.0, c.g / 255.0, c.b / 255.0);
        cairo_rectangle(cr, bx + i, by, 1.0, bh);
        cairo_fill(cr);
    }
    ink(cr, 0x464646);
    cairo_set_line_width(cr, 1);
    cairo_rectangle(cr, bx - 0.5, by - 0.5, bar + 1, bh + 1);
    cairo_stroke(cr);
    char mid_text[24];
    snprintf(mid_text, sizeof mid_text, "%.3g", lo + (hi - lo) / 2);
    const char *labels[3] = { lo_text, mid_text, hi_text };
    cairo_set_font_size(cr, L->font * 0.85);
    for (int k = 0; k < 3; k++) {
        double lx = bx + bar * k / 2.0;
        cairo_move_to(cr, lx, by + bh);
        cairo_line_to(cr, lx, by + bh + 3);
        cairo_stroke(cr);
        show(cr, lx, by + bh + 4, labels[k], 0.5, 0);
    }
}

/* The canvas with the text layer on it: through a cairo surface and back. */
static gan_status draw_text_over(struct canvas *cv, const struct layout *L,
                                 const struct gan_toy_plot *p, double lo, double hi)
{
    cairo_surface_t *sf = cairo_image_surface_create(CAIRO_FORMAT_RGB24, cv->w, cv->h);
    if (cairo_surface_status(sf) != CAIRO_STATUS_SUCCESS) {
        cairo_surface_destroy(sf);
        return GAN_ERR_NOMEM;
    }
    unsigned char *data = cairo_image_surface_get_data(sf);
    int stride = cairo_image_surface_get_stride(sf);
    for (int y = 0; y < cv->h; y++)
        for (int x = 0; x < cv->w; x++) {
            const unsigned char *c = cv->px + 3 * ((size_t)y * (size_t)cv->w + (size_t)x);
            uint32_t v = (uint32_t)c[0] << 16 | (uint32_t)c[1] << 8 | c[2];
            memcpy(data + (size_t)y * (size_t)stride + 4 * (size_t)x, &v, 4);
        }
    cairo_surface_mark_dirty(sf);
    cairo_t *cr = cairo_create(sf);
    draw_text_layer(cr, L, p, lo, hi);
    gan_status st = cairo_status(cr) == CAIRO_STATUS_SUCCESS ? GAN_OK : GAN_ERR_NOMEM;
    cairo_destroy(cr);
    cairo_surface_flush(sf);
    for (int y = 0; y < cv->h; y++)
        for (int x = 0; x < cv->w; x++) {
            uint32_t v;
            memcpy(&v, data + (size_t)y * (size_t)stride + 4 * (size_t)x, 4);
            unsigned char *c = cv->px + 3 * ((size_t)y * (size_t)cv->w + (size_t)x);
            c[0] = (unsigned char)(v >> 16);
            c[1] = (unsigned char)(v >> 8);
            c[2] = (unsigned char)v;
        }
    cairo_surface_destroy(sf);
    return st;
}

/* The finite minimum and maximum of the field; both NaN when it has no finite value. */
static void field_range(const struct gan_toy_plot *p, double *lo, double *hi)
{
    *lo = INFINITY;
    *hi = -INFINITY;
    for (size_t k = 0; p->field && k < p->grid * p->grid; k++) {
        if (isfinite(p->field[k])) {
            *lo = fmin(*lo, p->field[k]);
            *hi = fmax(*hi, p->field[k]);
        }
    }
    if (!(*lo <= *hi))
        *lo = *hi = NAN;
}

static void make_layout(const struct gan_toy_plot *p, struct layout *L)
{
    L->size = (int)p->size;
    L->font = L->size >= 384 ? 13.0 : L->size >= 160 ? 10.0 : 8.0;
    L->margin = L->size >= 384 ? 8 : 4;
    L->strip = p->title && *p->title ? (int)ceil(L->font * 1.9) : 0;
    size_t chars = label_chars(p->ymin, p->ymax);
    L->left = (int)ceil((double)chars * 0.62 * L->font) + 6;
    L->labels = (int)ceil(L->font * 1.5);
    L->legend = (int)ceil(L->font * 2.6);
    L->ox = L->left;
    L->oy = L->strip ? L->strip : L->margin;
    L->width = L->ox + L->size + L->margin;
    L->height = L->oy + L->size + L->labels + L->legend;
}

static gan_status render(const struct gan_toy_plot *p, struct canvas *cv)
{
    struct layout L;
    make_layout(p, &L);
    cv->w = L.width;
    cv->h = L.height;
    cv->px = malloc((size_t)cv->w * (size_t)cv->h * 3);
    if (!cv->px)
        return GAN_ERR_NOMEM;
    memset(cv->px, 255, (size_t)cv->w * (size_t)cv->h * 3);
    double lo, hi;
    field_range(p, &lo, &hi);
    if (p->field) {
        gan_status st = draw_field(cv, &L, p, lo, hi);
        if (st != GAN_OK)
            return st;
    }
    draw_points(cv, &L, p, p->real, p->n_real, rgb_hex(GAN_TOY_PLOT_REAL_RGB));
    draw_points(cv, &L, p, p->fake, p->n_fake, rgb_hex(GAN_TOY_PLOT_FAKE_RGB));
    draw_frame(cv, &L, p);
    return draw_text_over(cv, &L, p, lo, hi);
}

/* ------------------------------------------------------------------ the file */

static gan_status plot_invalid(struct gan_error *err, const char *path, const char *what)
{
    return gan_error_set(err, GAN_ERR_INVALID, "toy plot %s: %s", path ? path : "(null)", what);
}

/* Copies `plot` into `p` with the defaults applied and checks it. */
static gan_status resolve(const char *path, const struct gan_toy_plot *plot,
                          struct gan_toy_plot *p, struct gan_error *err)
{
    if (!plot)
        return plot_invalid(err, path, "no plot description");
    *p = *plot;
    if (p->size == 0)
        p->size = GAN_TOY_PLOT_DEFAULT_SIZE;
    if (p->xmin == 0.0 && p->xmax == 0.0 && p->ymin == 0.0 && p->ymax == 0.0) {
        p->xmin = p->ymin = -GAN_TOY_PLOT_DEFAULT_EXTENT;
        p->xmax = p->ymax = GAN_TOY_PLOT_DEFAULT_EXTENT;
    }
    if (p->size < 16 || p->size > 4096)
        return plot_invalid(err, path, "the plot size must be 16 to 4096 pixels (0: 512)");
    if (!(isfinite(p->xmin) && isfinite(p->xmax) && isfinite(p->ymin) && isfinite(p->ymax)
          && p->xmin < p->xmax && p->ymin < p->ymax))
        return plot_invalid(err, path, "the view must be finite with xmin < xmax and "
                            "ymin < ymax (all four 0: [-3, 3]^2)");
    if (p->field && (p->grid < 2 || p->grid > 65536))
        return plot_invalid(err, path, "a field needs a grid of 2 to 65536 points a side");
    if ((p->n_real && !p->real) || (p->n_fake && !p->fake))
        return plot_invalid(err, path, "a point count is set but its array is NULL");
    return GAN_OK;
}

gan_status gan_toy_plot_geometry(const struct gan_toy_plot *plot,
                                 struct gan_toy_plot_geometry *out, struct gan_error *err)
{
    struct gan_toy_plot p;
    memset(out, 0, sizeof *out);
    gan_status st = resolve("(geometry)", plot, &p, err);
    if (st != GAN_OK)
        return st;
    struct layout L;
    make_layout(&p, &L);
    out->width = (unsigned)L.width;
    out->height = (unsigned)L.height;
    out->plot_x = (unsigned)L.ox;
    out->plot_y = (unsigned)L.oy;
    out->size = (unsigned)L.size;
    out->xmin = p.xmin;
    out->xmax = p.xmax;
    out->ymin = p.ymin;
    out->ymax = p.ymax;
    return GAN_OK;
}

gan_status gan_toy_plot_write(const char *path, const struct gan_toy_plot *plot,
                              struct gan_error *err)
{
    if (!path || !*path)
        return plot_invalid(err, path, "no file name; pass the path of the PNG to write");
    struct gan_toy_plot p;
    gan_status st = resolve(path, plot, &p, err);
    if (st != GAN_OK)
        return st;
    struct canvas cv = { 0, 0, NULL };
    st = render(&p, &cv);
    if (st != GAN_OK) {
        free(cv.px);
        return gan_error_set(err, st, "toy plot %s: out of memory for a %u px picture", path,
                             p.size);
    }
    struct gan_png_picture pic = { (unsigned)cv.w, (unsigned)cv.h, 1, cv.px, p.title, 1 };
    st = gan_png_write(path, &pic, "toy plot", err);
    free(cv.px);
    return st;
}
