/* The machine's float32 compute roof: each of T threads runs ACC independent chains of fused multiply-adds on
 * the widest vectors the build targets (acc = acc * m + a, kept in registers), the most a convolution or matmul
 * kernel could issue: 64-byte vectors with AVX-512 (16 chains of its 32 registers), 32 bytes with AVX2 (12 chains:
 * 16 with m and a did not fit its 16 registers, and a 64-byte vector there is no register at all), else 16.
 * Build: gcc -O2 -march=native -ffp-contract=fast -mprefer-vector-width=512 -pthread. Prints GFLOP/s, the
 * best of REPS runs (2 flops a lane a multiply-add). Usage: fma_peak THREADS REPS */
#define _POSIX_C_SOURCE 199309L
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#if defined(__AVX512F__)
enum { ACC = 16, LANES = 16 };
#elif defined(__AVX__)
enum { ACC = 12, LANES = 8 };
#else
enum { ACC = 12, LANES = 4 };
#endif
typedef float v16 __attribute__((vector_size(LANES * 4)));
static const long kIters = 20 * 1000 * 1000;
static volatile float sink;

static void *run(void *arg) {
  (void)arg;
  v16 acc[ACC], m, a;
  for (int l = 0; l < LANES; l++) m[l] = 0.999999f, a[l] = 1e-7f;
  for (int k = 0; k < ACC; k++)
    for (int l = 0; l < LANES; l++) acc[k][l] = (float)(k + l);
  for (long i = 0; i < kIters; i++) {
#pragma GCC unroll 16
    for (int k = 0; k < ACC; k++) acc[k] = acc[k] * m + a;
    __asm__ volatile("" : "+x"(m)); /* (m stays a value the compiler cannot fold) */
  }
  float s = 0;
  for (int k = 0; k < ACC; k++)
    for (int l = 0; l < LANES; l++) s += acc[k][l];
  sink = s;
  return NULL;
}

static double now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec + ts.tv_nsec * 1e-9;
}

int main(int argc, char **argv) {
  if (argc != 3) return 2;
  int threads = atoi(argv[1]), reps = atoi(argv[2]);
  if (threads < 1 || threads > 256 || reps < 1) return 2;
  double best = 1e30;
  for (int r = 0; r < reps; r++) {
    pthread_t t[256];
    double t0 = now();
    for (int i = 0; i < threads; i++)
      if (pthread_create(&t[i], NULL, run, NULL)) return 1;
    for (int i = 0; i < threads; i++) pthread_join(t[i], NULL);
    double s = now() - t0;
    if (s < best) best = s;
  }
  printf("%.1f\n", 2.0 * LANES * ACC * (double)kIters * threads / best / 1e9);
  return 0;
}
