/* SPDX-License-Identifier: MIT */
/* cpu_backend.h — the CPU backend's private state and the kernels each of its files
 * provides; backend.c gathers them into the gan_backend_ops table. */
#ifndef GANCTL_CPU_BACKEND_H
#define GANCTL_CPU_BACKEND_H

#include <stddef.h>
#include <stdint.h>
#include <ganctl/ganctl.h>

#include "../common/settings.h"

/* settings.c: the backend's settings, each with its one default; read them with
 * backends/common/settings.h's readers. */
extern const struct gan_setting_spec cpu_settings[];

/* The BLAS entry points the backend uses, resolved with dlsym from the library it
 * loads at create time (blas.c). The argument order is CBLAS's; the enums are passed
 * as their CBLAS integer values (CblasRowMajor = 101, CblasNoTrans = 111,
 * CblasTrans = 112). */
typedef void (*cpu_sgemm_fn)(int order, int trans_a, int trans_b, int m, int n, int k,
                             float alpha, const float *a, int lda, const float *b,
                             int ldb, float beta, float *c, int ldc);

struct cpu_blas {
    void *handle;                  /* from dlopen; NULL when the BLAS is linked in */
    cpu_sgemm_fn sgemm;
    void (*set_num_threads)(int);  /* NULL when the library has none */
    const char *library;           /* the name it is opened by: GAN_BLAS_LIBRARY, a soname */
    const char *path;              /* the file that name resolved to, for the log: the
                                      loader's own string, valid while handle is open */
    char kernel[64];               /* OpenBLAS core name, e.g. "Haswell"; "unknown" otherwise */
    char config[128];              /* openblas_get_config(), or "" */
    char chosen_by[96];            /* how the kernel was chosen, for the log */
    char waits[112];               /* how its idle threads wait, for the log */
    int beta_zero_unread;          /* with beta = 0 the library writes C without reading
                                      it (OpenBLAS: its beta step stores zeros) */
    int one_thread_calls;          /* each call runs on the calling thread alone
                                      (OpenBLAS, held at one thread): the backend
                                      splits products itself (sgemm_split.c) */
};

/* A tensor that a buffer holds in oneDNN's channel blocks rather than NCHW
 * (kept_blocks.c): n images of c channels of hw pixels, each image's channels in blocks
 * of `block`, elements of `dtype`; block 0 where the buffer is plain. */
struct cpu_kept {
    int64_t n, c, hw;
    int64_t block;
    enum gan_dtype dtype;
};

struct gan_buffer {
    size_t bytes;
    unsigned char *data;           /* 64-byte aligned */
    struct cpu_kept kept;
};

/* The vector instructions the kernels use. Every level gives the same bits as the
 * portable code (tests/check_cast.c, tests/check_elementwise.c and tests/check_reduce.c
 * run on each level the CPU has). */
enum cpu_isa {
    CPU_ISA_PORTABLE, /* plain C, one element at a time */
    CPU_ISA_F16C,     /* 8 lanes: F16C for FP16 casts, AVX2 integer rounding for BF16 */
    CPU_ISA_AVX512,   /* 16 lanes: AVX-512 F/BW/VL casts and element-wise kernels */
};

struct cpu_pool;
/* Which library computes the GEMMs and convolutions (the setting "gemm"): OpenBLAS
 * (im2col + sgemm for convolutions), or oneDNN's matmul and convolution primitives.
 * "auto" takes oneDNN for FP32 and FP16 convolutions on every x86-64 CPU, for BF16
 * products and convolutions where the CPU has BF16 dot products (OpenBLAS on a CPU
 * without), and OpenBLAS for FP32 products (as fast, measured). FP16 is always the emulation of a tensor core (FP16
 * storage, FP32 accumulation, one rounding): its products through sgemm, its
 * convolutions through oneDNN's FP32 primitives on widened copies where oneDNN runs. */
enum cpu_gemm_path {
    CPU_GEMM_AUTO,
    CPU_GEMM_OPENBLAS,
    CPU_GEMM_ONEDNN,
};

