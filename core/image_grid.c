/* image_grid.c — lays small images out on a sheet with separators, maps values to grey
 * levels, and writes the sheet as a PNG with libpng through a temporary file and a rename. */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <png.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "image_grid.h"

/* ------------------------------------------------------------------ checking */

static gan_status grid_invalid(struct gan_error *err, const char *path, const char *what)
{
    return gan_error_set(err, GAN_ERR_INVALID, "image grid %s: %s", path ? path : "(null)",
                         what);
}

/* Checks the description and computes the sheet's size. */
static gan_status layout(const char *path, const struct gan_image_grid *g, unsigned *width,
                         unsigned *height, struct gan_error *err)
{
    if (!g)
        return grid_invalid(err, path, "no grid description given");
    if (g->count && !g->images)
        return grid_invalid(err, path, "count is set but images is NULL");
    if (g->channels != 1 && g->channels != 3)
        return grid_invalid(err, path, "channels must be 1 (grey) or 3 (RGB)");
    if (g->height < 1 || g->width < 1 || g->rows < 1 || g->cols < 1)
        return grid_invalid(err, path, "the image size and the rows and columns of the "
                            "sheet must all be at least 1");
    if (g->separator > GAN_IMAGE_GRID_MAX_SEPARATOR)
        return grid_invalid(err, path, "the separator must be 0 to 16 pixels (1 or 2 is "
                            "usual)");
    if (g->scale > GAN_IMAGE_GRID_MAX_SCALE)
        return grid_invalid(err, path, "the scale must be 0 to 16 (0 and 1 both draw one "
                            "pixel per image pixel)");
    if (!(g->low == 0.0f && g->high == 0.0f)
        && !(isfinite(g->low) && isfinite(g->high) && g->low < g->high))
        return grid_invalid(err, path, "the value range needs finite low < high (both 0: "
                            "[-1, 1])");
    uint64_t s = g->scale ? g->scale : 1;
    uint64_t w = (uint64_t)g->cols * g->width * s + ((uint64_t)g->cols + 1) * g->separator;
    uint64_t h = (uint64_t)g->rows * g->height * s + ((uint64_t)g->rows + 1) * g->separator;
    if (w > GAN_IMAGE_GRID_MAX_SIDE || h > GAN_IMAGE_GRID_MAX_SIDE)
        return grid_invalid(err, path, "the sheet would be more than 16384 pixels wide or "
                            "high; use fewer rows or columns or a smaller scale");
    *width = (unsigned)w;
    *height = (unsigned)h;
    return GAN_OK;
}

gan_status gan_image_grid_size(const struct gan_image_grid *grid, unsigned *width,
                               unsigned *height, struct gan_error *err)
{
    unsigned w = 0, h = 0;
    gan_status st = layout("(size)", grid, &w, &h, err);
    if (width)
        *width = w;
    if (height)
        *height = h;
    return st;
}

/* ------------------------------------------------------------------ drawing */

struct sheet {
    unsigned w, h;
    int rgb;                       /* 3 bytes a pixel, else 1 */
    unsigned char *px;             /* rows top first */
};

/* A value as a byte: linear from [lo, hi] onto [0, 255], rounded half up, clamped. */
static unsigned char level(double v, double lo, double hi)
{
    double t = (v - lo) / (hi - lo) * 255.0;
    if (!(t > 0.0))
        return 0;
    if (t >= 255.0)
        return 255;
    return (unsigned char)floor(t + 0.5);
}

static size_t images_shown(const struct gan_image_grid *g)
{
    size_t cells = (size_t)g->rows * g->cols;
    return g->count < cells ? g->count : cells;
}

static int has_nan(const struct gan_image_grid *g)
{
    size_t n = images_shown(g) * g->channels * g->height * g->width;
    for (size_t k = 0; k < n; k++)
        if (isnan(g->images[k]))
            return 1;
    return 0;
}

