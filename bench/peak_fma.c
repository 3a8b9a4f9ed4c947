/* The f32 FMA peak of this machine: independent FMA chains on the widest
   vector registers, one thread per core (bench/run_kernels.py compiles and
   runs it: cc -O2 -march=native peak_fma.c -lpthread; ./a.out THREADS). */
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
int main(int argc, char **argv) {
  int t = argc > 1 ? atoi(argv[1]) : 2;
  pthread_t th[64]; float r[64];
  double s = now();
  for (int i = 0; i < t; ++i) pthread_create(&th[i], 0, work, &r[i]);
  for (int i = 0; i < t; ++i) pthread_join(th[i], 0);
  double e = now() - s;
  printf("%.1f\n", (double)t * (N / 12 * 12) * LANES * 2 / e / 1e9);
  return 0;
}
