/* hand-written kernel for the runner tests: out[i] = a[i] + b[i] + n */
#include <stdint.h>
void add_CPU(float *restrict out, const float *restrict a, const float *restrict b, int64_t n) {
  for (int64_t i = 0; i < 4; i++) out[i] = a[i] + b[i] + (float)n;
}
