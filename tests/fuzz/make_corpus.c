/* SPDX-License-Identifier: MIT */
/* make_corpus.c — writes the seed inputs of the harnesses (tests/fuzz/corpus/TARGET):
 * valid files made by the core's own writers, and near-valid ones that each break one
 * rule, so that the fuzzers start past the first checks. Run by hand when a format
 * changes:
 *
 *   make tests/fuzz/make-corpus && tests/fuzz/make-corpus SRCDIR SRCDIR/tests/fuzz/corpus
 *
 * SRCDIR is the source tree, for the files copied as they are (tests/data's
 * reference.safetensors, etc/'s configurations). Built by make check so that it keeps
 * compiling; never run by it. */
#include "config.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <zlib.h>

#include "io/safetensors/safetensors.h"
#include "train/state/streams.h"
#include "fuzz_nets.h"
#include "fuzz.h"
#include "make_corpus.h"

static const char *out_root;

const char *out_path(const char *target, const char *name)
{
    static char path[4096];
    snprintf(path, sizeof path, "%s/%s", out_root, target);
    if (mkdir(path, 0755) != 0 && errno != EEXIST)
        fuzz_fail("%s: %s", path, strerror(errno));
    snprintf(path, sizeof path, "%s/%s/%s", out_root, target, name);
    return path;
}

void write_bytes(const char *target, const char *name, const void *bytes, size_t n)
{
    const char *path = out_path(target, name);
    FILE *f = fopen(path, "wb");
    if (!f || fwrite(bytes, 1, n, f) != n || fclose(f) != 0)
        fuzz_fail("%s: cannot write it: %s", path, strerror(errno));
}

unsigned char *read_bytes(const char *path, size_t *n)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        fuzz_fail("%s: %s", path, strerror(errno));
    size_t cap = 1 << 16;
    unsigned char *buf = malloc(cap);
    *n = 0;
    size_t k;
    while (buf && (k = fread(buf + *n, 1, cap - *n, f)) > 0)
        if ((*n += k) == cap)
            buf = realloc(buf, cap *= 2);
    if (!buf)
        fuzz_fail("out of memory");
    fclose(f);
    return buf;
}

static void copy_file(const char *src, const char *target, const char *name)
{
    size_t n;
    unsigned char *bytes = read_bytes(src, &n);
    write_bytes(target, name, bytes, n);
    free(bytes);
}

/* ------------------------------------------------------------------ safetensors */

static void safetensors_seeds(const char *srcdir)
{
    char src[4096];
    snprintf(src, sizeof src, "%s/tests/data/reference.safetensors", srcdir);
    copy_file(src, "safetensors", "reference.safetensors");

    /* Every dtype, a scalar and an empty tensor, with metadata. */
    static uint8_t data[1024];
    for (size_t i = 0; i < sizeof data; i++)
        data[i] = (uint8_t)(i * 29 + 3);
    char err[1024];
    gan_st_writer *w = gan_st_writer_new();
    size_t used = 0;
    for (int d = 0; w && d < GAN_ST_DTYPE_COUNT; d++) {
        uint64_t shape[2] = { (uint64_t)(d % 3), 2 };
        int ndim = d % 4 == 3 ? 0 : 2;
        size_t nbytes = (size_t)(ndim ? shape[0] * shape[1] : 1) * gan_st_dtype_size(d);
        char name[32];
        snprintf(name, sizeof name, "net.p%d", d);
        if (gan_st_writer_add(w, name, (enum gan_st_dtype)d, ndim, shape, data + used, nbytes,
                              err, sizeof err) != GAN_OK)
            fuzz_fail("%s", err);
        used += nbytes;
    }
    if (!w || gan_st_writer_set_metadata(w, "step", "10", err, sizeof err) != GAN_OK
        || gan_st_writer_write(w, out_path("safetensors", "all-dtypes.safetensors"), err,
                               sizeof err) != GAN_OK)
        fuzz_fail("%s", err);
    gan_st_writer_free(w);

    /* Metadata and no tensor: the smallest valid file with a header. */
    w = gan_st_writer_new();
    if (!w || gan_st_writer_set_metadata(w, "format", "x", err, sizeof err) != GAN_OK
        || gan_st_writer_write(w, out_path("safetensors", "metadata-only.safetensors"), err,
                               sizeof err) != GAN_OK)
        fuzz_fail("%s", err);
    gan_st_writer_free(w);

    /* Near-valid: offsets that leave a hole, a header length one past its end, an
     * unknown dtype, a shape that overflows. Written by hand, since the writer refuses. */
    static const char *const headers[][2] = {
        { "hole", "{\"a\":{\"dtype\":\"U8\",\"shape\":[2],\"data_offsets\":[1,3]}}" },
        { "fp8", "{\"a\":{\"dtype\":\"F8_E4M3\",\"shape\":[2],\"data_offsets\":[0,2]}}" },
        { "overflow", "{\"a\":{\"dtype\":\"F64\",\"shape\":[4294967296,4294967296],"
                      "\"data_offsets\":[0,2]}}" },
        { "length", "{\"a\":{\"dtype\":\"I16\",\"shape\":[1],\"data_offsets\":[0,2]}}" },
    };
    for (size_t h = 0; h < sizeof headers / sizeof headers[0]; h++) {
        size_t len = strlen(headers[h][1]);
        unsigned char buf[256];
        uint64_t n = len + (strcmp(headers[h][0], "length") == 0);
        for (int i = 0; i < 8; i++)
            buf[i] = (unsigned char)(n >> (8 * i));
        memcpy(buf + 8, headers[h][1], len);
        memset(buf + 8 + len, 0x11, 3);
        char name[64];
        snprintf(name, sizeof name, "%s.safetensors", headers[h][0]);
        write_bytes("safetensors", name, buf, 8 + len + 2);
    }
}