/* The setting "bf16": where oneDNN is used, whether BF16 goes to its BF16 kernels
 * (products, and convolutions on a CPU with a BF16 dot product) or is staged through
 * the FP32 ones; "auto" decides by a timed probe at start-up (onednn_probe.c). */
enum cpu_bf16_path {
    CPU_BF16_AUTO,
    CPU_BF16_ONEDNN,
    CPU_BF16_STAGED,
};

/* onednn.c: the instance's oneDNN engine, stream and cache of primitives. */
struct cpu_onednn;

struct gan_backend {
    const struct gan_host *host;
    struct cpu_blas blas;
    int threads;
    int blas_threads;              /* the runs a product is split into, at most threads */
    /* threads − 1 workers for our own kernels (thread_pool.c); NULL with one thread. */
    struct cpu_pool *pool;
    /* The widest vector level this instance's kernels use, fixed at create; a zeroed
     * instance is portable. */
    enum cpu_isa isa;
    /* Scratch memory for kernels that need temporary space (im2col, 16-bit staging),
     * grown on demand and kept for the instance's life. */
    unsigned char *scratch;
    size_t scratch_bytes;
    unsigned char *operand_scratch;   /* cpu_operand_scratch's, likewise */
    size_t operand_scratch_bytes;
    /* The setting "gemm", and the oneDNN state when it may be used: NULL (a zeroed
     * instance, a build without oneDNN, "openblas", or a CPU other than x86-64 under
     * "auto") sends every call to OpenBLAS. */
    enum cpu_gemm_path gemm_path;
    enum cpu_bf16_path bf16_path;
    int gemm16_path;               /* the setting "gemm16": enum cpu_gemm16_path (gemm16.h) */
    int keep_blocks;               /* the setting "channel_blocks" is "kept" (kept_blocks.c) */
    struct cpu_onednn *onednn;
    char onednn_absent[192];       /* why "auto" runs without oneDNN, for the description */
    char description[2048];
};

/* Address of byte `offset` of a buffer (backends/common/transfer.h resolves the memory
 * slots' ranges with it). */
static inline unsigned char *gan_buffer_at(const gan_buffer *buf, size_t offset)
{
    return buf->data + offset;
}

/* Address of element `offset` of a ref or operand. */
static inline unsigned char *cpu_ref_ptr(const struct gan_ref *r)
{
    return r->buf->data + r->offset * gan_dtype_size(r->dtype);
}

/* Scratch space of at least `bytes`, 64-byte aligned; valid until the next call. */
gan_status cpu_scratch(gan_backend *be, size_t bytes, void **out);
/* A second space like it, for operands a kernel stages before it calls another kernel
 * that takes cpu_scratch for itself (gemm_fp8's widened operands, read by cpu_gemm). */
gan_status cpu_operand_scratch(gan_backend *be, size_t bytes, void **out);

/* blas.c: chooses OPENBLAS_CORETYPE when unset, loads the library, sets threads. */
gan_status cpu_blas_open(gan_backend *be, int threads);
void cpu_blas_close(struct cpu_blas *blas);
/* sgemm_split.c: the BLAS's sgemm on row-major operands (trans_a, trans_b: CBLAS's
 * 111 or 112), split across the instance's threads when it is large enough. */
void cpu_sgemm(gan_backend *be, int trans_a, int trans_b, int m, int n, int k, float alpha,
               const float *a, int lda, const float *b, int ldb, float beta, float *c,
               int ldc);

/* isa.c: the level the host's setting "vector" names ("auto" or absent: the widest this
 * CPU runs), for an instance being created; refused through host->fail when the name is
 * unknown or the CPU lacks the level. Two instances in one process may use different
 * levels, so the kernels take the level from the instance they are called on. */
gan_status cpu_isa_setting(const struct gan_host *host, enum cpu_isa *isa);
/* The widest level this CPU runs: a fact of the CPU, asked afresh on every call, so
 * cheap enough for create but not for a kernel's inner loop. */
enum cpu_isa cpu_isa_best(void);
/* Sets be's level to `want`, or to the best one if the CPU lacks it, and returns the
 * level be now uses: for tests and benchmarks that compare levels on one instance. */
