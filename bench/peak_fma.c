/* The f32 FMA peak of this machine: independent FMA chains on the widest
   vector registers, one thread per core (bench/run_kernels.py compiles and
   runs it: cc -O2 -march=native peak_fma.c -lpthread; ./a.out THREADS).
   `./a.out THREADS int8`: the 8-bit product peak of AVX512-VNNI's vpdpbusd
   instead (64 multiply-adds an instruction, counted as 128 operations),
   which kiln's quantized products run on. */
#include <immintrin.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#ifdef __AVX512F__
typedef __m512 V; 
#define FMA(a,b,c) _mm512_fmadd_ps(a,b,c)
#define SET(x) _mm512_set1_ps(x)
#define LANES 16
#else
typedef __m256 V;
#define FMA(a,b,c) _mm256_fmadd_ps(a,b,c)
#define SET(x) _mm256_set1_ps(x)
#define LANES 8
#endif
#define N 100000000L
static double now(){struct timespec t;clock_gettime(CLOCK_MONOTONIC,&t);return t.tv_sec+t.tv_nsec*1e-9;}
static void *work(void *out) {
  V a0=SET(1),a1=SET(2),a2=SET(3),a3=SET(4),a4=SET(5),a5=SET(6),a6=SET(7),a7=SET(8),a8=SET(9),a9=SET(10),a10=SET(11),a11=SET(12);
  V x=SET(0.9999f), y=SET(0.0001f);
  for (long i = 0; i < N / 12; ++i) {
    a0=FMA(a0,x,y);a1=FMA(a1,x,y);a2=FMA(a2,x,y);a3=FMA(a3,x,y);a4=FMA(a4,x,y);a5=FMA(a5,x,y);
    a6=FMA(a6,x,y);a7=FMA(a7,x,y);a8=FMA(a8,x,y);a9=FMA(a9,x,y);a10=FMA(a10,x,y);a11=FMA(a11,x,y);
    __asm__ volatile("" : "+v"(a0),"+v"(a1),"+v"(a2),"+v"(a3),"+v"(a4),"+v"(a5),"+v"(a6),"+v"(a7),"+v"(a8),"+v"(a9),"+v"(a10),"+v"(a11));
  }
  V s = a0; s=s+a1+a2+a3+a4+a5+a6+a7+a8+a9+a10+a11;
  *(float *)out = s[0];
  return 0;
}
#ifdef __AVX512VNNI__
/* Twelve named chains: an array of them was spilled to the stack. */
static void *work_int8(void *out) {
  __m512i a0 = _mm512_set1_epi32(0), a1 = a0, a2 = a0, a3 = a0, a4 = a0, a5 = a0, a6 = a0,
          a7 = a0, a8 = a0, a9 = a0, a10 = a0, a11 = a0;
  __m512i x = _mm512_set1_epi8(3), y = _mm512_set1_epi8(-1);
#define DOT(a) a = _mm512_dpbusd_epi32(a, x, y);
  for (long i = 0; i < N / 12; ++i) {
    DOT(a0) DOT(a1) DOT(a2) DOT(a3) DOT(a4) DOT(a5) DOT(a6) DOT(a7) DOT(a8) DOT(a9) DOT(a10) DOT(a11)
    __asm__ volatile("" : "+v"(a0),"+v"(a1),"+v"(a2),"+v"(a3),"+v"(a4),"+v"(a5),"+v"(a6),"+v"(a7),"+v"(a8),"+v"(a9),"+v"(a10),"+v"(a11));
  }
  *(float *)out = (float)_mm512_reduce_add_epi32(a0 + a1 + a2 + a3 + a4 + a5 + a6 + a7 + a8 + a9 + a10 + a11);
  return 0;
}
#endif
int main(int argc, char **argv) {
  int t = argc > 1 ? atoi(argv[1]) : 2;
  void *(*body)(void *) = work;
  double perOp = LANES * 2;
  if (argc > 2 && argv[2][0] == 'i') {
#ifdef __AVX512VNNI__
    body = work_int8;
    perOp = 128;
#else
    fprintf(stderr, "no AVX512-VNNI here\n");
    return 1;
#endif
  }
  pthread_t th[64]; float r[64];
  double s = now();
  for (int i = 0; i < t; ++i) pthread_create(&th[i], 0, body, &r[i]);
  for (int i = 0; i < t; ++i) pthread_join(th[i], 0);
  double e = now() - s;
  printf("%.1f\n", (double)t * (N / 12 * 12) * perOp / e / 1e9);
  return 0;
}