/* ------------------------------------------------------------------ IDX */

static size_t idx_bytes(unsigned char *buf, int type, int ndim, const uint32_t *dims,
                        size_t elem, int extra)
{
    size_t n = 0, count = 1;
    buf[n++] = 0;
    buf[n++] = 0;
    buf[n++] = (unsigned char)type;
    buf[n++] = (unsigned char)ndim;
    for (int d = 0; d < ndim; d++) {
        for (int s = 24; s >= 0; s -= 8)
            buf[n++] = (unsigned char)(dims[d] >> s);
        count *= dims[d];
    }
    for (size_t i = 0; i < count * elem; i++)
        buf[n++] = (unsigned char)(i * 37 + 11);
    for (int i = 0; i < extra; i++)
        buf[n++] = 0xee;
    return n;
}

static void gzip_file(const char *name, const unsigned char *bytes, size_t n)
{
    const char *path = out_path("idx", name);
    gzFile gz = gzopen(path, "wb9");
    if (!gz || gzwrite(gz, bytes, (unsigned)n) != (int)n || gzclose(gz) != Z_OK)
        fuzz_fail("%s: cannot write it", path);
}

static void idx_seeds(void)
{
    unsigned char buf[1024];
    static const uint32_t images[3] = { 2, 4, 4 }, labels[1] = { 5 }, pair[2] = { 2, 3 },
                          empty[2] = { 0, 7 };
    size_t n = idx_bytes(buf, 0x08, 3, images, 1, 0);
    write_bytes("idx", "images-u8", buf, n);
    gzip_file("images-u8.gz", buf, n);
    write_bytes("idx", "truncated-u8", buf, n - 5);
    n = idx_bytes(buf, 0x08, 1, labels, 1, 0);
    write_bytes("idx", "labels-u8", buf, n);
    n = idx_bytes(buf, 0x09, 2, pair, 1, 0);
    write_bytes("idx", "pair-i8", buf, n);
    n = idx_bytes(buf, 0x0B, 2, pair, 2, 0);
    write_bytes("idx", "pair-i16", buf, n);
    n = idx_bytes(buf, 0x0C, 1, labels, 4, 0);
    write_bytes("idx", "labels-i32", buf, n);
    n = idx_bytes(buf, 0x0D, 2, pair, 4, 3);
    write_bytes("idx", "trailing-f32", buf, n);
    n = idx_bytes(buf, 0x0E, 1, labels, 8, 0);
    gzip_file("labels-f64.gz", buf, n);
    n = idx_bytes(buf, 0x08, 2, empty, 1, 0);
    write_bytes("idx", "empty-u8", buf, n);
}

/* ------------------------------------------------------------------ configuration */