enum cpu_isa cpu_isa_select(gan_backend *be, enum cpu_isa want);
const char *cpu_isa_name(enum cpu_isa isa);

/* thread_pool.c: the instance's workers. A kernel splits n units of work into
 * cpu_parallel_parts(...) parts, each a run of whole blocks of `align` units, and
 * cpu_parallel_for calls fn(arg, part, begin, end) once per part, on the calling thread
 * or a worker, and returns when every part has. What a part computes must not depend on how
 * many parts there are (element-wise results, or block results combined in block order
 * afterwards), so that the results are the same at any thread count. */
typedef void (*cpu_range_fn)(void *arg, int part, int64_t begin, int64_t end);
/* A kernel is split into one part per this many elements of work, so below twice as
 * many it stays on the calling thread. The workers watch for the next job between a
 * step's kernels (thread_pool.c), so a part is taken within a microsecond or so, and an
 * AVX-512 add of 65,536 FP32 elements lasts about 7 (bench/README.md): smaller parts
 * would spend a good share of themselves handing the work over. */
#define CPU_PARALLEL_MIN ((int64_t)65536)
/* The most parts a kernel is split into, whatever backend.threads: kernels keep one
 * partial result per part. */
#define CPU_MAX_PARTS 64
gan_status cpu_pool_open(gan_backend *be);
void cpu_pool_close(gan_backend *be);
/* How many parts n units of `work_per_unit` elements each are split into: at most
 * two per thread (1 with one thread), at most one per block of `align` units, and one
 * part per CPU_PARALLEL_MIN elements of work. */
int cpu_parallel_parts(const gan_backend *be, int64_t n, int64_t align, int64_t work_per_unit);
/* The CPUs the calling thread may run on (its affinity mask, which threads it starts
 * inherit; in a container, those it was given), or those online where that is unknown:
 * backend.threads = 0 takes this many. */
int cpu_usable_cpus(void);
/* Sends the workers that watch for the next job to sleep, before a library with threads
 * of its own (oneDNN's OpenMP, OpenBLAS where it keeps its threads) takes the cores; the
 * next job wakes them. */
void cpu_pool_hush(gan_backend *be);
/* The first unit of part p of n units split into `parts` parts of whole blocks of
 * `align` units, as cpu_parallel_for splits them. */
int64_t cpu_part_begin(int64_t n, int64_t align, int parts, int p);
/* How many runs `units` units of `work_per_unit` each are cut into when every run is
 * to hold at least `min_work`: one a thread (`most`) at most, whole blocks of `align`
 * units, split as cpu_parallel_for splits them (the last block may be partial, but is
 * never a run alone); 1 when no cut into two or more keeps the smallest run at
 * min_work. For products cut on the instance's threads, one library call a run
 * (sgemm_split.c, onednn_rows.c). */
int cpu_runs(int most, int64_t units, int64_t align, int64_t work_per_unit, int64_t min_work);
/* How many jobs cpu_parallel_for has handed to the workers (a job of one part runs on
 * the calling thread and is not counted): what tests observe of a kernel's split. */
uint64_t cpu_pool_jobs(const gan_backend *be);
/* elementwise.c: how many parts an element-wise op (nops = 2: unary `op`, 3: binary)
 * over `total` elements is split into, each element weighed by what it costs (tanh,
 * sigmoid, exp and log, a libm call each, as many vectorised adds). */
int cpu_elementwise_parts(const gan_backend *be, int nops, int op, int64_t total);
void cpu_parallel_for(gan_backend *be, int parts, int64_t n, int64_t align, cpu_range_fn fn,
                      void *arg);
/* onednn_setting.c: the path the host's setting "gemm" names ("auto" when absent);
 * "onednn" is refused through host->fail when the build has no oneDNN. */
gan_status cpu_gemm_path_setting(const struct gan_host *host, enum cpu_gemm_path *path);
const char *cpu_gemm_path_name(enum cpu_gemm_path path);
/* The setting "bf16", checked against the gemm path it is used with. */
gan_status cpu_bf16_path_setting(const struct gan_host *host, enum cpu_gemm_path gemm,
                                 enum cpu_bf16_path *path);
