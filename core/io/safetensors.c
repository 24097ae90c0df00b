/* safetensors.c — the safetensors writer (atomic, byte-identical to the reference
 * implementation's output) and a reader that validates every header field before use. */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <jansson.h>

#include "io/safetensors.h"

/* ----------------------------------------------------------------- common */

static gan_status st_fail(char *err, size_t err_size, gan_status status, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

static gan_status st_fail(char *err, size_t err_size, gan_status status, const char *fmt, ...)
{
    if (err && err_size > 0) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(err, err_size, fmt, ap);
        va_end(ap);
    }
    return status;
}

static const struct {
    const char *name;
    size_t size;
} st_dtypes[GAN_ST_DTYPE_COUNT] = {
    [GAN_ST_BOOL] = { "BOOL", 1 },
    [GAN_ST_U8] = { "U8", 1 },
    [GAN_ST_I8] = { "I8", 1 },
    [GAN_ST_I16] = { "I16", 2 },
    [GAN_ST_U16] = { "U16", 2 },
    [GAN_ST_F16] = { "F16", 2 },
    [GAN_ST_BF16] = { "BF16", 2 },
    [GAN_ST_I32] = { "I32", 4 },
    [GAN_ST_U32] = { "U32", 4 },
    [GAN_ST_F32] = { "F32", 4 },
    [GAN_ST_F64] = { "F64", 8 },
    [GAN_ST_I64] = { "I64", 8 },
    [GAN_ST_U64] = { "U64", 8 },
};

size_t gan_st_dtype_size(enum gan_st_dtype dtype)
{
    return (unsigned)dtype < GAN_ST_DTYPE_COUNT ? st_dtypes[dtype].size : 0;
}

const char *gan_st_dtype_name(enum gan_st_dtype dtype)
{
    return (unsigned)dtype < GAN_ST_DTYPE_COUNT ? st_dtypes[dtype].name : NULL;
}

gan_status gan_st_dtype_parse(const char *name, enum gan_st_dtype *dtype)
{
    for (int i = 0; i < GAN_ST_DTYPE_COUNT; i++) {
        if (strcmp(name, st_dtypes[i].name) == 0) {
            *dtype = (enum gan_st_dtype)i;
            return GAN_OK;
        }
    }
    return GAN_ERR_NOT_FOUND;
}

enum gan_st_dtype gan_st_dtype_from_gan(enum gan_dtype dtype)
{
    switch (dtype) {
    case GAN_F32: return GAN_ST_F32;
    case GAN_F16: return GAN_ST_F16;
    case GAN_BF16: return GAN_ST_BF16;
    case GAN_I32: return GAN_ST_I32;
    case GAN_U32: return GAN_ST_U32;
    default: return GAN_ST_DTYPE_COUNT;
    }
}

/* Element count of a shape; 0 when it does not fit in 64 bits. A shape holding a 0
 * has no elements, and cannot overflow however large its other dimensions are. */
static int st_count(int ndim, const uint64_t *shape, uint64_t *count)
{
    uint64_t n = 1;
    int overflow = 0;
    for (int d = 0; d < ndim; d++) {
        if (shape[d] == 0) {
            *count = 0;
            return 1;
        }
        if (n > UINT64_MAX / shape[d])
            overflow = 1;
        else
            n *= shape[d];
    }
    if (overflow)
        return 0;
    *count = n;
    return 1;
}

/* "[512, 2]" into buf. */
static const char *st_shape_text(char *buf, size_t size, int ndim, const uint64_t *shape)
{
    size_t used = 0;
    buf[0] = '\0';
    used += (size_t)snprintf(buf, size, "[");
    for (int d = 0; d < ndim && used < size; d++)
        used += (size_t)snprintf(buf + used, size - used, "%s%" PRIu64, d ? ", " : "", shape[d]);
    if (used < size)
        snprintf(buf + used, size - used, "]");
    return buf;
}

/* A name as it can appear inside a one-line message: control bytes become '?' and a
 * very long name is shortened, since a corrupt file may hold anything there. */
static const char *st_printable(char *buf, size_t size, const char *text)
{
    size_t i = 0, limit = size - 1;
    const size_t shown = 120;
    if (limit > shown + 3)
        limit = shown + 3;
    for (; text[i] && i < limit; i++) {
        unsigned char c = (unsigned char)text[i];
        buf[i] = (c < 0x20 || c == 0x7f) ? '?' : (char)c;
    }
    if (text[i] && i >= 3) {
        memcpy(buf + i - 3, "...", 3);
    }
    buf[i] = '\0';
    return buf;
}

/* Strict UTF-8 (no overlongs, no surrogates, nothing above U+10FFFF), as JSON and the
 * reference reader (Rust's str) require. */
static int st_valid_utf8(const char *text)
{
    const unsigned char *s = (const unsigned char *)text;
    while (*s) {
        unsigned char c = *s;
        int extra;
        uint32_t cp;
        if (c < 0x80) {
            s++;
            continue;
        } else if ((c & 0xe0) == 0xc0) {
            extra = 1;
            cp = c & 0x1f;
        } else if ((c & 0xf0) == 0xe0) {
            extra = 2;
            cp = c & 0x0f;
        } else if ((c & 0xf8) == 0xf0) {
            extra = 3;
            cp = c & 0x07;
        } else {
            return 0;
        }
        for (int k = 1; k <= extra; k++) {
            if ((s[k] & 0xc0) != 0x80)
                return 0;
            cp = (cp << 6) | (s[k] & 0x3f);
        }
        if ((extra == 1 && cp < 0x80) || (extra == 2 && cp < 0x800) || (extra == 3 && cp < 0x10000)
            || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff))
            return 0;
        s += extra + 1;
    }
    return 1;
}

