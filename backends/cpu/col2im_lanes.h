/* SPDX-License-Identifier: MIT */
/* col2im_lanes.h — the adds of conv2d.c's col2im at stride 2 on the lanes of one vector
 * level (the lane interface included before this file). At stride 2 one kernel column
 * adds into every other element of a padded row, and the next column (dilation 1) into
 * the elements between: their two rows of values are interleaved in registers and added
 * to the run with whole vectors, where the scalar loop added one strided element at a
 * time. A column without a neighbour adds its values to the even elements only. The two
 * columns write different elements, so each element gets the same adds in the same
 * order as the scalar loop, and the same bits (check_conv2d compares the levels).
 * Instantiated by col2im_avx512.c and col2im_avx2.c. */

#ifdef LANES_N
LANES_TARGET
void LANES_FN(cpu_vec_col2im_pair)(float *dst, size_t dst_step, const float *even,
                                   const float *odd, size_t n, size_t rows)
{
    /* the run each row of values adds into: 2n elements, or 2n − 1 ending on an even one */
    const int64_t w = (int64_t)n, width = odd ? 2 * w : 2 * w - 1;
    for (size_t r = 0; r < rows; r++, dst += dst_step) {
        const float *a = even + r * n, *b = odd ? odd + r * n : NULL;
        for (int64_t i = 0; i < w; i += LANES_N) {
            lanes_in in = lanes_inside(i, w);
            lanes_f32 va = lanes_load_f32(a + i, in);
            lanes_f32 vb = b ? lanes_load_f32(b + i, in) : lanes_zero();
            for (int half = 0; half < 2; half++) {
                const int64_t at = 2 * i + half * LANES_N;
                if (at >= width)
                    break;
                lanes_in live = lanes_inside(at, width);
                lanes_f32 d = lanes_load_f32(dst + at, live);
                /* dst + value, the operands in the scalar loop's order */
                lanes_f32 s = lanes_add(d, half ? lanes_zip_hi(va, vb) : lanes_zip_lo(va, vb));
                if (!b)
                    s = lanes_blend(lanes_even(), d, s);
                lanes_store_f32(dst + at, live, s);
            }
        }
    }
}
#else /* not an x86 CPU: the level is never chosen */
void LANES_FN(cpu_vec_col2im_pair)(float *dst, size_t dst_step, const float *even,
                                   const float *odd, size_t n, size_t rows)
{
    (void)dst, (void)dst_step, (void)even, (void)odd, (void)n, (void)rows;
}
#endif
