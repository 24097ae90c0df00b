/* SPDX-License-Identifier: MIT */
/* fuzz_folder.c — an image folder (core/data/image_folder.c) built from each input: its
 * listing (recursion, hidden names, suffixes, a symbolic link back up), its decoding and
 * skipping, its split and its sets' labels. The input is a small archive:
 *
 *   byte 0      the shape: bit 0 RGB (else grey), bits 1-3 the side − 1 (1 … 8)
 *   byte 1      data.holdout, as byte / 255
 *   then up to MAX_ENTRIES entries, each: a name length byte (at most MAX_NAME used), the
 *   name, a 2-byte little-endian content length (cut to what is left), the content.
 *
 * Names are made safe before use: bytes outside [A-Za-z0-9._-/] become '_', empty and
 * ".." components are dropped, so nothing is written outside the scratch folder; a name
 * that starts with '@' is a symbolic link to its own folder (a loop the listing must not
 * follow), not a file. An entry whose name is taken is left out. A refusal must name the
 * folder in one line; an acceptance must give sets whose sizes add up to the images read,
 * with the spec's shape, at least GAN_IMAGE_FOLDER_MIN_HOLDOUT held out, and no labels. */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>

#include "data/image_folder.h"
#include "fuzz.h"

#define MAX_ENTRIES 16
#define MAX_NAME 48

static char root[4096];

static int remove_one(const char *path, const struct stat *sb, int flag, struct FTW *ftw)
{
    (void)sb;
    (void)flag;
    if (ftw->level > 0 && remove(path) != 0)
        fuzz_fail("cannot remove %s: %s", path, strerror(errno));
    return 0;
}

static void remove_root(void)
{
    nftw(root, remove_one, 16, FTW_DEPTH | FTW_PHYS);
    rmdir(root);
}

/* The scratch folder, made on the first call and emptied on every later one. */
static void fresh_root(void)
{
    if (!root[0]) {
        const char *dir = getenv("TMPDIR");
        snprintf(root, sizeof root, "%s/ganctl-fuzz-folder.XXXXXX", dir && *dir ? dir : "/tmp");
        if (!mkdtemp(root))
            fuzz_fail("cannot make a scratch folder %s: %s", root, strerror(errno));
        atexit(remove_root);
        return;
    }
    if (nftw(root, remove_one, 16, FTW_DEPTH | FTW_PHYS) != 0)
        fuzz_fail("cannot empty %s", root);
}

static int image_suffix(const char *name)
{
    const char *dot = strrchr(name, '.');
    return dot && (strcasecmp(dot, ".png") == 0 || strcasecmp(dot, ".jpg") == 0
                   || strcasecmp(dot, ".jpeg") == 0);
}

/* `raw` (n bytes) as a safe relative path in `out`: "" when nothing is left. Sets
 * *hidden when a component starts with '.', which the listing leaves out. */
static void safe_name(const uint8_t *raw, size_t n, char *out, int *hidden)
{
    char name[MAX_NAME + 1];
    for (size_t i = 0; i < n; i++) {
        char c = (char)raw[i];
        int ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9')
                 || c == '.' || c == '_' || c == '-' || c == '/';
        name[i] = ok ? c : '_';
    }
    name[n] = '\0';
    *out = '\0';
    *hidden = 0;
    size_t len = 0;
    for (char *save = NULL, *part = strtok_r(name, "/", &save); part;
         part = strtok_r(NULL, "/", &save)) {
        if (strcmp(part, "..") == 0 || strcmp(part, ".") == 0)
            continue;
        if (part[0] == '.')
            *hidden = 1;
        len += (size_t)snprintf(out + len, MAX_NAME + 2 - len, "%s%s", len ? "/" : "", part);
    }
}

/* Makes the folders above root/rel; 0 when they are there. */
static int make_parents(const char *rel)
{
    char path[8192];
    snprintf(path, sizeof path, "%s/%s", root, rel);
    for (char *p = path + strlen(root) + 1; (p = strchr(p, '/')); p++) {
        *p = '\0';
        int rc = mkdir(path, 0700);
        *p = '/';
        if (rc != 0 && errno != EEXIST)
            return -1;
    }
    return 0;
}