static char *st_strdup(const char *s)
{
    size_t n = strlen(s) + 1;
    char *copy = malloc(n);
    if (copy)
        memcpy(copy, s, n);
    return copy;
}

/* ----------------------------------------------------------------- writer */

struct st_wtensor {
    char *name;
    enum gan_st_dtype dtype;
    int ndim;
    uint64_t shape[GAN_ST_MAX_DIMS];
    const void *data;
    size_t nbytes;
};

struct st_meta {
    char *key;
    char *value;
};

struct gan_st_writer {
    struct st_wtensor *tensors;
    size_t count, capacity;
    struct st_meta *meta;
    size_t meta_count, meta_capacity;
};

gan_st_writer *gan_st_writer_new(void)
{
    return calloc(1, sizeof(struct gan_st_writer));
}

void gan_st_writer_free(gan_st_writer *w)
{
    if (!w)
        return;
    for (size_t i = 0; i < w->count; i++)
        free(w->tensors[i].name);
    for (size_t i = 0; i < w->meta_count; i++) {
        free(w->meta[i].key);
        free(w->meta[i].value);
    }
    free(w->tensors);
    free(w->meta);
    free(w);
}

/* Grows *array (of `elem` bytes each) so that it holds at least one more element. */
static int st_reserve(void **array, size_t *capacity, size_t count, size_t elem)
{
    if (count < *capacity)
        return 1;
    size_t cap = *capacity ? *capacity * 2 : 16;
    if (cap > SIZE_MAX / elem)
        return 0;
    void *grown = realloc(*array, cap * elem);
    if (!grown)
        return 0;
    *array = grown;
    *capacity = cap;
    return 1;
}

gan_status gan_st_writer_add(gan_st_writer *w, const char *name, enum gan_st_dtype dtype,
                             int ndim, const uint64_t *shape, const void *data, size_t nbytes,
                             char *err, size_t err_size)
{
    char shown[128], shape_text[256];
    if (!name || !name[0])
        return st_fail(err, err_size, GAN_ERR_INVALID,
                       "safetensors: a tensor name must not be empty");
    st_printable(shown, sizeof shown, name);
    if (strcmp(name, "__metadata__") == 0)
        return st_fail(err, err_size, GAN_ERR_INVALID,
                       "safetensors: \"__metadata__\" is reserved for the metadata; "
                       "choose another tensor name");
    if (!st_valid_utf8(name))
        return st_fail(err, err_size, GAN_ERR_INVALID,
                       "safetensors: tensor name \"%s\" is not valid UTF-8", shown);
    if (!gan_st_dtype_name(dtype))
        return st_fail(err, err_size, GAN_ERR_INVALID,
                       "safetensors: tensor \"%s\": dtype %d is not a safetensors dtype",
                       shown, (int)dtype);
    if (ndim < 0 || ndim > GAN_ST_MAX_DIMS || (ndim > 0 && !shape))
        return st_fail(err, err_size, GAN_ERR_INVALID,
                       "safetensors: tensor \"%s\": %d dimensions; between 0 and %d are supported",
                       shown, ndim, GAN_ST_MAX_DIMS);
    uint64_t count;
    st_shape_text(shape_text, sizeof shape_text, ndim, shape);
    if (!st_count(ndim, shape, &count) || count > UINT64_MAX / gan_st_dtype_size(dtype))
        return st_fail(err, err_size, GAN_ERR_INVALID,
                       "safetensors: tensor \"%s\": shape %s is too large", shown, shape_text);
    uint64_t expected = count * gan_st_dtype_size(dtype);
    if (expected != (uint64_t)nbytes)
        return st_fail(err, err_size, GAN_ERR_INVALID,
                       "safetensors: tensor \"%s\": %zu bytes of data given, but shape %s of %s "
                       "needs %" PRIu64, shown, nbytes, shape_text, gan_st_dtype_name(dtype),
                       expected);
    if (nbytes > 0 && !data)
        return st_fail(err, err_size, GAN_ERR_INVALID,
                       "safetensors: tensor \"%s\": data is NULL", shown);
    for (size_t i = 0; i < w->count; i++)
        if (strcmp(w->tensors[i].name, name) == 0)
            return st_fail(err, err_size, GAN_ERR_INVALID,
                           "safetensors: tensor \"%s\" was already added; names must be unique",
                           shown);
    if (!st_reserve((void **)&w->tensors, &w->capacity, w->count, sizeof *w->tensors))
        return st_fail(err, err_size, GAN_ERR_NOMEM,
                       "safetensors: out of memory adding tensor \"%s\"", shown);
    struct st_wtensor *t = &w->tensors[w->count];
    memset(t, 0, sizeof *t);
    t->name = st_strdup(name);
    if (!t->name)
        return st_fail(err, err_size, GAN_ERR_NOMEM,
                       "safetensors: out of memory adding tensor \"%s\"", shown);
    t->dtype = dtype;
    t->ndim = ndim;
    for (int d = 0; d < ndim; d++)
        t->shape[d] = shape[d];
    t->data = data;
    t->nbytes = nbytes;
    w->count++;
    return GAN_OK;
}

