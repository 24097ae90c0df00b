/* SPDX-License-Identifier: MIT */
/* reduce_lanes.h — the sums of reduce.c's many-outputs walk (a bias gradient summed over
 * the batch, say) and of its walk over channel blocks, on the lanes of one vector level
 * (the lane interface included before this file): each reduced row of up to 64
 * neighbouring outputs is loaded a block of lanes at a time, widened in registers when
 * 16-bit, and added to the block's partial sums. Each lane adds the same terms in the
 * same order as reduce.c's scalar loop, so the results are the same bits (check_reduce
 * compares the levels, check_kept_blocks kept and moved tensors). Instantiated by
 * reduce_avx512.c and reduce_avx2.c. */

#ifdef LANES_N
LANES_TARGET
void LANES_FN(cpu_vec_lanes_sum)(int squares, float *acc, const void *x, enum gan_dtype dtype,
                                 int64_t off, int w)
{
    for (int i = 0; i < w; i += LANES_N) {
        lanes_in live = lanes_inside(i, w);
        lanes_f32 v = lanes_load(x, dtype, off + i, live);
        lanes_f32 a = lanes_load_f32(acc + i, live);
        /* acc += v or acc += v·v, as the scalar loop writes it; no FMA: it would round once
         * where the scalar loop rounds twice */
        a = lanes_add(a, squares ? lanes_mul(v, v) : v);
        lanes_store_f32(acc + i, live, a);
    }
}

/* Each lane's eight partial sums stay in registers over the whole run; the last m mod 8
 * pixels go to the sums in memory, as the scalar loop's tail adds them. */
LANES_TARGET
CPU_VEC_BLOCKS_RUN(LANES_FN(cpu_vec_blocks_run))
{
    for (int l = 0; l < w; l += LANES_N) {
        const lanes_in live = lanes_inside(l, w);
        lanes_f32 a[8];
#pragma GCC unroll 8
        for (int q = 0; q < 8; q++)
            a[q] = lanes_load_f32(acc[q] + l, live);
        int64_t i = 0;
        for (; i + 8 <= m; i += 8) {
#pragma GCC unroll 8
            for (int q = 0; q < 8; q++) {
                lanes_f32 v = lanes_load(x, dtype, off + (i + q) * w + l, live);
                a[q] = lanes_add(a[q], squares ? lanes_mul(v, v) : v);
            }
        }
#pragma GCC unroll 8
        for (int q = 0; q < 8; q++)
            lanes_store_f32(acc[q] + l, live, a[q]);
        for (; i < m; i++) {
            lanes_f32 v = lanes_load(x, dtype, off + i * w + l, live);
            lanes_f32 t = lanes_load_f32(acc[i & 7] + l, live);
            lanes_store_f32(acc[i & 7] + l, live, lanes_add(t, squares ? lanes_mul(v, v) : v));
        }
    }
}
#else /* not an x86 CPU: the level is never chosen */
void LANES_FN(cpu_vec_lanes_sum)(int squares, float *acc, const void *x, enum gan_dtype dtype,
                                 int64_t off, int w)
{
    (void)squares, (void)acc, (void)x, (void)dtype, (void)off, (void)w;
}

CPU_VEC_BLOCKS_RUN(LANES_FN(cpu_vec_blocks_run))
{
    (void)squares, (void)acc, (void)x, (void)dtype, (void)off, (void)m, (void)w;
}
#endif
