/* SPDX-License-Identifier: MIT */
/* run_guard.c — the run folder's lock, the run's identity, and the leftovers of killed
 * processes. */
#include "config.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include "amp/underflow_probe.h"
#include "train/state/state.h"
#include "train/run/run_dir.h"
#include "train/run/run_guard.h"

/* ------------------------------------------------------------------ the lock */

struct gan_run_lock {
    int fd;
    char *path;
};

/* The pid a holder wrote into its lock file, or 0 when there is none yet (the holder
 * writes it just after taking the lock). */
static long holder_pid(int fd)
{
    char buf[32];
    ssize_t n = pread(fd, buf, sizeof buf - 1, 0);
    if (n <= 0)
        return 0;
    buf[n] = '\0';
    char *end;
    long pid = strtol(buf, &end, 10);
    return end != buf && (*end == '\n' || *end == '\0') && pid > 0 ? pid : 0;
}

static gan_status busy(const char *dir, const char *path, long pid, struct gan_error *err)
{
    if (pid > 0)
        return gan_error_set(err, GAN_ERR_IO,
                             "the run folder %s is in use: ganctl process %ld trains in it (it holds %s); wait for it to finish, or stop it with kill -TERM %ld",
                             dir, pid, path, pid);
    return gan_error_set(err, GAN_ERR_IO,
                         "the run folder %s is in use: another ganctl process trains in it (it holds %s); wait for it to finish",
                         dir, path);
}

gan_status gan_run_lock_take(const char *dir, gan_run_lock **out, struct gan_error *err)
{
    *out = NULL;
    char *path = gan_run_path(dir, GAN_RUN_LOCK);
    if (!path)
        return gan_error_nomem(err, "locking the run folder");
    /* A holder removes the file as it lets go, so the file opened here may have been
     * unlinked before the lock on it was granted: then the lock guards nothing and the
     * open starts again on the file now at the path. */
    for (int attempt = 0; attempt < 100; attempt++) {
        /* A run folder may come from elsewhere (a tarball of a run): a lock replaced by
         * a link is refused rather than followed, so that the pid written below never
         * lands in a file outside the folder; and only a plain file is written. */
        int fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK, 0666);
        if (fd < 0 && errno == ELOOP) {
            gan_status st = gan_error_set(err, GAN_ERR_CONFIG,
                                          "%s is a symbolic link: ganctl follows no link out of a run folder; remove it (the lock is made anew) and run again",
                                          path);
            free(path);
            return st;
        }
        if (fd < 0) {
            gan_status st = gan_error_set(err, GAN_ERR_IO,
                                          "cannot create %s to lock the run folder: %s: the run folder must be writable",
                                          path, strerror(errno));
            free(path);
            return st;
        }
        struct stat kind;
        if (fstat(fd, &kind) != 0 || !S_ISREG(kind.st_mode)) {
            close(fd);
            gan_status st = gan_error_set(err, GAN_ERR_CONFIG,
                                          "%s is not a regular file: ganctl locks a run folder with a plain file of that name; remove it and run again",
                                          path);
            free(path);
            return st;
        }
        if (flock(fd, LOCK_EX | LOCK_NB) != 0) {
            int e = errno;
            gan_status st = e == EWOULDBLOCK
                ? busy(dir, path, holder_pid(fd), err)
                : gan_error_set(err, GAN_ERR_IO,
                                "cannot lock %s: %s: put the run folder on a file system with flock(2)",
                                path, strerror(e));
            close(fd);
            free(path);
            return st;
        }
        struct stat held, named;
        if (fstat(fd, &held) == 0 && stat(path, &named) == 0 && held.st_dev == named.st_dev &&
            held.st_ino == named.st_ino) {
            char pid[32];
            int n = snprintf(pid, sizeof pid, "%ld\n", (long)getpid());
            /* The pid only tells a refused process whom to wait for: a failed write
             * leaves the lock as good, and the refusal then names no pid. */
            int written = ftruncate(fd, 0) == 0 && pwrite(fd, pid, (size_t)n, 0) == n;
            (void)written;
            gan_run_lock *lock = malloc(sizeof *lock);
            if (!lock) {
                close(fd);
                free(path);
                return gan_error_nomem(err, "locking the run folder");
            }
            lock->fd = fd;
            lock->path = path;
            *out = lock;
            return GAN_OK;
        }
        close(fd);
    }
    gan_status st = gan_error_set(err, GAN_ERR_IO,
                                  "cannot lock %s: it is removed and made again as fast as ganctl opens it: stop the other processes using the run folder",
                                  path);
    free(path);
    return st;
}