gan_status gan_st_writer_set_metadata(gan_st_writer *w, const char *key, const char *value,
                                      char *err, size_t err_size)
{
    char shown[128];
    if (!key || !value)
        return st_fail(err, err_size, GAN_ERR_INVALID,
                       "safetensors: a metadata key and value must not be NULL");
    st_printable(shown, sizeof shown, key);
    if (!st_valid_utf8(key) || !st_valid_utf8(value))
        return st_fail(err, err_size, GAN_ERR_INVALID,
                       "safetensors: metadata \"%s\": key and value must be valid UTF-8", shown);
    char *copy = st_strdup(value);
    if (!copy)
        return st_fail(err, err_size, GAN_ERR_NOMEM,
                       "safetensors: out of memory setting metadata \"%s\"", shown);
    for (size_t i = 0; i < w->meta_count; i++) {
        if (strcmp(w->meta[i].key, key) == 0) {
            free(w->meta[i].value);
            w->meta[i].value = copy;
            return GAN_OK;
        }
    }
    char *key_copy = st_strdup(key);
    if (!key_copy
        || !st_reserve((void **)&w->meta, &w->meta_capacity, w->meta_count, sizeof *w->meta)) {
        free(copy);
        free(key_copy);
        return st_fail(err, err_size, GAN_ERR_NOMEM,
                       "safetensors: out of memory setting metadata \"%s\"", shown);
    }
    w->meta[w->meta_count].key = key_copy;
    w->meta[w->meta_count].value = copy;
    w->meta_count++;
    return GAN_OK;
}

/* A growing byte string; `failed` sticks once an allocation fails. */
struct st_buf {
    char *bytes;
    size_t len, cap;
    int failed;
};

static void st_put(struct st_buf *b, const char *s, size_t n)
{
    if (b->failed)
        return;
    if (n > b->cap - b->len) {
        size_t cap = b->cap ? b->cap : 256;
        while (n > cap - b->len) {
            if (cap > SIZE_MAX / 2) {
                b->failed = 1;
                return;
            }
            cap *= 2;
        }
        char *grown = realloc(b->bytes, cap);
        if (!grown) {
            b->failed = 1;
            return;
        }
        b->bytes = grown;
        b->cap = cap;
    }
    memcpy(b->bytes + b->len, s, n);
    b->len += n;
}

static void st_puts(struct st_buf *b, const char *s)
{
    st_put(b, s, strlen(s));
}

static void st_putu(struct st_buf *b, uint64_t v)
{
    char text[24];
    int n = snprintf(text, sizeof text, "%" PRIu64, v);
    st_put(b, text, (size_t)n);
}

/* A JSON string escaped exactly as serde_json (the reference writer) escapes it: the two
 * mandatory escapes, the short forms \b \f \n \r \t, \u00xx in lower-case hex for the
 * other control bytes, and everything else (including '/', DEL and non-ASCII) verbatim. */
static void st_put_json_string(struct st_buf *b, const char *s)
{
    static const char hex[] = "0123456789abcdef";
    st_put(b, "\"", 1);
    for (; *s; s++) {
        unsigned char c = (unsigned char)*s;
        char esc[7];
        switch (c) {
        case '"': st_put(b, "\\\"", 2); break;
        case '\\': st_put(b, "\\\\", 2); break;
        case '\b': st_put(b, "\\b", 2); break;
        case '\f': st_put(b, "\\f", 2); break;
        case '\n': st_put(b, "\\n", 2); break;
        case '\r': st_put(b, "\\r", 2); break;
        case '\t': st_put(b, "\\t", 2); break;
        default:
            if (c < 0x20) {
                memcpy(esc, "\\u00", 4);
                esc[4] = hex[c >> 4];
                esc[5] = hex[c & 15];
                st_put(b, esc, 6);
            } else {
                st_put(b, (const char *)&c, 1);
            }
        }
    }
    st_put(b, "\"", 1);
}

/* The reference layout: descending dtype (in the enum's order), then name, bytewise. */
static int st_cmp_layout(const void *pa, const void *pb)
{
    const struct st_wtensor *a = *(const struct st_wtensor *const *)pa;
    const struct st_wtensor *b = *(const struct st_wtensor *const *)pb;
    if (a->dtype != b->dtype)
        return a->dtype > b->dtype ? -1 : 1;
    return strcmp(a->name, b->name);
}

static int st_cmp_meta(const void *pa, const void *pb)
{
    const struct st_meta *a = pa, *b = pb;
    return strcmp(a->key, b->key);
}

/* Builds the padded header into `b` and the layout order into `order`. */
static gan_status st_build_header(gan_st_writer *w, const struct st_wtensor **order,
                                  struct st_buf *b, char *err, size_t err_size, const char *path)
{
    for (size_t i = 0; i < w->count; i++)
        order[i] = &w->tensors[i];
    qsort(order, w->count, sizeof *order, st_cmp_layout);
    if (w->meta_count > 1)
        qsort(w->meta, w->meta_count, sizeof *w->meta, st_cmp_meta);