/* Nonzero when this CPU has AVX512-BF16 or AMX-BF16, found once per process; 0 when
 * the environment sets GANCTL_TEST_NO_BF16_DOT (other than to "0"), a test hook. */
int cpu_has_bf16_dot(void);

/* onednn.c (built with oneDNN only; without it, open leaves be->onednn NULL). */
/* Makes be->onednn for be->gemm_path and be->threads, or leaves it NULL when oneDNN is
 * not to be used; fails through host->fail when oneDNN cannot start. */
gan_status cpu_onednn_open(gan_backend *be);
void cpu_onednn_close(gan_backend *be);
/* "GEMM auto: oneDNN 2.6.3; FP32 GEMM: OpenBLAS (…); FP32 convolutions: oneDNN (…),
 * FP16 ones staged in FP32; BF16: oneDNN brg:avx512_core_bf16 (…); FP16 products:
 * OpenBLAS; …", each path with its reason, for describe. */
void cpu_onednn_describe(gan_backend *be, char *out, size_t size);
/* Each returns 1 when oneDNN computed the call (its status in *st), 0 when the call
 * is the OpenBLAS path's: no oneDNN, a dtype it does not take, or a shape whose
 * primitive it refused. The arguments have been validated by the caller. */
int cpu_onednn_gemm(gan_backend *be, const struct gan_gemm *g, gan_status *st);
/* Whether BF16 products go to oneDNN on this instance (the setting "gemm" and the CPU). */
int cpu_onednn_bf16(const gan_backend *be);
/* Whether cpu_onednn_gemm would compute g (its primitive made now when new): g's dtypes,
 * shape, alpha and beta are read, not its memory. */
int cpu_onednn_gemm_takes(gan_backend *be, const struct gan_gemm *g);
enum cpu_conv_kind { CPU_CONV_FORWARD, CPU_CONV_BACKWARD_DATA, CPU_CONV_BACKWARD_FILTER };
/* Under gemm = "auto", the input gradient of fewer input channels than this goes to
 * im2col + sgemm instead of oneDNN (onednn_conv.c says why). */
#define CPU_ONEDNN_AUTO_DATA_MIN_CHANNELS 4
/* forward: a = x, b = w, out = y; backward data: a = dy, b = w, out = dx; backward
 * filter: a = x, b = dy, out = dw. beta is 0 or 1. */
int cpu_onednn_conv(gan_backend *be, enum cpu_conv_kind kind, const struct gan_conv2d *c,
                    const struct gan_ref *a, const struct gan_ref *b, float beta,
                    const struct gan_ref *out, gan_status *st);
/* How many primitives the instance's cache holds, and how many it has created since
 * open: for tests that check primitives are reused. */
void cpu_onednn_cache_counts(gan_backend *be, int *held, long *created);

/* memory.c */
gan_backend_buffer_alloc_fn cpu_buffer_alloc;
gan_backend_buffer_free_fn cpu_buffer_free;
gan_backend_upload_fn cpu_upload;
gan_backend_download_fn cpu_download;
gan_backend_copy_fn cpu_copy;

/* gemm.c */
gan_backend_gemm_fn cpu_gemm;

/* elementwise.c */
gan_backend_unary_fn cpu_unary;
gan_backend_binary_fn cpu_binary;
gan_backend_binary_alpha_fn cpu_binary_alpha;

/* tanh.c: the backend's FP32 tanh of one element, the bits every vector level gives
 * (tanh_lanes.h) on any C library. */
float cpu_tanhf(float x);

/* elementwise_avx512.c and elementwise_avx2.c (elementwise_lanes.h): the vector kernels
 * elementwise.c hands a run to when every operand is contiguous or broadcast. An input
 * is contiguous elements of `dtype` from element `off` of `base`, or, when base is NULL,
 * `value` in every lane. */
