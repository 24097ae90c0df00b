/* SPDX-License-Identifier: MIT */
/* replay.c — runs one harness without libFuzzer: each input, read from a file, goes to
 * the harness's LLVMFuzzerTestOneInput once. With no arguments it replays the target's
 * committed seeds (tests/fuzz/corpus/TARGET) and every input that once crashed it
 * (tests/fuzz/regressions/TARGET), which is how make check runs it; with arguments, the
 * files and folders named (a crash file from libFuzzer, say).
 *
 * GAN_FUZZ_TARGET names the target and GAN_FUZZ_SRCDIR is tests/fuzz in the source
 * tree (both set by tests/fuzz/fuzz.am). */
#include "config.h"

#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "fuzz.h"

/* One input, in an allocation of exactly its size, as libFuzzer passes it, so that a
 * memory checker sees a read past its end. */
static void replay_file(const char *path)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        fuzz_fail("%s: cannot open it: %s", path, strerror(errno));
    size_t cap = 4096, size = 0;
    unsigned char *buf = malloc(cap);
    if (!buf)
        fuzz_fail("%s: out of memory", path);
    size_t n;
    while ((n = fread(buf + size, 1, cap - size, f)) > 0) {
        size += n;
        if (size == cap) {
            unsigned char *grown = realloc(buf, cap *= 2);
            if (!grown)
                fuzz_fail("%s: out of memory", path);
            buf = grown;
        }
    }
    if (ferror(f))
        fuzz_fail("%s: cannot read it", path);
    fclose(f);
    unsigned char *exact = malloc(size ? size : 1);
    if (!exact)
        fuzz_fail("%s: out of memory", path);
    memcpy(exact, buf, size);
    free(buf);
    LLVMFuzzerTestOneInput(exact, size);
    free(exact);
}

static int by_name(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Every file of a folder (not its subfolders, nor names starting with '.'), in name
 * order so that a failure is reproducible. Returns how many; -1 when there is no such
 * folder. */
static long replay_dir(const char *dir)
{
    DIR *d = opendir(dir);
    if (!d)
        return -1;
    char **names = NULL;
    size_t count = 0, cap = 0;
    struct dirent *e;
    while ((e = readdir(d))) {
        if (e->d_name[0] == '.')
            continue;
        if (count == cap) {
            cap = cap ? 2 * cap : 64;
            char **grown = realloc(names, cap * sizeof *names);
            if (!grown)
                fuzz_fail("%s: out of memory", dir);
            names = grown;
        }
        size_t len = strlen(dir) + strlen(e->d_name) + 2;
        if (!(names[count] = malloc(len)))
            fuzz_fail("%s: out of memory", dir);
        snprintf(names[count], len, "%s/%s", dir, e->d_name);
        count++;
    }
    closedir(d);
    if (count)
        qsort(names, count, sizeof *names, by_name);
    long replayed = 0;
    for (size_t i = 0; i < count; i++) {
        struct stat sb;
        if (stat(names[i], &sb) == 0 && S_ISREG(sb.st_mode)) {
            replay_file(names[i]);
            replayed++;
        }
        free(names[i]);
    }
    free(names);
    return replayed;
}

static long replay_path(const char *path)
{
    struct stat sb;
    if (stat(path, &sb) != 0)
        fuzz_fail("%s: %s", path, strerror(errno));
    if (S_ISDIR(sb.st_mode)) {
        long n = replay_dir(path);
        if (n < 0)
            fuzz_fail("%s: cannot list the folder: %s", path, strerror(errno));
        return n;
    }
    replay_file(path);
    return 1;
}

int main(int argc, char **argv)
{
    if (argc > 1) {
        long total = 0;
        for (int i = 1; i < argc; i++)
            total += replay_path(argv[i]);
        printf("replay-%s: %ld inputs ran\n", GAN_FUZZ_TARGET, total);
        return 0;
    }
    const char *const dirs[2] = {
        GAN_FUZZ_SRCDIR "/corpus/" GAN_FUZZ_TARGET,
        GAN_FUZZ_SRCDIR "/regressions/" GAN_FUZZ_TARGET,
    };
    long seeds = replay_dir(dirs[0]);
    /* An empty or missing seed folder means the build looks in the wrong place: the
     * test would pass having run nothing. The regressions folder may not exist yet. */
    if (seeds <= 0)
        fuzz_fail("%s: %s", dirs[0], seeds < 0 ? "no such folder" : "holds no seed inputs");
    long regressions = replay_dir(dirs[1]);
    printf("replay-%s: %ld seeds from %s, %ld regressions from %s\n", GAN_FUZZ_TARGET, seeds,
           dirs[0], regressions < 0 ? 0 : regressions, dirs[1]);
    return 0;
}