    int first = 1;
    st_put(b, "{", 1);
    if (w->meta_count > 0) {
        st_puts(b, "\"__metadata__\":{");
        for (size_t i = 0; i < w->meta_count; i++) {
            if (i)
                st_put(b, ",", 1);
            st_put_json_string(b, w->meta[i].key);
            st_put(b, ":", 1);
            st_put_json_string(b, w->meta[i].value);
        }
        st_put(b, "}", 1);
        first = 0;
    }
    uint64_t offset = 0;
    for (size_t i = 0; i < w->count; i++) {
        const struct st_wtensor *t = order[i];
        if (!first)
            st_put(b, ",", 1);
        first = 0;
        st_put_json_string(b, t->name);
        st_puts(b, ":{\"dtype\":\"");
        st_puts(b, gan_st_dtype_name(t->dtype));
        st_puts(b, "\",\"shape\":[");
        for (int d = 0; d < t->ndim; d++) {
            if (d)
                st_put(b, ",", 1);
            st_putu(b, t->shape[d]);
        }
        st_puts(b, "],\"data_offsets\":[");
        st_putu(b, offset);
        st_put(b, ",", 1);
        if ((uint64_t)t->nbytes > UINT64_MAX - offset)
            return st_fail(err, err_size, GAN_ERR_INVALID,
                           "%s: the tensors hold more than 2^64 bytes together", path);
        offset += t->nbytes;
        st_putu(b, offset);
        st_puts(b, "]}");
    }
    st_put(b, "}", 1);
    /* Spaces, so that the data (after the 8-byte length) starts 8-byte aligned. */
    while (!b->failed && b->len % 8 != 0)
        st_put(b, " ", 1);
    if (b->failed)
        return st_fail(err, err_size, GAN_ERR_NOMEM,
                       "%s: out of memory building the safetensors header", path);
    if ((uint64_t)b->len > GAN_ST_MAX_HEADER)
        return st_fail(err, err_size, GAN_ERR_INVALID,
                       "%s: the header would be %zu bytes, over the %" PRIu64 "-byte limit "
                       "readers accept; use fewer or shorter names and metadata",
                       path, b->len, GAN_ST_MAX_HEADER);
    return GAN_OK;
}

static int st_write_all(int fd, const void *data, size_t n)
{
    const char *p = data;
    while (n > 0) {
        size_t chunk = n > ((size_t)1 << 30) ? ((size_t)1 << 30) : n;
        ssize_t done = write(fd, p, chunk);
        if (done < 0) {
            if (errno == EINTR)
                continue;
            return 0;
        }
        if (done == 0) {
            errno = EIO;
            return 0;
        }
        p += done;
        n -= (size_t)done;
    }
    return 1;
}

/* Distinguishes temporary files of concurrent writes by one process. */
static atomic_uint st_temp_serial;