static void draw(const struct gan_image_grid *g, struct sheet *sh)
{
    double lo = g->low, hi = g->high;
    if (lo == 0.0 && hi == 0.0) {
        lo = -1.0;
        hi = 1.0;
    }
    unsigned scale = g->scale ? g->scale : 1, bpp = sh->rgb ? 3 : 1;
    size_t plane = (size_t)g->height * g->width;
    memset(sh->px, GAN_IMAGE_GRID_SEPARATOR_GREY, (size_t)sh->w * sh->h * bpp);
    const unsigned char nan_rgb[3] = {
        (unsigned char)(GAN_IMAGE_GRID_NAN_RGB >> 16), (unsigned char)(GAN_IMAGE_GRID_NAN_RGB >> 8),
        (unsigned char)GAN_IMAGE_GRID_NAN_RGB,
    };
    for (size_t i = 0; i < images_shown(g); i++) {
        unsigned r = (unsigned)(i / g->cols), c = (unsigned)(i % g->cols);
        unsigned x0 = g->separator + c * (g->width * scale + g->separator);
        unsigned y0 = g->separator + r * (g->height * scale + g->separator);
        const float *img = g->images + i * g->channels * plane;
        for (unsigned y = 0; y < g->height; y++) {
            for (unsigned x = 0; x < g->width; x++) {
                unsigned char p[3];
                int nan = 0;
                for (unsigned ch = 0; ch < 3; ch++) {
                    float v = img[(g->channels == 3 ? ch : 0) * plane + (size_t)y * g->width + x];
                    nan |= isnan(v);
                    p[ch] = level(v, lo, hi);
                }
                if (nan)
                    memcpy(p, nan_rgb, 3);
                for (unsigned dy = 0; dy < scale; dy++) {
                    unsigned char *row = sh->px + ((size_t)(y0 + y * scale + dy) * sh->w
                                                   + x0 + x * scale) * bpp;
                    for (unsigned dx = 0; dx < scale; dx++)
                        memcpy(row + (size_t)dx * bpp, p, bpp);
                }
            }
        }
    }
}

/* ------------------------------------------------------------------ the file */

struct png_failure {
    char message[200];
};

/* libpng's default handlers print; these keep the message for the caller's error. */
static void on_png_error(png_structp png, png_const_charp msg)
{
    struct png_failure *f = png_get_error_ptr(png);
    snprintf(f->message, sizeof f->message, "%s", msg);
    png_longjmp(png, 1);
}

static void on_png_warning(png_structp png, png_const_charp msg)
{
    (void)png;
    (void)msg;
}

/* Encodes the sheet into `out`. Returns 0, or -1 with the reason in `fail`. */
static int encode(FILE *out, const struct sheet *sh, const char *title, struct png_failure *fail)
{
    png_structp png = png_create_write_struct(PNG_LIBPNG_VER_STRING, fail, on_png_error,
                                              on_png_warning);
    png_infop info = png ? png_create_info_struct(png) : NULL;
    if (!info) {
        png_destroy_write_struct(&png, NULL);
        snprintf(fail->message, sizeof fail->message, "libpng could not start an encoder");
        return -1;
    }
    if (setjmp(png_jmpbuf(png))) {
        png_destroy_write_struct(&png, &info);
        return -1;
    }
    png_init_io(png, out);
    png_set_IHDR(png, info, sh->w, sh->h, 8, sh->rgb ? PNG_COLOR_TYPE_RGB : PNG_COLOR_TYPE_GRAY,
                 PNG_INTERLACE_NONE, PNG_COMPRESSION_TYPE_DEFAULT, PNG_FILTER_TYPE_DEFAULT);
    png_text text[2];
    int ntext = 0;
    memset(text, 0, sizeof text);
    text[ntext].compression = PNG_TEXT_COMPRESSION_NONE;
    text[ntext].key = (png_charp) "Software";
    text[ntext].text = (png_charp) PACKAGE_STRING;
    ntext++;
    if (title && *title) {
        text[ntext].compression = PNG_TEXT_COMPRESSION_NONE;
        text[ntext].key = (png_charp) "Title";
        text[ntext].text = (png_charp)title;
        ntext++;
    }
    png_set_text(png, info, text, ntext);
    png_write_info(png, info);
    size_t stride = (size_t)sh->w * (sh->rgb ? 3 : 1);
    for (unsigned y = 0; y < sh->h; y++)
        png_write_row(png, sh->px + (size_t)y * stride);
    png_write_end(png, info);
    png_destroy_write_struct(&png, &info);
    return 0;
}

