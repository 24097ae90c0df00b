/* SPDX-License-Identifier: MIT */
/* make_corpus_images.c — the seeds of the image and folder harnesses: small PNG and JPEG
 * files of each kind the readers take, made by tests/lib/image_files.c, a truncated one,
 * and image folders in fuzz_folder.c's archive form built from them. */
#include "config.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../lib/image_files.h"
#include "fuzz.h"
#include "make_corpus.h"

#define W 5
#define H 4

struct seed {
    const char *name;
    unsigned char *bytes;
    size_t size;
};

static struct seed seeds[8];
static size_t seed_count;

/* Writes the image with `write` into the corpus, and keeps its bytes for the folders. */
static void keep(const char *name)
{
    size_t n;
    unsigned char *bytes = read_bytes(out_path("image", name), &n);
    seeds[seed_count++] = (struct seed){ name, bytes, n };
}

static void must(int rc, const char *name)
{
    if (rc != 0)
        fuzz_fail("cannot write the seed %s", name);
    keep(name);
}

/* One folder archive: the shape byte, the holdout byte, then (name, content) entries. */
struct archive {
    unsigned char bytes[1 << 16];
    size_t size;
};

static void add(struct archive *a, const char *name, const unsigned char *content, size_t n)
{
    size_t len = strlen(name);
    if (a->size + 3 + len + n > sizeof a->bytes || n > 0xffff || len > 255)
        fuzz_fail("folder seed too large");
    a->bytes[a->size++] = (unsigned char)len;
    memcpy(a->bytes + a->size, name, len);
    a->size += len;
    a->bytes[a->size++] = (unsigned char)(n & 0xff);
    a->bytes[a->size++] = (unsigned char)(n >> 8);
    memcpy(a->bytes + a->size, content, n);
    a->size += n;
}

void image_seeds(void)
{
    unsigned char px[W * H * 4];
    uint16_t wide[W * H * 4];
    for (size_t i = 0; i < sizeof px; i++) {
        px[i] = (unsigned char)(i * 37 + 11);
        wide[i] = (uint16_t)(i * 4099u + 7u);
    }
    unsigned char bits1[W * H];
    for (size_t i = 0; i < sizeof bits1; i++)
        bits1[i] = (unsigned char)(i % 2);
    static const unsigned char rgb[6] = { 0, 0, 0, 250, 120, 10 }, alpha[2] = { 255, 80 };
    must(test_write_png(out_path("image", "rgb.png"), W, H, 3, 8, px), "rgb.png");
    must(test_write_png(out_path("image", "grey-alpha-16.png"), W, H, 2, 16, wide),
         "grey-alpha-16.png");
    must(test_write_png(out_path("image", "grey-1bit.png"), W, H, 1, 1, bits1), "grey-1bit.png");
    must(test_write_png_palette(out_path("image", "palette-trns.png"), W, H, bits1, rgb, 2,
                                alpha), "palette-trns.png");
    must(test_write_png(out_path("image", "rgba.png"), W, H, 4, 8, px), "rgba.png");
    must(test_write_jpeg(out_path("image", "rgb.jpg"), W, H, 3, px, 80), "rgb.jpg");
    must(test_write_jpeg(out_path("image", "grey.jpg"), W, H, 1, px, 80), "grey.jpg");
    /* Cut inside the image data: the readers refuse what libjpeg would fill with grey. */
    write_bytes("image", "rgb-cut.jpg", seeds[5].bytes, seeds[5].size * 2 / 3);

    /* A folder of every seed, one in a subfolder, one hidden, one not an image by its
     * name, one broken, and a link back up; RGB of side 4, a quarter held out. */
    struct archive *a = calloc(1, sizeof *a);
    if (!a)
        fuzz_fail("out of memory");
    a->bytes[0] = 1 | (3 << 1);
    a->bytes[1] = 64;
    a->size = 2;
    char name[64];
    for (size_t i = 0; i < seed_count; i++) {
        snprintf(name, sizeof name, "%s%s", i == 3 ? "sub/" : "", seeds[i].name);
        add(a, name, seeds[i].bytes, seeds[i].size);
    }
    add(a, ".hidden.png", seeds[0].bytes, seeds[0].size);
    add(a, "notes.txt", (const unsigned char *)"text", 4);
    add(a, "broken.png", seeds[0].bytes, 20);
    add(a, "@sub/loop", NULL, 0);
    write_bytes("folder", "mixed.bin", a->bytes, a->size);
    /* Too few images for the held-out set and one batch: grey, side 1. */
    a->bytes[0] = 0;
    a->size = 2;
    add(a, "a.PNG", seeds[0].bytes, seeds[0].size);
    add(a, "b.jpeg", seeds[6].bytes, seeds[6].size);
    write_bytes("folder", "two.bin", a->bytes, a->size);
    free(a);
    for (size_t i = 0; i < seed_count; i++)
        free(seeds[i].bytes);
}