struct cpu_vec_in {
    const void *base;
    enum gan_dtype dtype;
    int64_t off;
    float value;
};
/* y[yoff + i] = op(x[i]) for i < n, y contiguous of type yt; y may be x. */
#define CPU_VEC_UNARY(name)                                                                 \
    void name(enum gan_unary_op op, float alpha, const struct cpu_vec_in *x, void *y,       \
              enum gan_dtype yt, int64_t yoff, int64_t n)
#define CPU_VEC_BINARY(name)                                                                \
    void name(enum gan_binary_op op, float alpha, const struct cpu_vec_in *a,                \
              const struct cpu_vec_in *b, void *y, enum gan_dtype yt, int64_t yoff, int64_t n)
CPU_VEC_UNARY(cpu_vec_unary_avx512);
CPU_VEC_UNARY(cpu_vec_unary_avx2);
CPU_VEC_BINARY(cpu_vec_binary_avx512);
CPU_VEC_BINARY(cpu_vec_binary_avx2);

/* reduce.c */
gan_backend_reduce_fn cpu_reduce;

/* reduce_avx512.c and reduce_avx2.c (reduce_lanes.h): acc[i] += x[off + i] (or its
 * square, when `squares`) for i < w ≤ 64 contiguous lanes of float type dtype; reduce.c
 * calls the one of the instance's level. */
#define CPU_VEC_LANES_SUM(name)                                                             \
    void name(int squares, float *acc, const void *x, enum gan_dtype dtype, int64_t off,    \
              int w)
CPU_VEC_LANES_SUM(cpu_vec_lanes_sum_avx512);
CPU_VEC_LANES_SUM(cpu_vec_lanes_sum_avx2);

/* The same files: for each of w ≤ CPU_BLOCKS_RUN_MAX channels side by side (a tensor kept
 * in channel blocks), m pixels of x (float type dtype) from element off, pixel i's w
 * values at off + i·w: pixel i added (or its square, when `squares`) to acc[i mod 8], in
 * order, as reduce.c's scalar loop adds them. */
#define CPU_BLOCKS_RUN_MAX 16
#define CPU_VEC_BLOCKS_RUN(name)                                                            \
    void name(int squares, float acc[8][CPU_BLOCKS_RUN_MAX], const void *x,                 \
              enum gan_dtype dtype, int64_t off, int64_t m, int w)
CPU_VEC_BLOCKS_RUN(cpu_vec_blocks_run_avx512);
CPU_VEC_BLOCKS_RUN(cpu_vec_blocks_run_avx2);

/* col2im_avx512.c and col2im_avx2.c (col2im_lanes.h): for `rows` rows, dst[2i] += even[i]
 * and, when odd is not NULL, dst[2i + 1] += odd[i], i < n; dst advances dst_step elements
 * a row, even and odd n. conv2d.c's col2im calls the one of the instance's level. */
#define CPU_VEC_COL2IM_PAIR(name)                                                           \
    void name(float *dst, size_t dst_step, const float *even, const float *odd, size_t n,   \
              size_t rows)
CPU_VEC_COL2IM_PAIR(cpu_vec_col2im_pair_avx512);
CPU_VEC_COL2IM_PAIR(cpu_vec_col2im_pair_avx2);

/* conv2d.c */
gan_backend_conv2d_forward_fn cpu_conv2d_forward;
gan_backend_conv2d_backward_data_fn cpu_conv2d_backward_data;
gan_backend_conv2d_backward_filter_fn cpu_conv2d_backward_filter;

/* cast.c */
gan_backend_cast_fn cpu_cast;
gan_backend_cast_flags_fn cpu_cast_flags;
/* n contiguous elements of float type xt at x into float type yt at y (round to nearest
 * even), by cpu_cast's block converters of level `isa` (the calling instance's),
 * bit-identical to convert.h's element functions. The kernels stage 16-bit runs through
 * FP32 with it. */
void cpu_convert(enum cpu_isa isa, const void *x, enum gan_dtype xt, void *y,
                 enum gan_dtype yt, size_t n);
/* The same conversion split across the instance's threads (as cpu_cast splits one),
 * for the large tensors a kernel stages whole: the same bits at any thread count. */
