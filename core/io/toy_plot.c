/* SPDX-License-Identifier: MIT */
/* toy_plot.c — renders a 2-D toy picture (critic field, real and generated points,
 * a title in a built-in bitmap font) and writes it as a PNG, atomically (png_write.c). */
#include "config.h"

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "io/png_write.h"
#include "io/toy_plot.h"

/* ------------------------------------------------------------------ the font */

/* A 5×7 pixel font for printable ASCII ('!' … '~'; the space is blank) in a 5×9
 * cell: capitals and digits fill rows 0–6, and the last two rows hold descenders
 * (g, j, p, q, y, the comma). Each glyph is nine rows, top first; bit 4 of a row
 * is its leftmost pixel. */
#define FONT_W 5
#define FONT_H 9
#define FONT_FIRST 33
#define FONT_LAST 126
static const unsigned char font[FONT_LAST - FONT_FIRST + 1][FONT_H] = {
    {0x04, 0x04, 0x04, 0x04, 0x04, 0x00, 0x04, 0x00, 0x00}, /* ! */
    {0x0a, 0x0a, 0x0a, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00}, /* " */
    {0x0a, 0x0a, 0x1f, 0x0a, 0x1f, 0x0a, 0x0a, 0x00, 0x00}, /* # */
    {0x04, 0x0f, 0x14, 0x0e, 0x05, 0x1e, 0x04, 0x00, 0x00}, /* $ */
    {0x18, 0x19, 0x02, 0x04, 0x08, 0x13, 0x03, 0x00, 0x00}, /* % */
    {0x0c, 0x12, 0x14, 0x08, 0x15, 0x12, 0x0d, 0x00, 0x00}, /* & */
    {0x04, 0x04, 0x08, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00}, /* ' */
    {0x02, 0x04, 0x08, 0x08, 0x08, 0x04, 0x02, 0x00, 0x00}, /* ( */
    {0x08, 0x04, 0x02, 0x02, 0x02, 0x04, 0x08, 0x00, 0x00}, /* ) */
    {0x00, 0x04, 0x15, 0x0e, 0x15, 0x04, 0x00, 0x00, 0x00}, /* * */
    {0x00, 0x04, 0x04, 0x1f, 0x04, 0x04, 0x00, 0x00, 0x00}, /* + */
    {0x00, 0x00, 0x00, 0x00, 0x00, 0x0c, 0x0c, 0x04, 0x08}, /* , */
    {0x00, 0x00, 0x00, 0x1f, 0x00, 0x00, 0x00, 0x00, 0x00}, /* - */
    {0x00, 0x00, 0x00, 0x00, 0x00, 0x0c, 0x0c, 0x00, 0x00}, /* . */
    {0x00, 0x01, 0x02, 0x04, 0x08, 0x10, 0x00, 0x00, 0x00}, /* / */
    {0x0e, 0x11, 0x13, 0x15, 0x19, 0x11, 0x0e, 0x00, 0x00}, /* 0 */
    {0x04, 0x0c, 0x04, 0x04, 0x04, 0x04, 0x0e, 0x00, 0x00}, /* 1 */
    {0x0e, 0x11, 0x01, 0x02, 0x04, 0x08, 0x1f, 0x00, 0x00}, /* 2 */
    {0x1f, 0x02, 0x04, 0x02, 0x01, 0x11, 0x0e, 0x00, 0x00}, /* 3 */
    {0x02, 0x06, 0x0a, 0x12, 0x1f, 0x02, 0x02, 0x00, 0x00}, /* 4 */
    {0x1f, 0x10, 0x1e, 0x01, 0x01, 0x11, 0x0e, 0x00, 0x00}, /* 5 */
    {0x06, 0x08, 0x10, 0x1e, 0x11, 0x11, 0x0e, 0x00, 0x00}, /* 6 */
    {0x1f, 0x01, 0x02, 0x04, 0x08, 0x08, 0x08, 0x00, 0x00}, /* 7 */
    {0x0e, 0x11, 0x11, 0x0e, 0x11, 0x11, 0x0e, 0x00, 0x00}, /* 8 */
    {0x0e, 0x11, 0x11, 0x0f, 0x01, 0x02, 0x0c, 0x00, 0x00}, /* 9 */
    {0x00, 0x0c, 0x0c, 0x00, 0x0c, 0x0c, 0x00, 0x00, 0x00}, /* : */
    {0x00, 0x00, 0x0c, 0x0c, 0x00, 0x0c, 0x0c, 0x04, 0x08}, /* ; */
    {0x02, 0x04, 0x08, 0x10, 0x08, 0x04, 0x02, 0x00, 0x00}, /* < */
    {0x00, 0x00, 0x1f, 0x00, 0x1f, 0x00, 0x00, 0x00, 0x00}, /* = */
    {0x08, 0x04, 0x02, 0x01, 0x02, 0x04, 0x08, 0x00, 0x00}, /* > */
    {0x0e, 0x11, 0x01, 0x02, 0x04, 0x00, 0x04, 0x00, 0x00}, /* ? */
    {0x0e, 0x11, 0x17, 0x15, 0x17, 0x10, 0x0f, 0x00, 0x00}, /* @ */
    {0x0e, 0x11, 0x11, 0x1f, 0x11, 0x11, 0x11, 0x00, 0x00}, /* A */
    {0x1e, 0x11, 0x11, 0x1e, 0x11, 0x11, 0x1e, 0x00, 0x00}, /* B */
    {0x0e, 0x11, 0x10, 0x10, 0x10, 0x11, 0x0e, 0x00, 0x00}, /* C */
    {0x1c, 0x12, 0x11, 0x11, 0x11, 0x12, 0x1c, 0x00, 0x00}, /* D */
    {0x1f, 0x10, 0x10, 0x1e, 0x10, 0x10, 0x1f, 0x00, 0x00}, /* E */
    {0x1f, 0x10, 0x10, 0x1e, 0x10, 0x10, 0x10, 0x00, 0x00}, /* F */
    {0x0e, 0x11, 0x10, 0x17, 0x11, 0x11, 0x0f, 0x00, 0x00}, /* G */
    {0x11, 0x11, 0x11, 0x1f, 0x11, 0x11, 0x11, 0x00, 0x00}, /* H */
    {0x0e, 0x04, 0x04, 0x04, 0x04, 0x04, 0x0e, 0x00, 0x00}, /* I */
    {0x07, 0x02, 0x02, 0x02, 0x02, 0x12, 0x0c, 0x00, 0x00}, /* J */
    {0x11, 0x12, 0x14, 0x18, 0x14, 0x12, 0x11, 0x00, 0x00}, /* K */
    {0x10, 0x10, 0x10, 0x10, 0x10, 0x10, 0x1f, 0x00, 0x00}, /* L */
    {0x11, 0x1b, 0x15, 0x15, 0x11, 0x11, 0x11, 0x00, 0x00}, /* M */
    {0x11, 0x11, 0x19, 0x15, 0x13, 0x11, 0x11, 0x00, 0x00}, /* N */
    {0x0e, 0x11, 0x11, 0x11, 0x11, 0x11, 0x0e, 0x00, 0x00}, /* O */
    {0x1e, 0x11, 0x11, 0x1e, 0x10, 0x10, 0x10, 0x00, 0x00}, /* P */
    {0x0e, 0x11, 0x11, 0x11, 0x15, 0x12, 0x0d, 0x00, 0x00}, /* Q */
    {0x1e, 0x11, 0x11, 0x1e, 0x14, 0x12, 0x11, 0x00, 0x00}, /* R */
    {0x0f, 0x10, 0x10, 0x0e, 0x01, 0x01, 0x1e, 0x00, 0x00}, /* S */
    {0x1f, 0x04, 0x04, 0x04, 0x04, 0x04, 0x04, 0x00, 0x00}, /* T */
    {0x11, 0x11, 0x11, 0x11, 0x11, 0x11, 0x0e, 0x00, 0x00}, /* U */
    {0x11, 0x11, 0x11, 0x11, 0x11, 0x0a, 0x04, 0x00, 0x00}, /* V */
    {0x11, 0x11, 0x11, 0x15, 0x15, 0x15, 0x0a, 0x00, 0x00}, /* W */
    {0x11, 0x11, 0x0a, 0x04, 0x0a, 0x11, 0x11, 0x00, 0x00}, /* X */
    {0x11, 0x11, 0x0a, 0x04, 0x04, 0x04, 0x04, 0x00, 0x00}, /* Y */
    {0x1f, 0x01, 0x02, 0x04, 0x08, 0x10, 0x1f, 0x00, 0x00}, /* Z */
    {0x0e, 0x08, 0x08, 0x08, 0x08, 0x08, 0x0e, 0x00, 0x00}, /* [ */
    {0x00, 0x10, 0x08, 0x04, 0x02, 0x01, 0x00, 0x00, 0x00}, /* backslash */
    {0x0e, 0x02, 0x02, 0x02, 0x02, 0x02, 0x0e, 0x00, 0x00}, /* ] */
    {0x04, 0x0a, 0x11, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00}, /* ^ */
    {0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x1f, 0x00, 0x00}, /* _ */
    {0x08, 0x04, 0x02, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00}, /* ` */
    {0x00, 0x00, 0x0e, 0x01, 0x0f, 0x11, 0x0f, 0x00, 0x00}, /* a */
    {0x10, 0x10, 0x16, 0x19, 0x11, 0x11, 0x1e, 0x00, 0x00}, /* b */
    {0x00, 0x00, 0x0e, 0x10, 0x10, 0x11, 0x0e, 0x00, 0x00}, /* c */
    {0x01, 0x01, 0x0d, 0x13, 0x11, 0x11, 0x0f, 0x00, 0x00}, /* d */
    {0x00, 0x00, 0x0e, 0x11, 0x1f, 0x10, 0x0e, 0x00, 0x00}, /* e */
    {0x06, 0x09, 0x08, 0x1c, 0x08, 0x08, 0x08, 0x00, 0x00}, /* f */
    {0x00, 0x00, 0x0f, 0x11, 0x11, 0x11, 0x0f, 0x01, 0x0e}, /* g */
    {0x10, 0x10, 0x16, 0x19, 0x11, 0x11, 0x11, 0x00, 0x00}, /* h */
    {0x04, 0x00, 0x0c, 0x04, 0x04, 0x04, 0x0e, 0x00, 0x00}, /* i */
    {0x02, 0x00, 0x06, 0x02, 0x02, 0x02, 0x02, 0x12, 0x0c}, /* j */
    {0x10, 0x10, 0x12, 0x14, 0x18, 0x14, 0x12, 0x00, 0x00}, /* k */
    {0x0c, 0x04, 0x04, 0x04, 0x04, 0x04, 0x0e, 0x00, 0x00}, /* l */
    {0x00, 0x00, 0x1a, 0x15, 0x15, 0x11, 0x11, 0x00, 0x00}, /* m */
    {0x00, 0x00, 0x16, 0x19, 0x11, 0x11, 0x11, 0x00, 0x00}, /* n */
    {0x00, 0x00, 0x0e, 0x11, 0x11, 0x11, 0x0e, 0x00, 0x00}, /* o */
    {0x00, 0x00, 0x1e, 0x11, 0x11, 0x11, 0x1e, 0x10, 0x10}, /* p */
    {0x00, 0x00, 0x0f, 0x11, 0x11, 0x11, 0x0f, 0x01, 0x01}, /* q */
    {0x00, 0x00, 0x16, 0x19, 0x10, 0x10, 0x10, 0x00, 0x00}, /* r */
    {0x00, 0x00, 0x0e, 0x10, 0x0e, 0x01, 0x1e, 0x00, 0x00}, /* s */
    {0x08, 0x08, 0x1c, 0x08, 0x08, 0x09, 0x06, 0x00, 0x00}, /* t */
    {0x00, 0x00, 0x11, 0x11, 0x11, 0x13, 0x0d, 0x00, 0x00}, /* u */
    {0x00, 0x00, 0x11, 0x11, 0x11, 0x0a, 0x04, 0x00, 0x00}, /* v */
    {0x00, 0x00, 0x11, 0x11, 0x15, 0x15, 0x0a, 0x00, 0x00}, /* w */
    {0x00, 0x00, 0x11, 0x0a, 0x04, 0x0a, 0x11, 0x00, 0x00}, /* x */
    {0x00, 0x00, 0x11, 0x11, 0x11, 0x11, 0x0f, 0x01, 0x0e}, /* y */
    {0x00, 0x00, 0x1f, 0x02, 0x04, 0x08, 0x1f, 0x00, 0x00}, /* z */
    {0x02, 0x04, 0x04, 0x08, 0x04, 0x04, 0x02, 0x00, 0x00}, /* { */
    {0x04, 0x04, 0x04, 0x04, 0x04, 0x04, 0x04, 0x00, 0x00}, /* | */
    {0x08, 0x04, 0x04, 0x02, 0x04, 0x04, 0x08, 0x00, 0x00}, /* } */
    {0x00, 0x00, 0x08, 0x15, 0x02, 0x00, 0x00, 0x00, 0x00}, /* ~ */
};