gan_status gan_st_writer_write(gan_st_writer *w, const char *path, char *err, size_t err_size)
{
    gan_status status = GAN_OK;
    const struct st_wtensor **order = NULL;
    struct st_buf header = { 0 };
    char *dir = NULL, *temp = NULL;
    int fd = -1;

    if (!path || !path[0])
        return st_fail(err, err_size, GAN_ERR_INVALID, "safetensors: no output path given");
    const char *slash = strrchr(path, '/');
    const char *base = slash ? slash + 1 : path;
    if (!base[0] || strcmp(base, ".") == 0 || strcmp(base, "..") == 0)
        return st_fail(err, err_size, GAN_ERR_INVALID,
                       "%s: names a folder, not a file; add a file name", path);

    order = malloc((w->count ? w->count : 1) * sizeof *order);
    size_t dir_len = slash ? (size_t)(slash - path) : 1;
    dir = malloc(dir_len + 2);
    size_t temp_size = strlen(path) + 64;
    temp = malloc(temp_size);
    if (!order || !dir || !temp) {
        status = st_fail(err, err_size, GAN_ERR_NOMEM, "%s: out of memory", path);
        goto done;
    }
    if (!slash)
        strcpy(dir, ".");
    else if (slash == path)
        strcpy(dir, "/");
    else {
        memcpy(dir, path, dir_len);
        dir[dir_len] = '\0';
    }

    status = st_build_header(w, order, &header, err, err_size, path);
    if (status != GAN_OK)
        goto done;

    /* The temporary file sits next to the target so that rename(2) replaces the target
     * in one step; O_EXCL with a per-call name keeps concurrent writers apart. Mode 0666
     * lets the umask decide, as for any other new file. */
    for (int attempt = 0; fd < 0; attempt++) {
        unsigned serial = atomic_fetch_add(&st_temp_serial, 1u);
        /* "dir/.name.tmp.PID.N": the leading dot hides it from globs like *.safetensors. */
        snprintf(temp, temp_size, "%.*s.%s.tmp.%ld.%u", (int)(base - path), path, base,
                 (long)getpid(), serial);
        fd = open(temp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
        if (fd < 0 && (errno != EEXIST || attempt >= 100)) {
            status = st_fail(err, err_size, errno == ENOENT ? GAN_ERR_NOT_FOUND : GAN_ERR_IO,
                             "%s: cannot create a temporary file in %s: %s", path, dir,
                             strerror(errno));
            goto done;
        }
    }

    unsigned char length[8];
    for (int i = 0; i < 8; i++)
        length[i] = (unsigned char)((uint64_t)header.len >> (8 * i));
    int ok = st_write_all(fd, length, sizeof length) && st_write_all(fd, header.bytes, header.len);
    for (size_t i = 0; ok && i < w->count; i++)
        ok = st_write_all(fd, order[i]->data, order[i]->nbytes);
    if (!ok) {
        status = st_fail(err, err_size, GAN_ERR_IO, "%s: writing %s failed: %s", path, temp,
                         strerror(errno));
        goto done;
    }
    if (fsync(fd) != 0) {
        status = st_fail(err, err_size, GAN_ERR_IO, "%s: fsync of %s failed: %s", path, temp,
                         strerror(errno));
        goto done;
    }
    int closed = close(fd);
    fd = -1;
    if (closed != 0) {
        status = st_fail(err, err_size, GAN_ERR_IO, "%s: closing %s failed: %s", path, temp,
                         strerror(errno));
        goto done;
    }
    if (rename(temp, path) != 0) {
        status = st_fail(err, err_size, GAN_ERR_IO, "%s: cannot rename %s over it: %s", path,
                         temp, strerror(errno));
        goto done;
    }
    temp[0] = '\0'; /* renamed: nothing left to remove */

    /* The rename is durable only once the folder's entry is on disk. A file system that
     * cannot sync folders says EINVAL; that is no reason to fail the checkpoint. */
    int dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (dfd < 0 || (fsync(dfd) != 0 && errno != EINVAL)) {
        status = st_fail(err, err_size, GAN_ERR_IO,
                         "%s: written, but syncing folder %s failed (%s): the new file may not "
                         "survive a crash", path, dir, strerror(errno));
    }
    if (dfd >= 0)
        close(dfd);

done:
    if (fd >= 0)
        close(fd);
    if (temp && temp[0] && status != GAN_OK)
        unlink(temp);
    free(header.bytes);
    free(order);
    free(dir);
    free(temp);
    return status;
}

/* ----------------------------------------------------------------- reader */

struct gan_st_file {
    char *label;
    unsigned char *owned;        /* the file's bytes, when gan_st_open read them */
    struct gan_st_tensor *tensors;
    size_t count;
    size_t *by_name;             /* indices into tensors, sorted by name */
    struct st_meta *meta;        /* sorted by key */
    size_t meta_count;
};

void gan_st_close(gan_st_file *f)
{
    if (!f)
        return;
    for (size_t i = 0; i < f->count; i++)
        free((char *)f->tensors[i].name);
    for (size_t i = 0; i < f->meta_count; i++) {
        free(f->meta[i].key);
        free(f->meta[i].value);
    }
    free(f->tensors);
    free(f->by_name);
    free(f->meta);
    free(f->owned);
    free(f->label);
    free(f);
}

static const char *st_json_kind(const json_t *v)
{
    switch (json_typeof(v)) {
    case JSON_OBJECT: return "an object";
    case JSON_ARRAY: return "an array";
    case JSON_STRING: return "a string";
    case JSON_INTEGER: return "an integer";
    case JSON_REAL: return "a non-integer number";
    case JSON_TRUE: case JSON_FALSE: return "a boolean";
    case JSON_NULL: return "null";
    }
    return "an unknown value";
}

/* Reads one header entry into t (name not yet set). */
static gan_status st_parse_entry(const char *label, const char *name, json_t *entry,
                                 uint64_t data_len, struct gan_st_tensor *t,
                                 char *err, size_t err_size)
{
    char shown[128], shape_text[256];
    st_printable(shown, sizeof shown, name);
    if (!json_is_object(entry))
        return st_fail(err, err_size, GAN_ERR_FORMAT,
                       "%s: tensor \"%s\": entry is %s, not an object with dtype, shape and "
                       "data_offsets", label, shown, st_json_kind(entry));
    const char *field;
    json_t *value;
    json_object_foreach(entry, field, value) {
        if (strcmp(field, "dtype") && strcmp(field, "shape") && strcmp(field, "data_offsets")) {
            char field_shown[128];
            return st_fail(err, err_size, GAN_ERR_FORMAT,
                           "%s: tensor \"%s\": unknown field \"%s\" (expected dtype, shape and "
                           "data_offsets)", label, shown,
                           st_printable(field_shown, sizeof field_shown, field));
        }
    }

    json_t *dtype = json_object_get(entry, "dtype");
    if (!dtype)
        return st_fail(err, err_size, GAN_ERR_FORMAT, "%s: tensor \"%s\": no dtype", label, shown);
    if (!json_is_string(dtype))
        return st_fail(err, err_size, GAN_ERR_FORMAT,
                       "%s: tensor \"%s\": dtype is %s, not a string", label, shown,
                       st_json_kind(dtype));
    if (gan_st_dtype_parse(json_string_value(dtype), &t->dtype) != GAN_OK) {
        char dtype_shown[64];
        return st_fail(err, err_size, GAN_ERR_UNSUPPORTED,
                       "%s: tensor \"%s\": unknown dtype \"%s\" (this reader knows BOOL, U8, I8, "
                       "I16, U16, F16, BF16, I32, U32, F32, F64, I64, U64)", label, shown,
                       st_printable(dtype_shown, sizeof dtype_shown, json_string_value(dtype)));
    }

    json_t *shape = json_object_get(entry, "shape");
    if (!shape)
        return st_fail(err, err_size, GAN_ERR_FORMAT, "%s: tensor \"%s\": no shape", label, shown);
    if (!json_is_array(shape))
        return st_fail(err, err_size, GAN_ERR_FORMAT,
                       "%s: tensor \"%s\": shape is %s, not an array", label, shown,
                       st_json_kind(shape));
    if (json_array_size(shape) > GAN_ST_MAX_DIMS)
        return st_fail(err, err_size, GAN_ERR_UNSUPPORTED,
                       "%s: tensor \"%s\": shape has %zu dimensions; at most %d are supported",
                       label, shown, json_array_size(shape), GAN_ST_MAX_DIMS);
    t->ndim = (int)json_array_size(shape);
    for (int d = 0; d < t->ndim; d++) {
        json_t *dim = json_array_get(shape, (size_t)d);
        if (!json_is_integer(dim) || json_integer_value(dim) < 0)
            return st_fail(err, err_size, GAN_ERR_FORMAT,
                           "%s: tensor \"%s\": shape entry %d is %s, not a non-negative integer",
                           label, shown, d, json_is_integer(dim) ? "negative" : st_json_kind(dim));
        t->shape[d] = (uint64_t)json_integer_value(dim);
    }
    st_shape_text(shape_text, sizeof shape_text, t->ndim, t->shape);

    json_t *offsets = json_object_get(entry, "data_offsets");
    if (!offsets)
        return st_fail(err, err_size, GAN_ERR_FORMAT, "%s: tensor \"%s\": no data_offsets",
                       label, shown);
    uint64_t range[2];
    if (!json_is_array(offsets) || json_array_size(offsets) != 2)
        return st_fail(err, err_size, GAN_ERR_FORMAT,
                       "%s: tensor \"%s\": data_offsets must be an array [begin, end]",
                       label, shown);
    for (size_t k = 0; k < 2; k++) {
        json_t *v = json_array_get(offsets, k);
        if (!json_is_integer(v) || json_integer_value(v) < 0)
            return st_fail(err, err_size, GAN_ERR_FORMAT,
                           "%s: tensor \"%s\": data_offsets %s is %s, not a non-negative integer",
                           label, shown, k ? "end" : "begin",
                           json_is_integer(v) ? "negative" : st_json_kind(v));
        range[k] = (uint64_t)json_integer_value(v);
    }
    if (range[1] < range[0])
        return st_fail(err, err_size, GAN_ERR_FORMAT,
                       "%s: tensor \"%s\": data_offsets [%" PRIu64 ", %" PRIu64 "] end before "
                       "they begin", label, shown, range[0], range[1]);

    size_t esize = gan_st_dtype_size(t->dtype);
    if (!st_count(t->ndim, t->shape, &t->count) || t->count > UINT64_MAX / esize)
        return st_fail(err, err_size, GAN_ERR_FORMAT,
                       "%s: tensor \"%s\": shape %s of %s holds more bytes than fit in 64 bits",
                       label, shown, shape_text, gan_st_dtype_name(t->dtype));
    uint64_t bytes = t->count * esize;
    if (range[1] - range[0] != bytes)
        return st_fail(err, err_size, GAN_ERR_FORMAT,
                       "%s: tensor \"%s\": data_offsets [%" PRIu64 ", %" PRIu64 "] do not match "
                       "shape %s of %s (%" PRIu64 " bytes)", label, shown, range[0], range[1],
                       shape_text, gan_st_dtype_name(t->dtype), bytes);
    if (range[1] > data_len)
        return st_fail(err, err_size, GAN_ERR_FORMAT,
                       "%s: tensor \"%s\": data_offsets [%" PRIu64 ", %" PRIu64 "] run past the "
                       "end of the data section (%" PRIu64 " bytes); the file is truncated?",
                       label, shown, range[0], range[1], data_len);
    t->begin = range[0];
    t->nbytes = (size_t)bytes;
    return GAN_OK;
}

static gan_status st_parse_metadata(const char *label, json_t *meta, gan_st_file *f,
                                    char *err, size_t err_size)
{
    char shown[128];
    if (json_is_null(meta))
        return GAN_OK; /* the reference reader reads null as "no metadata" */
    if (!json_is_object(meta))
        return st_fail(err, err_size, GAN_ERR_FORMAT,
                       "%s: __metadata__ is %s, not an object of strings", label,
                       st_json_kind(meta));
    size_t n = json_object_size(meta);
    f->meta = calloc(n ? n : 1, sizeof *f->meta);
    if (!f->meta)
        return st_fail(err, err_size, GAN_ERR_NOMEM, "%s: out of memory reading metadata", label);
    const char *key;
    json_t *value;
    json_object_foreach(meta, key, value) {
        if (!json_is_string(value))
            return st_fail(err, err_size, GAN_ERR_FORMAT,
                           "%s: metadata \"%s\" is %s, not a string", label,
                           st_printable(shown, sizeof shown, key), st_json_kind(value));
        char *key_copy = st_strdup(key);
        char *value_copy = st_strdup(json_string_value(value));
        if (!key_copy || !value_copy) {
            free(key_copy);
            free(value_copy);
            return st_fail(err, err_size, GAN_ERR_NOMEM, "%s: out of memory reading metadata",
                           label);
        }
        f->meta[f->meta_count].key = key_copy;
        f->meta[f->meta_count].value = value_copy;
        f->meta_count++;
    }
    qsort(f->meta, f->meta_count, sizeof *f->meta, st_cmp_meta);
    return GAN_OK;
}

/* File order: by offsets, then (for empty tensors at one offset) by name. */
static int st_cmp_offsets(const void *pa, const void *pb)
{
    const struct gan_st_tensor *a = pa, *b = pb;
    if (a->begin != b->begin)
        return a->begin < b->begin ? -1 : 1;
    if (a->nbytes != b->nbytes)
        return a->nbytes < b->nbytes ? -1 : 1;
    return strcmp(a->name, b->name);
}

/* qsort has no context argument; by-name sorting goes through this pair instead. */
struct st_name_ref {
    const char *name;
    size_t index;
};

static int st_cmp_name_ref(const void *pa, const void *pb)
{
    const struct st_name_ref *a = pa, *b = pb;
    return strcmp(a->name, b->name);
}

/* The data section must be tiled exactly: the reference reader requires it, and it means
 * no tensor can alias another or hide bytes between them. */
static gan_status st_check_layout(const char *label, const gan_st_file *f, uint64_t data_len,
                                  char *err, size_t err_size)
{
    char a_shown[128], b_shown[128];
    uint64_t cursor = 0;
    const struct gan_st_tensor *last = NULL; /* the tensor that ends at cursor */
    for (size_t i = 0; i < f->count; i++) {
        const struct gan_st_tensor *t = &f->tensors[i];
        uint64_t end = t->begin + t->nbytes;
        if (t->begin < cursor)
            return st_fail(err, err_size, GAN_ERR_FORMAT,
                           "%s: tensor \"%s\": data_offsets [%" PRIu64 ", %" PRIu64 "] overlap "
                           "tensor \"%s\" [%" PRIu64 ", %" PRIu64 "]", label,
                           st_printable(a_shown, sizeof a_shown, t->name), t->begin, end,
                           st_printable(b_shown, sizeof b_shown, last->name), last->begin,
                           last->begin + last->nbytes);
        if (t->begin > cursor) {
            if (last)
                return st_fail(err, err_size, GAN_ERR_FORMAT,
                               "%s: bytes [%" PRIu64 ", %" PRIu64 ") of the data section belong "
                               "to no tensor (between tensor \"%s\" and tensor \"%s\")", label,
                               cursor, t->begin, st_printable(a_shown, sizeof a_shown, last->name),
                               st_printable(b_shown, sizeof b_shown, t->name));
            return st_fail(err, err_size, GAN_ERR_FORMAT,
                           "%s: bytes [0, %" PRIu64 ") of the data section belong to no tensor "
                           "(before tensor \"%s\")", label, t->begin,
                           st_printable(a_shown, sizeof a_shown, t->name));
        }
        if (t->nbytes > 0 || !last) {
            last = t;
        }
        cursor = end;
    }
    if (cursor != data_len)
        return st_fail(err, err_size, GAN_ERR_FORMAT,
                       "%s: the data section is %" PRIu64 " bytes but the tensors end at byte "
                       "%" PRIu64 "; the %" PRIu64 " bytes after it belong to no tensor", label,
                       data_len, cursor, data_len - cursor);
    return GAN_OK;
}

/* Parses `size` bytes at `bytes`; *out is set on success. `owned` (may be NULL) is the
 * allocation holding them, taken over by the result (and freed on failure). */
static gan_status st_parse(const unsigned char *bytes, size_t size, unsigned char *owned,
                           const char *label, gan_st_file **out, char *err, size_t err_size)
{
    gan_status status = GAN_OK;
    json_t *root = NULL;
    *out = NULL;

    gan_st_file *f = calloc(1, sizeof *f);
    if (!f || !(f->label = st_strdup(label))) {
        free(f);
        free(owned);
        return st_fail(err, err_size, GAN_ERR_NOMEM, "%s: out of memory", label);
    }
    f->owned = owned;

    if (size < 8) {
        status = st_fail(err, err_size, GAN_ERR_FORMAT,
                         "%s: %zu bytes is too short for a safetensors file, which starts with "
                         "an 8-byte header length", label, size);
        goto fail;
    }
    uint64_t n = 0;
    for (int i = 7; i >= 0; i--)
        n = (n << 8) | bytes[i];
    if (n > GAN_ST_MAX_HEADER) {
        status = st_fail(err, err_size, GAN_ERR_FORMAT,
                         "%s: header length %" PRIu64 " is over the %" PRIu64 "-byte limit; not "
                         "a safetensors file, or a corrupt one", label, n, GAN_ST_MAX_HEADER);
        goto fail;
    }
    if (n > (uint64_t)(size - 8)) {
        status = st_fail(err, err_size, GAN_ERR_FORMAT,
                         "%s: header length %" PRIu64 " runs past the end of the file (%zu bytes "
                         "follow the length field); the file is truncated", label, n, size - 8);
        goto fail;
    }
    uint64_t data_len = (uint64_t)(size - 8) - n;
    const unsigned char *data = bytes + 8 + n;

    json_error_t jerr;
    root = json_loadb((const char *)bytes + 8, (size_t)n, JSON_REJECT_DUPLICATES, &jerr);
    if (!root) {
        status = st_fail(err, err_size, GAN_ERR_FORMAT,
                         "%s: the header is not valid JSON: %s (header byte %d)", label,
                         jerr.text, jerr.position);
        goto fail;
    }
    if (!json_is_object(root)) {
        status = st_fail(err, err_size, GAN_ERR_FORMAT,
                         "%s: the header is %s, not a JSON object", label, st_json_kind(root));
        goto fail;
    }

    size_t entries = json_object_size(root);
    f->tensors = calloc(entries ? entries : 1, sizeof *f->tensors);
    if (!f->tensors) {
        status = st_fail(err, err_size, GAN_ERR_NOMEM, "%s: out of memory", label);
        goto fail;
    }
    const char *key;
    json_t *value;
    json_object_foreach(root, key, value) {
        if (strcmp(key, "__metadata__") == 0) {
            status = st_parse_metadata(label, value, f, err, err_size);
            if (status != GAN_OK)
                goto fail;
            continue;
        }
        struct gan_st_tensor *t = &f->tensors[f->count];
        status = st_parse_entry(label, key, value, data_len, t, err, err_size);
        if (status != GAN_OK)
            goto fail;
        t->name = st_strdup(key);
        if (!t->name) {
            status = st_fail(err, err_size, GAN_ERR_NOMEM, "%s: out of memory", label);
            goto fail;
        }
        t->data = data + t->begin;
        f->count++;
    }

    qsort(f->tensors, f->count, sizeof *f->tensors, st_cmp_offsets);
    status = st_check_layout(label, f, data_len, err, err_size);
    if (status != GAN_OK)
        goto fail;

    struct st_name_ref *refs = malloc((f->count ? f->count : 1) * sizeof *refs);
    f->by_name = malloc((f->count ? f->count : 1) * sizeof *f->by_name);
    if (!refs || !f->by_name) {
        free(refs);
        status = st_fail(err, err_size, GAN_ERR_NOMEM, "%s: out of memory", label);
        goto fail;
    }
    for (size_t i = 0; i < f->count; i++) {
        refs[i].name = f->tensors[i].name;
        refs[i].index = i;
    }
    qsort(refs, f->count, sizeof *refs, st_cmp_name_ref);
    for (size_t i = 0; i < f->count; i++)
        f->by_name[i] = refs[i].index;
    free(refs);

    json_decref(root);
    *out = f;
    return GAN_OK;

fail:
    json_decref(root);
    gan_st_close(f);
    return status;
}

gan_status gan_st_parse(const void *bytes, size_t size, const char *label, gan_st_file **out,
                        char *err, size_t err_size)
{
    if (!bytes && size > 0)
        return st_fail(err, err_size, GAN_ERR_INVALID, "%s: no bytes given", label);
    static const unsigned char none[1];
    return st_parse(bytes ? bytes : none, size, NULL, label ? label : "safetensors", out,
                    err, err_size);
}

gan_status gan_st_open(const char *path, gan_st_file **out, char *err, size_t err_size)
{
    *out = NULL;
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return st_fail(err, err_size, errno == ENOENT ? GAN_ERR_NOT_FOUND : GAN_ERR_IO,
                       "%s: cannot open: %s", path, strerror(errno));
    struct stat st;
    if (fstat(fd, &st) != 0) {
        int e = errno;
        close(fd);
        return st_fail(err, err_size, GAN_ERR_IO, "%s: cannot stat: %s", path, strerror(e));
    }
    if (!S_ISREG(st.st_mode)) {
        close(fd);
        return st_fail(err, err_size, GAN_ERR_IO, "%s: not a regular file", path);
    }
    if ((uint64_t)st.st_size > (uint64_t)SIZE_MAX - 16) {
        close(fd);
        return st_fail(err, err_size, GAN_ERR_NOMEM,
                       "%s: %jd bytes do not fit in this process's memory", path,
                       (intmax_t)st.st_size);
    }
    size_t size = (size_t)st.st_size;

    /* Peek at the header length so that the data section can be placed 8-byte aligned
     * in memory, wherever the header ends. A bad length is reported by st_parse. */
    size_t shift = 0;
    unsigned char head[8];
    if (size >= 8 && pread(fd, head, 8, 0) == 8) {
        uint64_t n = 0;
        for (int i = 7; i >= 0; i--)
            n = (n << 8) | head[i];
        shift = (size_t)((8 - (n % 8)) % 8);
    }
    unsigned char *buf = malloc(size + shift + 1);
    if (!buf) {
        close(fd);
        return st_fail(err, err_size, GAN_ERR_NOMEM,
                       "%s: out of memory reading %zu bytes", path, size);
    }
    size_t got = 0;
    while (got < size) {
        ssize_t r = pread(fd, buf + shift + got, size - got, (off_t)got);
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0) {
            int e = r < 0 ? errno : 0;
            close(fd);
            free(buf);
            if (r == 0)
                return st_fail(err, err_size, GAN_ERR_IO,
                               "%s: the file shrank from %zu to %zu bytes while being read", path,
                               size, got);
            return st_fail(err, err_size, GAN_ERR_IO, "%s: read failed: %s", path, strerror(e));
        }
        got += (size_t)r;
    }
    close(fd);
    return st_parse(buf + shift, size, buf, path, out, err, err_size);
}