void cpu_convert_threads(gan_backend *be, const void *x, enum gan_dtype xt, void *y,
                         enum gan_dtype yt, size_t n);
/* A conversion of `rows` runs of `cols` contiguous elements, x_ld and y_ld elements
 * apart (a strided matrix, or one run when both lds are cols). */
struct cpu_convert_rows {
    const void *x;
    enum gan_dtype xt;
    int64_t x_ld;
    void *y;
    enum gan_dtype yt;
    int64_t y_ld;
    int64_t rows, cols;
};
#define CPU_CONVERT_ROWS_MAX 4
/* Up to CPU_CONVERT_ROWS_MAX such conversions (the operands a kernel stages together)
 * as one job split across the instance's threads: its size, not each one's, decides
 * how many threads it takes, the workers are woken once for all of them, and a part
 * may end inside a row, so a strided matrix is split like a packed one. The same bits
 * at any thread count. */
void cpu_convert_rows_threads(gan_backend *be, const struct cpu_convert_rows *r, int count);

/* cast_fp8.c: cpu_cast's conversions with an FP8 type on one side or both and a float
 * type on the other, n > 0 checked elements of xt at x into yt at y (x == y: the same
 * view, which is only counted), rounding once to nearest even and saturating an FP8
 * output when `saturate`, split across the instance's threads, at its vector level;
 * sets c's four counts when c is not NULL. */
void cpu_cast_fp8(gan_backend *be, const void *x, enum gan_dtype xt, void *y,
                  enum gan_dtype yt, size_t n, int saturate, struct gan_cast_counts *c);
/* Its two conversions of n contiguous elements at vector level `isa`, on the calling
 * thread: FP32 into FP8 type dt (gan_fp8_encode, saturating when `saturate`), and FP8
 * type dt into FP32 (gan_fp8_decode, exact). The FP8 products' passes call them on the
 * blocks they stage. */
void cpu_fp8_encode(enum cpu_isa isa, const float *x, uint8_t *y, size_t n,
                    enum gan_dtype dt, int saturate);
void cpu_fp8_decode(enum cpu_isa isa, const uint8_t *x, float *y, size_t n,
                    enum gan_dtype dt);

/* fp8_products.c and gemm_fp8.c: the FP8 products, emulated (fp8_products.h has the
 * passes they share) */
gan_backend_fp8_stats_fn cpu_fp8_stats;
gan_backend_fp8_quantize_fn cpu_fp8_quantize;
gan_backend_fp8_dequantize_fn cpu_fp8_dequantize;
gan_backend_gemm_fp8_fn cpu_gemm_fp8;

/* rng.c (Philox4x32-10 itself is in <ganctl/philox.h>) */
gan_backend_rng_bits_fn cpu_rng_bits;
gan_backend_rng_uniform_fn cpu_rng_uniform;
gan_backend_rng_normal_fn cpu_rng_normal;

/* adam.c */
gan_backend_adam_fn cpu_adam;

/* adam_avx512.c and adam_avx2.c (adam_lanes.h): adam.c's update of n contiguous
 * elements on AVX-512 or AVX2, the same bits as its scalar loop; grad is of type
 * grad_dtype, copy (when not NULL) gets the new parameters rounded to copy_dtype, k the
 * step's constants (backends/common/adam_ops.h). adam.c calls the one of the instance's
 * level. */
struct gan_adam_consts;
#define CPU_VEC_ADAM(name)                                                                  \
    void name(const struct gan_adam_consts *k, float *param, float *m, float *v,            \
              const void *grad, enum gan_dtype grad_dtype, void *copy,                      \
              enum gan_dtype copy_dtype, int64_t n)
CPU_VEC_ADAM(cpu_vec_adam_avx512);
CPU_VEC_ADAM(cpu_vec_adam_avx2);

/* grad_stats_avx512.c and grad_stats_avx2.c (grad_stats_lanes.h): one block of len
 * elements of grad_stats.c's measurement of x (type xt), with the unscaled values written
 * to u (FP32; NULL: none). absmax and absmin are the largest and the smallest |x| over
 * finite non-zero x (0 and +inf when there is none, and when inv_scale is 0); sum is
 * Σ(|x|·|inv_scale|)² in double, summed exactly as grad_stats.c's scalar loop sums it. */
