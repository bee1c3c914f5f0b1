extern "C" __global__ void train_step_8(int64_t B, lruc::gpu::Status *status, const float *__restrict in0, const lruc::gpu::bf16 *__restrict in1, const float *__restrict in2, const float *__restrict in3, const float *__restrict in4, lruc::gpu::bf16 *__restrict out0) {
  (void)B; (void)status;
  for (int64_t i = lruc::gpu::firstIndex(); i < B * 4096 * 256; i += lruc::gpu::gridStride()) {
    const int64_t o = i / 256, j = i % 256;
    (void)o; (void)j;
    const float t2272 = in4[j];
    const float t2273 = in1[i] - t2272;
    const float t2274 = in3[o];
    const float t2275 = in0[j];
    const float t2276 = t2273 * t2275;
    const float t2277 = in2[j];
    const float t2278 = t2276 + t2277;
    const float t2279 = t2278 * t2274;
    out0[i] = t2279;
  }
}
