/* hand-written kernel for the runner tests: out[i] = 2 * x[i] */
#include <stdint.h>
void scale_CPU(float *restrict out, const float *restrict x) {
  for (int64_t i = 0; i < 4; i++) out[i] = 2.0f * x[i];
}