struct cpu_stats_block {
    uint64_t nonfinite, zeros, subnormal;
    float absmax, absmin;
    double sum;
};
#define CPU_VEC_STATS_BLOCK(name)                                                           \
    void name(const void *x, enum gan_dtype xt, int64_t len, float inv_scale, float *u,     \
              struct cpu_stats_block *r)
CPU_VEC_STATS_BLOCK(cpu_vec_stats_block_avx512);
CPU_VEC_STATS_BLOCK(cpu_vec_stats_block_avx2);

/* grad_stats.c */
gan_backend_grad_stats_fn cpu_grad_stats;

/* kept_blocks.c: tensors a buffer holds in channel blocks between convolutions.
 * cpu_kept_plain makes buf NCHW again where it holds blocks; every kernel that reads a
 * buffer as NCHW calls it first. cpu_kept_overwritten is for a kernel about to write
 * bytes [byte_offset, + bytes) of buf without reading them: blocks that the write covers
 * are forgotten, others made NCHW; cpu_kept_written is the same for an output operand
 * walked over shape. cpu_kept_holds says whether a ref is the start of a tensor kept in
 * k's blocks, and cpu_kept_mark records that a buffer now is. cpu_kept_whole says whether
 * an operand walks the first *count elements of its buffer in order. */
gan_status cpu_kept_plain(gan_backend *be, gan_buffer *buf);
/* The setting "channel_blocks": *keep = 1 for "kept". */
gan_status cpu_kept_setting(const struct gan_host *host, int *keep);
gan_status cpu_kept_overwritten(gan_backend *be, gan_buffer *buf, size_t byte_offset,
                                size_t bytes);
gan_status cpu_kept_written(gan_backend *be, const struct gan_shape *shape,
                            const struct gan_operand *y);
int cpu_kept_holds(const gan_buffer *buf, size_t offset, const struct cpu_kept *k);
void cpu_kept_mark(gan_buffer *buf, const struct cpu_kept *k);
int cpu_kept_whole(const struct gan_shape *s, const struct gan_operand *o, int64_t *count);
/* A GEMM's operands made NCHW, and its output as a write (beta = 0) or a read. */
gan_status cpu_kept_gemm(gan_backend *be, const struct gan_gemm *g); /* nothing when empty */
/* n elements of buf about to be read as NCHW: cpu_kept_plain, but for a call that reads
 * nothing (n = 0), whose buffer need not be live. */
gan_status cpu_kept_read(gan_backend *be, gan_buffer *buf, size_t n);
/* n elements of r about to be written without being read; nothing for n = 0. */
gan_status cpu_kept_ref_written(gan_backend *be, const struct gan_ref *r, size_t n);
/* A copy of the whole of a tensor kept in blocks, moved into dst as NCHW (src keeps its
 * blocks): 1 when done (with *st), 0 for any other copy. */
int cpu_kept_copy(gan_backend *be, gan_buffer *dst, size_t dst_byte_offset, gan_buffer *src,
                  size_t src_byte_offset, size_t bytes, gan_status *st);
/* A call that reads *a and *b as NCHW and writes out_elements of out, adding to them
 * unless beta = 0. An input kept in blocks is read through an NCHW copy in the operand
 * scratch (*a or *b then points into `copies`), so that its buffer keeps its blocks for
 * the convolution that reads it next; the output is made NCHW, or forgotten as a write.
 * a may be NULL: an input the call reads in its blocks itself. */
struct cpu_kept_copies {
    struct gan_buffer buf[2];
    struct gan_ref ref[2];
};
gan_status cpu_kept_call(gan_backend *be, const struct gan_ref **a, const struct gan_ref **b,
                         struct cpu_kept_copies *copies, float beta, const struct gan_ref *out,
                         size_t out_elements);