/* ----------------------------------------------------------------- queries */

size_t gan_st_count(const gan_st_file *f)
{
    return f->count;
}

const struct gan_st_tensor *gan_st_tensor_at(const gan_st_file *f, size_t index)
{
    return index < f->count ? &f->tensors[index] : NULL;
}

const struct gan_st_tensor *gan_st_find(const gan_st_file *f, const char *name)
{
    size_t lo = 0, hi = f->count;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        const struct gan_st_tensor *t = &f->tensors[f->by_name[mid]];
        int c = strcmp(name, t->name);
        if (c == 0)
            return t;
        if (c < 0)
            hi = mid;
        else
            lo = mid + 1;
    }
    return NULL;
}

gan_status gan_st_expect(const gan_st_file *f, const char *name, enum gan_st_dtype dtype,
                         int ndim, const uint64_t *shape, const struct gan_st_tensor **out,
                         char *err, size_t err_size)
{
    char shown[128], want[256], have[256];
    const struct gan_st_tensor *t = gan_st_find(f, name);
    *out = NULL;
    st_printable(shown, sizeof shown, name);
    if (!t)
        return st_fail(err, err_size, GAN_ERR_NOT_FOUND,
                       "%s: no tensor \"%s\" (the file holds %zu tensors)", f->label, shown,
                       f->count);
    int same = t->dtype == dtype && t->ndim == ndim;
    for (int d = 0; same && d < ndim; d++)
        same = t->shape[d] == shape[d];
    if (!same) {
        if (ndim < 0 || ndim > GAN_ST_MAX_DIMS)
            ndim = 0;
        return st_fail(err, err_size, GAN_ERR_FORMAT,
                       "%s: tensor \"%s\" is %s %s, expected %s %s", f->label, shown,
                       gan_st_dtype_name(t->dtype),
                       st_shape_text(have, sizeof have, t->ndim, t->shape),
                       gan_st_dtype_name(dtype) ? gan_st_dtype_name(dtype) : "?",
                       st_shape_text(want, sizeof want, ndim, shape));
    }
    *out = t;
    return GAN_OK;
}

size_t gan_st_metadata_count(const gan_st_file *f)
{
    return f->meta_count;
}

void gan_st_metadata_at(const gan_st_file *f, size_t index, const char **key, const char **value)
{
    *key = index < f->meta_count ? f->meta[index].key : NULL;
    *value = index < f->meta_count ? f->meta[index].value : NULL;
}

const char *gan_st_metadata_get(const gan_st_file *f, const char *key)
{
    size_t lo = 0, hi = f->meta_count;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        int c = strcmp(key, f->meta[mid].key);
        if (c == 0)
            return f->meta[mid].value;
        if (c < 0)
            hi = mid;
        else
            lo = mid + 1;
    }
    return NULL;
}