static const char tricky_conf[] =
    "# Values of every kind the reader keeps, spelled as a person might.\n"
    "run: { iterations = 0x20; seed = 12345678901L; dir = \"runs/a \\\"b\\\" \\\\c\"; };\n"
    "data = { batch_size = 64; };\n"
    "generator = { model = { width = 8; depth = 2; }; };\n"
    "critic = { optimizer = { lr = 1e-4; beta1 = 0.5; clip_norm = 0.0; }; iterations = 5; };\n"
    "loss = { terms = [\"wasserstein\", \"gradient-penalty\"];\n"
    "         gradient-penalty = { lambda = 10.0; }; };\n"
    "backend = { name = \"cpu\"; threads = 1; vector = \"portable\"; };\n"
    "log = { level = \"debug\"; };\n";

static void config_seeds(const char *srcdir)
{
    static const char *const confs[] = { "ganctl.conf", "toy-paper.conf", "25gaussians.conf",
                                         "swissroll.conf", "fashion-mnist.conf" };
    char src[4096];
    for (size_t i = 0; i < sizeof confs / sizeof confs[0]; i++) {
        snprintf(src, sizeof src, "%s/etc/%s", srcdir, confs[i]);
        copy_file(src, "config", confs[i]);
    }
    write_bytes("config", "tricky.conf", tricky_conf, sizeof tricky_conf - 1);
    /* What a checkpoint holds: every value as the writer spells it, with origins. */
    gan_config *cfg = NULL;
    struct gan_error err;
    gan_error_clear(&err);
    if (gan_config_new(&cfg, &err) != GAN_OK
        || gan_config_read_string(cfg, tricky_conf, "tricky.conf", GAN_CONFIG_FILE, &err)
           != GAN_OK)
        fuzz_fail("%s", err.message);
    char *text = gan_config_to_text(cfg, 1);
    if (!text)
        fuzz_fail("out of memory");
    write_bytes("config", "saved.conf", text, strlen(text));
    free(text);
    gan_config_free(cfg);
}

/* ------------------------------------------------------------------ checkpoints */

static const char saved_config[] =
    "run = {\n  iterations = 20;\n  seed = 1;\n};\ncritic = {\n  scaler = {\n"
    "    name = \"dynamic\";\n  };\n};\n";

/* A copy of the checkpoint at `src` with the metadata entry `key` set to `value`, or
 * removed when value is NULL. */
static void variant(const char *target, const char *src, const char *name, const char *key,
                    const char *value)
{
    size_t n;
    unsigned char *bytes = read_bytes(src, &n);
    gan_st_file *f = NULL;
    char err[1024];
    if (gan_st_parse(bytes, n, src, &f, err, sizeof err) != GAN_OK)
        fuzz_fail("%s", err);
    gan_st_writer *w = gan_st_writer_new();
    for (size_t i = 0; w && i < gan_st_count(f); i++) {
        const struct gan_st_tensor *t = gan_st_tensor_at(f, i);
        if (gan_st_writer_add(w, t->name, t->dtype, t->ndim, t->shape, t->data, t->nbytes, err,
                              sizeof err) != GAN_OK)
            fuzz_fail("%s", err);
    }
    for (size_t i = 0; w && i < gan_st_metadata_count(f); i++) {
        const char *k, *v;
        gan_st_metadata_at(f, i, &k, &v);
        if (strcmp(k, key) == 0 && !(v = value))
            continue;
        if (gan_st_writer_set_metadata(w, k, v, err, sizeof err) != GAN_OK)
            fuzz_fail("%s", err);
    }
    if (!w || gan_st_writer_write(w, out_path(target, name), err, sizeof err) != GAN_OK)
        fuzz_fail("%s", err);
    gan_st_writer_free(w);
    gan_st_close(f);
    free(bytes);
}