/* An element-wise walk (nops operands, the output last, already checked) that touches
 * kept blocks: where it can run on them, rewrites shape and ops to do so (a per-channel
 * input spread over an image's blocks in `channels_buffer`, which must outlive the
 * walk), fills *out with the blocks its output will hold and returns 1; otherwise makes
 * its inputs NCHW, handles its output as cpu_kept_written does and returns 0. *st is
 * the status of that work. */
int cpu_kept_elementwise(gan_backend *be, int nops, struct gan_shape *shape,
                         struct gan_operand *ops, struct gan_buffer *channels_buffer,
                         struct cpu_kept *out, gan_status *st);

/* channel_blocks.c: a tensor between the plain NCHW layout and oneDNN's channel blocks
 * (nChw8c, nChw16c), `panels` = images × channels / block panels of `block` channels by
 * hw pixels. The blocks are FP32, with the plain side of type pt (F32, F16, BF16) widened
 * exactly as it is read and rounded once to nearest even as it is written (convert.h's
 * bits), or BF16 with a BF16 plain side, copied. cpu_to_channel_blocks and
 * cpu_from_channel_blocks do panels first .. first + count − 1 on the calling thread at
 * vector level isa; the _threads forms all of them, split across the instance's threads. */
struct cpu_channel_blocks {
    int64_t panels, hw;
    int64_t block;
    enum gan_dtype blocks;        /* GAN_F32, or GAN_BF16 (then the plain side is BF16) */
};
/* Elements of a tensor in channel blocks b. */
static inline size_t cpu_channel_blocks_count(const struct cpu_channel_blocks *b)
{
    return (size_t)(b->panels * b->block * b->hw);
}
void cpu_to_channel_blocks(enum cpu_isa isa, const struct cpu_channel_blocks *b,
                           const void *plain, enum gan_dtype pt, void *blocked,
                           int64_t first, int64_t count);
void cpu_from_channel_blocks(enum cpu_isa isa, const struct cpu_channel_blocks *b,
                             const void *blocked, void *plain, enum gan_dtype pt,
                             int64_t first, int64_t count);
void cpu_to_channel_blocks_threads(gan_backend *be, const struct cpu_channel_blocks *b,
                                   const void *plain, enum gan_dtype pt, void *blocked);
void cpu_from_channel_blocks_threads(gan_backend *be, const struct cpu_channel_blocks *b,
                                     const void *blocked, void *plain, enum gan_dtype pt);
/* One tile element by element: `rows` channels from channel s of the panel at element
 * `base`, m pixels from p0. The portable level's move, and the vector levels' for a tile
 * holding a NaN that their conversions would quiet. */
void cpu_channel_tile_to_blocks(const struct cpu_channel_blocks *b, const void *plain,
                                enum gan_dtype pt, void *blocked, int64_t base, int64_t s,
                                int64_t rows, int64_t p0, int64_t m);
void cpu_channel_tile_from_blocks(const struct cpu_channel_blocks *b, const void *blocked,
                                  void *plain, enum gan_dtype pt, int64_t base, int64_t s,
                                  int64_t rows, int64_t p0, int64_t m);
/* channel_blocks_avx512.c and channel_blocks_avx2.c (channel_blocks_lanes.h): the two
 * directions on a level's lanes, for a block of a multiple of its lanes. */
#define CPU_VEC_TO_CHANNEL_BLOCKS(name)                                                     \
    void name(const struct cpu_channel_blocks *b, const void *plain, enum gan_dtype pt,     \
              void *blocked, int64_t first, int64_t count)
#define CPU_VEC_FROM_CHANNEL_BLOCKS(name)                                                   \
    void name(const struct cpu_channel_blocks *b, const void *blocked, void *plain,         \
              enum gan_dtype pt, int64_t first, int64_t count)
CPU_VEC_TO_CHANNEL_BLOCKS(cpu_vec_to_channel_blocks_avx512);
CPU_VEC_TO_CHANNEL_BLOCKS(cpu_vec_to_channel_blocks_avx2);
CPU_VEC_FROM_CHANNEL_BLOCKS(cpu_vec_from_channel_blocks_avx512);
CPU_VEC_FROM_CHANNEL_BLOCKS(cpu_vec_from_channel_blocks_avx2);

#endif