/* Writes the entries; returns how many image files the listing should find. */
static size_t build_folder(const uint8_t *data, size_t size)
{
    size_t at = 2, images = 0;
    for (int e = 0; e < MAX_ENTRIES && at < size; e++) {
        size_t n = data[at++];
        size_t used = n < MAX_NAME ? n : MAX_NAME;
        if (at + n > size)
            break;
        const uint8_t *raw = data + at;
        at += n;
        size_t len = 0;
        if (at + 2 <= size) {
            len = (size_t)data[at] | (size_t)data[at + 1] << 8;
            at += 2;
        } else {
            at = size;
        }
        if (len > size - at)
            len = size - at;
        const uint8_t *content = data + at;
        at += len;
        int link = used > 0 && raw[0] == '@';
        char rel[MAX_NAME + 2], path[8192];
        int hidden;
        safe_name(raw + link, used - (size_t)link, rel, &hidden);
        if (!rel[0] || make_parents(rel) != 0)
            continue;
        snprintf(path, sizeof path, "%s/%s", root, rel);
        if (link) {
            (void)symlink(".", path);
            continue;
        }
        int fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
        if (fd < 0)
            continue;
        if (write(fd, content, len) != (ssize_t)len)
            fuzz_fail("cannot write %s: %s", path, strerror(errno));
        close(fd);
        if (!hidden && image_suffix(rel))
            images++;
    }
    return images;
}

static void check_set(const gan_image_set *set, const struct gan_image_folder_spec *spec,
                      const char *which)
{
    if (gan_image_set_channels(set) != spec->channels || gan_image_set_side(set) != spec->size)
        fuzz_fail("the %s set has %u channels of side %u, for %u and %u", which,
                  gan_image_set_channels(set), gan_image_set_side(set), spec->channels,
                  spec->size);
    size_t n = gan_image_set_count(set), d = gan_image_set_sample_size(set);
    for (size_t i = 0; i < n; i++) {
        if (gan_image_set_label(set, i) != -1)
            fuzz_fail("image %zu of the %s set has label %d", i, which,
                      gan_image_set_label(set, i));
        const unsigned char *px = gan_image_set_raw(set, i);
        size_t sum = 0;
        for (size_t k = 0; k < d; k++)
            sum += px[k];             /* every byte read, for the memory checkers */
        if (sum > d * 255)
            fuzz_fail("image %zu of the %s set sums to %zu", i, which, sum);
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 2)
        return 0;
    fresh_root();
    size_t images = build_folder(data, size);
    struct gan_image_folder_spec spec = {
        .dir = root,
        .channels = data[0] & 1 ? 3 : 1,
        .size = 1 + ((data[0] >> 1) & 7),
        .holdout = data[1] / 255.0,
    };
    gan_image_set *train = NULL, *test = NULL;
    struct gan_image_folder_report report;
    struct gan_error err;
    gan_error_clear(&err);
    gan_status st = gan_image_folder_load(&spec, NULL, &train, &test, &report, &err);
    if (report.files != images)
        fuzz_fail("listed %zu image files, %zu were written", report.files, images);
    if (report.skipped > report.files)
        fuzz_fail("skipped %zu of %zu files", report.skipped, report.files);
    if (report.skipped && !strstr(report.first_skipped, root))
        fuzz_fail("the first skipped file's reason does not name it: %s", report.first_skipped);
    if (st != GAN_OK) {
        if (st != GAN_ERR_NOT_FOUND && st != GAN_ERR_FORMAT && st != GAN_ERR_NOMEM)
            fuzz_fail("refused with status %s: %s", gan_status_string(st), err.message);
        if (!strstr(err.message, root))
            fuzz_fail("the message does not name the folder: %s", err.message);
        if (strchr(err.message, '\n'))
            fuzz_fail("the message spans lines: %s", err.message);
        if (train || test)
            fuzz_fail("refused, but a set is left");
        return 0;
    }
    size_t decoded = report.files - report.skipped;
    size_t n_train = gan_image_set_count(train), n_test = gan_image_set_count(test);
    if (n_train + n_test != decoded)
        fuzz_fail("%zu + %zu images in the sets, %zu decoded", n_train, n_test, decoded);
    if (n_test < GAN_IMAGE_FOLDER_MIN_HOLDOUT || n_train < 1)
        fuzz_fail("accepted a split of %zu training and %zu held-out images", n_train, n_test);
    check_set(train, &spec, "training");
    check_set(test, &spec, "held-out");
    gan_image_set_free(train);
    gan_image_set_free(test);
    return 0;
}