static void checkpoint_seeds(void)
{
    struct fuzz_nets nets;
    fuzz_nets_open(&nets);
    for (int k = 0; k < 2; k++)
        gan_optimizer_set_steps(nets.opt[k], 7 * (k + 1));
    struct gan_checkpoint_scaling *sc = &nets.scaling;
    snprintf(sc->state.scaler, sizeof sc->state.scaler, "dynamic");
    sc->state.version = 1;
    sc->state.count = 2;
    snprintf(sc->state.values[0].name, sizeof sc->state.values[0].name, "scale");
    sc->state.values[0].type = GAN_SCALER_FLOAT64;
    sc->state.values[0].f = 65536.0;
    snprintf(sc->state.values[1].name, sizeof sc->state.values[1].name, "good_steps");
    sc->state.values[1].type = GAN_SCALER_INT64;
    sc->state.values[1].i = 12;
    sc->skipped = 3;
    sc->overflows = 1;
    /* Positions a real run could have reached: each inside its own stream. */
    struct gan_checkpoint_state state = {
        .iteration = 7, .seed = 1, .z_offset = GAN_STREAM_Z + 40,
        .loss_offset = GAN_STREAM_LOSS + 96, .data = { .block = GAN_STREAM_DATA + 448 },
        .elapsed_s = 1.25, .config_text = saved_config,
    };
    struct gan_error err;
    gan_error_clear(&err);
    char toy[4096];
    snprintf(toy, sizeof toy, "%s", out_path("checkpoint", "toy.safetensors"));
    if (gan_checkpoint_save(toy, nets.cn, 2, &state, &err) != GAN_OK)
        fuzz_fail("%s", err.message);
    state.has_image = 1;
    state.image.epoch = 2;
    state.image.index = 640;
    if (gan_checkpoint_save(out_path("checkpoint", "image.safetensors"), nets.cn, 2, &state,
                            &err) != GAN_OK)
        fuzz_fail("%s", err.message);
    /* Both networks with a scaler: scaler.generator.* are values the load does not ask for. */
    state.has_image = 0;
    struct gan_checkpoint_scaling gen = *sc;
    nets.cn[0].scaling = &gen;
    if (gan_checkpoint_save(out_path("checkpoint", "two-scalers.safetensors"), nets.cn, 2,
                            &state, &err) != GAN_OK)
        fuzz_fail("%s", err.message);
    nets.cn[0].scaling = NULL;
    /* Without the critic's scaler, which the load asks for. */
    nets.cn[1].scaling = NULL;
    if (gan_checkpoint_save(out_path("checkpoint", "no-scaler.safetensors"), nets.cn, 2,
                            &state, &err) != GAN_OK)
        fuzz_fail("%s", err.message);
    nets.cn[1].scaling = &nets.scaling;
    /* Only the generator: the critic's tensors are missing. */
    if (gan_checkpoint_save(out_path("checkpoint", "one-net.safetensors"), nets.cn, 1,
                            &state, &err) != GAN_OK)
        fuzz_fail("%s", err.message);
    fuzz_nets_close(&nets);

    variant("checkpoint", toy, "version-2.safetensors", "format_version", "2");
    variant("checkpoint", toy, "iteration-negative.safetensors", "iteration", "-1");
    variant("checkpoint", toy, "elapsed-nan.safetensors", "elapsed_s", "nan");
    variant("checkpoint", toy, "no-seed.safetensors", "rng.seed", NULL);
    variant("checkpoint", toy, "scaler-unversioned.safetensors", "scaler.critic", "dynamic");
    variant("checkpoint", toy, "overflows-4.safetensors", "trainer.critic.overflows", "4");

    /* The whole load's seeds: the toy checkpoint, and its saved settings holding what a
     * crafted file would, an @include of a file outside it (which must not be opened)
     * and a value no run writes. */
    variant("checkpoint-full", toy, "toy.safetensors", "format", "ganctl-checkpoint");
    variant("checkpoint-full", toy, "include.safetensors", "config",
            "@include \"/etc/passwd\"\nrun = {\n  iterations = 20;\n};\n");
    variant("checkpoint-full", toy, "lr-nan.safetensors", "config",
            "generator = {\n  optimizer = {\n    lr = nan;\n  };\n};\n");
    variant("checkpoint-full", toy, "no-config.safetensors", "config", NULL);
}

int main(int argc, char **argv)
{
    if (argc != 3) {
        fprintf(stderr, "usage: %s SRCDIR OUTDIR\n", argv[0]);
        return 2;
    }
    out_root = argv[2];
    if (mkdir(out_root, 0755) != 0 && errno != EEXIST)
        fuzz_fail("%s: %s", out_root, strerror(errno));
    safetensors_seeds(argv[1]);
    idx_seeds();
    config_seeds(argv[1]);
    checkpoint_seeds();
    image_seeds();
    return 0;
}