void gan_run_lock_release(gan_run_lock *lock)
{
    if (!lock)
        return;
    /* Removed while still held, so that no process can take the lock on a file that is
     * no longer the folder's. */
    unlink(lock->path);
    close(lock->fd);
    free(lock->path);
    free(lock);
}

/* ------------------------------------------------------------------ the identity */

gan_status gan_run_id_make(char id[GAN_RUN_ID_SIZE], struct gan_error *err)
{
    unsigned char bits[(GAN_RUN_ID_SIZE - 1) / 2];
    int fd = open("/dev/urandom", O_RDONLY | O_CLOEXEC);
    size_t got = 0;
    while (fd >= 0 && got < sizeof bits) {
        ssize_t n = read(fd, bits + got, sizeof bits - got);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            break;
        got += (size_t)n;
    }
    int e = errno;
    if (fd >= 0)
        close(fd);
    if (got < sizeof bits)
        return gan_error_set(err, GAN_ERR_IO,
                             "cannot read /dev/urandom for the new run's id (run.id): %s: ganctl needs the system's random source",
                             fd < 0 || got == 0 ? strerror(e) : "too few bytes");
    static const char hex[] = "0123456789abcdef";
    for (size_t i = 0; i < sizeof bits; i++) {
        id[2 * i] = hex[bits[i] >> 4];
        id[2 * i + 1] = hex[bits[i] & 15];
    }
    id[GAN_RUN_ID_SIZE - 1] = '\0';
    return GAN_OK;
}

/* The settings a network's parameter shapes follow from, besides data.name. */
static int is_shape_key(const char *key)
{
    return strcmp(key, "generator.z_dim") == 0 || strncmp(key, "generator.model.", 16) == 0 ||
           strncmp(key, "critic.model.", 13) == 0;
}

/* `key`'s value as a configuration file writes it, or `none`. */
static void value_text(const gan_config *cfg, const char *key, const char *none, char *buf,
                       size_t size)
{
    const struct gan_config_value *v = gan_config_find(cfg, key);
    if (v)
        gan_config_format_value(v, buf, size);
    else
        snprintf(buf, size, "%s", none);
}

/* GAN_OK when both configurations give `key` the same value (or neither has one). */
static gan_status same(const gan_config *folder, const char *folder_path, const gan_config *saved,
                       const char *saved_path, const char *key, const char *what,
                       struct gan_error *err)
{
    const char *none = strcmp(key, GAN_RUN_ID_KEY) == 0 ? "none (a run made before ganctl kept ids)"
                                                        : "no value";
    char a[512], b[512];
    value_text(folder, key, none, a, sizeof a);
    value_text(saved, key, none, b, sizeof b);
    if (strcmp(a, b) == 0)
        return GAN_OK;
    return gan_error_set(err, GAN_ERR_FORMAT,
                         "%s belongs to another run (%s): %s = %s in it, %s in %s; move it out of the run folder: it cannot continue this run",
                         saved_path, what, key, b, a, folder_path);
}

gan_status gan_run_check_identity(const gan_config *folder, const char *folder_path,
                                  const gan_config *saved, const char *saved_path,
                                  struct gan_error *err)
{
    /* What tells a person most comes first: the data set, the networks, then the id
     * that tells two otherwise equal runs apart. */
    gan_status st = same(folder, folder_path, saved, saved_path, "data.name", "another data set",
                         err);
    /* Every shape setting either side has: a plugin's default is written out in both. */
    const gan_config *sides[2] = { folder, saved };
    for (int s = 0; s < 2 && st == GAN_OK; s++)
        for (size_t i = 0; i < gan_config_count(sides[s]) && st == GAN_OK; i++) {
            const char *key = gan_config_at(sides[s], i)->key;
            if (is_shape_key(key))
                st = same(folder, folder_path, saved, saved_path, key, "other network shapes",
                          err);
        }
    if (st == GAN_OK)
        st = same(folder, folder_path, saved, saved_path, GAN_RUN_ID_KEY, "another identity",
                  err);
    return st;
}

