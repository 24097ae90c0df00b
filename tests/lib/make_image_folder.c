/* SPDX-License-Identifier: MIT */
/* make_image_folder.c — makes image folders for the tests and the manual's examples:
 * synthetic PNG and JPEG files of mixed sizes, kinds and depths with one broken file, or
 * Fashion-MNIST's first images exported as PNG files.
 *
 *   make-image-folder synthetic DIR        24 images (DIR and DIR/more), broken.png, notes.txt
 *   make-image-folder fashion-mnist DIR N  train images 0 … N − 1 as DIR/NNNNNN.png
 *                                          (from $GANCTL_FASHION_MNIST or Debian's folder) */
#include "config.h"

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "data/image_data.h"
#include "image_files.h"

/* One synthetic picture: a soft disc of colour (r, g, b) on a dark ground, its centre and
 * radius relative to the picture, as 8-bit samples of `channels` (1: its luma). */
static void disc(unsigned w, unsigned h, unsigned channels, double cx, double cy, double radius,
                 const double rgb[3], unsigned char *out)
{
    for (unsigned y = 0; y < h; y++)
        for (unsigned x = 0; x < w; x++) {
            double dx = (x + 0.5) / w - cx, dy = (y + 0.5) / h - cy;
            double t = 1.0 / (1.0 + exp((sqrt(dx * dx + dy * dy) - radius) * 40.0));
            unsigned char *p = out + ((size_t)y * w + x) * channels;
            if (channels == 1) {
                p[0] = (unsigned char)lrint(20 + t * (0.299 * rgb[0] + 0.587 * rgb[1] + 0.114 * rgb[2]));
            } else {
                for (unsigned c = 0; c < 3; c++)
                    p[c] = (unsigned char)lrint(20 + t * rgb[c]);
            }
        }
}

static int synthetic(const char *dir)
{
    static const unsigned sizes[][2] = {
        { 40, 30 }, { 64, 64 }, { 33, 50 }, { 100, 80 }, { 28, 28 }, { 50, 33 },
    };
    static const double colours[][3] = {
        { 230, 60, 40 }, { 40, 200, 80 }, { 60, 90, 230 }, { 220, 200, 50 },
    };
    char path[4096];
    snprintf(path, sizeof path, "%s/more", dir);
    if (mkdir(dir, 0777) != 0 || mkdir(path, 0777) != 0) {
        perror(dir);
        return 1;
    }
    for (unsigned i = 0; i < 24; i++) {
        unsigned w = sizes[i % 6][0], h = sizes[i % 6][1];
        const double *rgb = colours[i % 4];
        double cx = 0.35 + 0.3 * ((i * 7) % 5) / 4.0, cy = 0.35 + 0.3 * ((i * 3) % 4) / 3.0;
        unsigned kind = i % 4;         /* RGB PNG, grey PNG, 16-bit RGB PNG, JPEG */
        unsigned channels = kind == 1 ? 1 : 3;
        if (kind == 3 && i % 8 == 7)
            channels = 1;              /* some JPEGs grey */
        unsigned char *px = malloc((size_t)w * h * channels);
        if (!px)
            return 1;
        disc(w, h, channels, cx, cy, 0.22, rgb, px);
        const char *sub = i >= 16 ? "/more" : "";
        int rc;
        if (kind == 3) {
            snprintf(path, sizeof path, "%s%s/image-%02u.jpg", dir, sub, i);
            rc = test_write_jpeg(path, w, h, channels, px, 90);
        } else if (kind == 2) {
            uint16_t *wide = malloc((size_t)w * h * channels * sizeof *wide);
            if (!wide)
                return 1;
            for (size_t k = 0; k < (size_t)w * h * channels; k++)
                wide[k] = (uint16_t)(px[k] * 257u);
            snprintf(path, sizeof path, "%s%s/image-%02u.PNG", dir, sub, i);
            rc = test_write_png(path, w, h, channels, 16, wide);
            free(wide);
        } else {
            snprintf(path, sizeof path, "%s%s/image-%02u.png", dir, sub, i);
            rc = test_write_png(path, w, h, channels, 8, px);
        }
        free(px);
        if (rc != 0) {
            fprintf(stderr, "make-image-folder: cannot write %s\n", path);
            return 1;
        }
    }
    /* broken.png: a PNG signature and then nonsense. A hidden file and a text file are
     * not images of the folder at all and must not be counted. */
    static const unsigned char broken[] = { 0x89, 'P', 'N', 'G', '\r', '\n', 0x1a, '\n',
                                            'n', 'o', 't', ' ', 'a', 'n', ' ', 'I', 'H', 'D', 'R' };
    const char *names[] = { "broken.png", ".hidden.png", "notes.txt" };
    for (int i = 0; i < 3; i++) {
        snprintf(path, sizeof path, "%s/%s", dir, names[i]);
        FILE *f = fopen(path, "wb");
        if (!f || fwrite(broken, 1, sizeof broken, f) != sizeof broken || fclose(f) != 0) {
            perror(path);
            return 1;
        }
    }
    return 0;
}

static int fashion(const char *dir, long n)
{
    const char *data = getenv("GANCTL_FASHION_MNIST");
    gan_image_set *set;
    struct gan_error err;
    gan_error_clear(&err);
    if (gan_image_set_load(data, GAN_IMAGE_TRAIN, &set, &err) != GAN_OK) {
        fprintf(stderr, "make-image-folder: %s\n", err.message);
        return 1;
    }
    if (mkdir(dir, 0777) != 0) {
        perror(dir);
        gan_image_set_free(set);
        return 1;
    }
    int rc = 0;
    for (long i = 0; rc == 0 && i < n && (size_t)i < gan_image_set_count(set); i++) {
        char path[4096];
        snprintf(path, sizeof path, "%s/%06ld.png", dir, i);
        rc = test_write_png(path, GAN_IMAGE_SIDE, GAN_IMAGE_SIDE, 1, 8,
                            gan_image_set_raw(set, (size_t)i));
        if (rc != 0)
            fprintf(stderr, "make-image-folder: cannot write %s\n", path);
    }
    gan_image_set_free(set);
    return rc;
}

int main(int argc, char **argv)
{
    if (argc == 3 && strcmp(argv[1], "synthetic") == 0)
        return synthetic(argv[2]);
    if (argc == 4 && strcmp(argv[1], "fashion-mnist") == 0)
        return fashion(argv[2], atol(argv[3]));
    fprintf(stderr, "usage: make-image-folder synthetic DIR | fashion-mnist DIR N\n");
    return 2;
}