static gan_status write_fail(struct gan_error *err, const char *path, const char *what,
                             const char *why, const char *fix)
{
    return gan_error_set(err, GAN_ERR_IO, "image grid: cannot write %s: %s (%s); %s", path,
                         what, why, fix);
}

/* fsync on the folder that holds `path`, so that the rename is durable too. A file
 * system that cannot sync a folder (EINVAL) is taken at its word. */
static int sync_parent(const char *path)
{
    const char *slash = strrchr(path, '/');
    char *dir = slash ? strndup(path, slash == path ? 1 : (size_t)(slash - path)) : strdup(".");
    if (!dir)
        return -1;
    int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    free(dir);
    if (fd < 0)
        return -1;
    int rc = fsync(fd) != 0 && errno != EINVAL ? -1 : 0;
    int saved = errno;
    close(fd);
    errno = saved;
    return rc;
}

static gan_status write_file(const char *path, const struct sheet *sh, const char *title,
                             struct gan_error *err)
{
    size_t len = strlen(path);
    char *tmp = malloc(len + 8);
    if (!tmp)
        return write_fail(err, path, "no memory for the temporary name", strerror(ENOMEM),
                          "free some memory");
    memcpy(tmp, path, len);
    memcpy(tmp + len, ".XXXXXX", 8);
    int fd = mkstemp(tmp);
    if (fd < 0) {
        gan_status st = write_fail(err, path, "cannot create a temporary file beside it",
                                   strerror(errno), "create the folder, make it writable, or "
                                   "choose another path");
        free(tmp);
        return st;
    }
    /* mkstemp makes the file private; a picture is for everyone to read. */
    (void)fchmod(fd, 0644);
    FILE *out = fdopen(fd, "wb");
    if (!out) {
        int e = errno;
        close(fd);
        unlink(tmp);
        free(tmp);
        return write_fail(err, path, "cannot open the temporary file", strerror(e),
                          "check the folder's permissions");
    }
    struct png_failure fail = { "" };
    const char *what = NULL, *why = NULL;
    if (encode(out, sh, title, &fail) != 0) {
        what = "the PNG encoder failed";
        why = fail.message;
    } else if (fflush(out) != 0 || fsync(fileno(out)) != 0) {
        what = "writing the image data failed";
        why = strerror(errno);
    }
    if (fclose(out) != 0 && !what) {
        what = "closing the temporary file failed";
        why = strerror(errno);
    }
    if (!what && rename(tmp, path) != 0) {
        what = "renaming the temporary file over it failed";
        why = strerror(errno);
    }
    if (what) {
        /* Copy `why` first: it may be strerror's buffer, and unlink can change errno. */
        char reason[200];
        snprintf(reason, sizeof reason, "%s", why);
        unlink(tmp);
        free(tmp);
        return write_fail(err, path, what, reason, "check the free space and the folder's "
                          "permissions");
    }
    free(tmp);
    if (sync_parent(path) != 0)
        return write_fail(err, path, "the file was written but its folder could not be synced",
                          strerror(errno), "check the file system");
    return GAN_OK;
}

gan_status gan_image_grid_write(const char *path, const struct gan_image_grid *grid,
                                struct gan_error *err)
{
    if (!path || !*path)
        return grid_invalid(err, path, "no file name; pass the path of the PNG to write");
    struct sheet sh = { 0, 0, 0, NULL };
    gan_status st = layout(path, grid, &sh.w, &sh.h, err);
    if (st != GAN_OK)
        return st;
    sh.rgb = grid->channels == 3 || has_nan(grid);
    sh.px = malloc((size_t)sh.w * sh.h * (sh.rgb ? 3 : 1));
    if (!sh.px)
        return gan_error_set(err, GAN_ERR_NOMEM, "image grid %s: out of memory for a %u × %u "
                             "sheet", path, sh.w, sh.h);
    draw(grid, &sh);
    st = write_file(path, &sh, grid->title, err);
    free(sh.px);
    return st;
}