/* ------------------------------------------------------------------ leftovers */

/* mkstemp's six characters: letters and digits. */
static int mkstemp_suffix(const char *s)
{
    if (strlen(s) != 6)
        return 0;
    for (; *s; s++)
        if (!((*s >= 'a' && *s <= 'z') || (*s >= 'A' && *s <= 'Z') || (*s >= '0' && *s <= '9')))
            return 0;
    return 1;
}

/* One or more decimal digits, then `stop` (which may be '\0'); the rest after it. */
static const char *digits_then(const char *s, char stop)
{
    const char *p = s;
    while (*p >= '0' && *p <= '9')
        p++;
    return p > s && *p == stop ? p + (stop ? 1 : 0) : NULL;
}

/* A picture a run writes: final.png, curves.png, an image run's real.png,
 * samples-NNNNNN.png. */
static int is_picture(const char *name, size_t len)
{
    static const char prefix[] = "samples-", suffix[] = ".png";
    if ((len == strlen(GAN_RUN_FINAL_IMAGE) && strncmp(name, GAN_RUN_FINAL_IMAGE, len) == 0) ||
        (len == strlen(GAN_RUN_CURVES) && strncmp(name, GAN_RUN_CURVES, len) == 0) ||
        (len == strlen(GAN_IMAGE_REAL_GRID) && strncmp(name, GAN_IMAGE_REAL_GRID, len) == 0))
        return 1;
    size_t np = sizeof prefix - 1, ns = sizeof suffix - 1;
    if (len < np + 6 + ns || strncmp(name, prefix, np) != 0 ||
        strncmp(name + len - ns, suffix, ns) != 0)
        return 0;
    for (size_t i = np; i < len - ns; i++)
        if (name[i] < '0' || name[i] > '9')
            return 0;
    return 1;
}

/* A text file a run writes whole (gan_file_write_atomic). */
static int is_text_file(const char *name, size_t len)
{
    static const char *const names[] = {
        GAN_RUN_CONFIG, GAN_RUN_METRICS, GAN_RUN_SUMMARY, GAN_RUN_GRAD_STATS, GAN_RUN_GRAD_UNDERFLOW,
    };
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
        if (len == strlen(names[i]) && strncmp(name, names[i], len) == 0)
            return 1;
    return 0;
}

int gan_run_is_leftover(const char *name)
{
    size_t len = strlen(name);
    if (name[0] != '.') {
        /* Earlier versions named a picture's temporary file visibly. */
        return len > 7 && name[len - 7] == '.' && mkstemp_suffix(name + len - 6) &&
               is_picture(name, len - 7);
    }
    const char *rest = name + 1;
    size_t rlen = len - 1;
    static const char checkpoint_tmp[] = GAN_RUN_CHECKPOINT ".tmp.";
    if (strncmp(rest, checkpoint_tmp, sizeof checkpoint_tmp - 1) == 0) {
        const char *serial = digits_then(rest + sizeof checkpoint_tmp - 1, '.');
        return serial && digits_then(serial, '\0') != NULL;
    }
    return rlen > 7 && rest[rlen - 7] == '.' && mkstemp_suffix(rest + rlen - 6) &&
           (is_text_file(rest, rlen - 7) || is_picture(rest, rlen - 7));
}

size_t gan_run_remove_leftovers(const char *dir, const struct gan_log *log)
{
    DIR *d = opendir(dir);
    if (!d)
        return 0;
    size_t removed = 0;
    struct dirent *e;
    while ((e = readdir(d)) != NULL) {
        if (!gan_run_is_leftover(e->d_name))
            continue;
        if (unlinkat(dirfd(d), e->d_name, 0) == 0) {
            removed++;
            gan_log_write(log, GAN_LOG_DEBUG, "removed %s/%s, left by a ganctl process that was killed while writing",
                          dir, e->d_name);
        } else {
            gan_log_write(log, GAN_LOG_WARN, "cannot remove %s/%s, left by a killed ganctl process: %s",
                          dir, e->d_name, strerror(errno));
        }
    }
    closedir(d);
    if (removed)
        gan_log_write(log, GAN_LOG_INFO,
                      "removed %zu temporary file%s that a killed ganctl process left in %s",
                      removed, removed == 1 ? "" : "s", dir);
    return removed;
}