/* The box an unknown byte shows as. */
static const unsigned char font_box[FONT_H] = { 0x1f, 0x11, 0x11, 0x11, 0x11, 0x11, 0x1f, 0, 0 };

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

/* Draws `text` with its top-left corner at (x, y), each font pixel a scale × scale
 * square, stopping before x_end. Returns the x after the last glyph drawn. */
static int draw_text(struct canvas *cv, int x, int y, int scale, const char *text,
                     struct rgb c, int x_end)
{
    int advance = (FONT_W + 1) * scale;
    for (const unsigned char *s = (const unsigned char *)text; *s; s++) {
        if (x + FONT_W * scale > x_end)
            break;
        const unsigned char *g = NULL;
        if (*s >= FONT_FIRST && *s <= FONT_LAST)
            g = font[*s - FONT_FIRST];
        else if (*s != ' ')
            g = font_box;
        for (int row = 0; g && row < FONT_H; row++)
            for (int col = 0; col < FONT_W; col++)
                if (g[row] & (0x10 >> col))
                    fill_rect(cv, x + col * scale, y + row * scale,
                              x + (col + 1) * scale, y + (row + 1) * scale, c);
        x += advance;
    }
    return x;
}

static int text_width(const char *text, int scale)
{
    size_t n = strlen(text);
    return n ? (int)n * (FONT_W + 1) * scale - scale : 0;
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
    int scale;                    /* font pixel size */
    int margin;                   /* white border around the plot area */
    int strip;                    /* title strip height; 0 without a title */
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

/* The title line in the strip above the plot, cut at the plot's right edge. */
static void draw_title(struct canvas *cv, const struct layout *L, const char *title)
{
    const struct rgb ink = { 34, 34, 34 };
    int y = (L->strip - 7 * L->scale) / 2;
    draw_text(cv, L->ox, y, L->scale, title, ink, L->ox + L->size);
}

/* The strip below the plot: "● real  ● generated" on the left and, with a field, a
 * colour bar between the field's minimum and maximum on the right (left out when
 * the numbers leave it no room). */
static void draw_legend(struct canvas *cv, const struct layout *L, const struct gan_toy_plot *p,
                        double lo, double hi)
{
    const struct rgb ink = { 34, 34, 34 }, frame = { 70, 70, 70 };
    const struct rgb real = rgb_hex(GAN_TOY_PLOT_REAL_RGB), fake = rgb_hex(GAN_TOY_PLOT_FAKE_RGB);
    int s = L->scale, top = L->oy + L->size + 1 + L->margin;
    int y = top + (L->legend - 7 * s) / 2, x_end = L->ox + L->size;
    int dot = 3 * s, gap = 3 * s, pad = 8 * s;
    double cy = y + 3.5 * s;
    int x = L->ox;
    disc(cv, x + dot, cy, dot - 0.5, real, 1.0);
    x = draw_text(cv, x + 2 * dot + gap, y, s, "real", ink, x_end) + pad;
    disc(cv, x + dot, cy, dot - 0.5, fake, 1.0);
    x = draw_text(cv, x + 2 * dot + gap, y, s, "generated", ink, x_end) + pad;
    if (!p->field || !isfinite(lo))
        return;
    char lo_text[24], hi_text[24];
    snprintf(lo_text, sizeof lo_text, "%.3g", lo);
    snprintf(hi_text, sizeof hi_text, "%.3g", hi);
    int bar = x_end - x - text_width(lo_text, s) - text_width(hi_text, s) - 2 * gap;
    if (bar > 60 * s)
        bar = 60 * s;
    if (bar < 16 * s)
        return;
    int bx = x_end - text_width(hi_text, s) - gap - bar;
    draw_text(cv, bx - gap - text_width(lo_text, s), y, s, lo_text, ink, x_end);
    draw_text(cv, bx + bar + gap, y, s, hi_text, ink, x_end);
    int by = y, bh = 7 * s;
    for (int i = 0; i < bar; i++)
        fill_rect(cv, bx + i, by, bx + i + 1, by + bh, field_colour((i + 0.5) / bar));
    fill_rect(cv, bx - 1, by - 1, bx + bar + 1, by, frame);
    fill_rect(cv, bx - 1, by + bh, bx + bar + 1, by + bh + 1, frame);
    fill_rect(cv, bx - 1, by - 1, bx, by + bh + 1, frame);
    fill_rect(cv, bx + bar, by - 1, bx + bar + 1, by + bh + 1, frame);
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
    L->scale = L->size >= 384 ? 2 : 1;
    L->margin = 4 * L->scale;
    L->strip = p->title && *p->title ? (FONT_H + 6) * L->scale : 0;
    L->legend = (FONT_H + 6) * L->scale;
    L->ox = L->margin;
    L->oy = L->strip ? L->strip : L->margin;
    L->width = L->size + 2 * L->margin;
    L->height = L->oy + L->size + L->margin + L->legend;
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
    if (L.strip)
        draw_title(cv, &L, p->title);
    draw_legend(cv, &L, p, lo, hi);
    return GAN_OK;
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
    struct gan_png_picture pic = { (unsigned)cv.w, (unsigned)cv.h, 1, cv.px, p.title };
    st = gan_png_write(path, &pic, "toy plot", err);
    free(cv.px);
    return st;
}
