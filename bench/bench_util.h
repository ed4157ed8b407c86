/* What every benchmark in bench/ shares: a monotonic clock (in seconds,
 * milliseconds or microseconds) and the comparator that sorts timings for
 * their medians. */
#ifndef DQG_BENCH_UTIL_H
#define DQG_BENCH_UTIL_H

#include <time.h>

static inline double bench_now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static inline double bench_now_ms(void)
{
    return bench_now_s() * 1e3;
}

static inline double bench_now_us(void)
{
    return bench_now_s() * 1e6;
}

/* qsort's comparator for doubles, ascending. */
static inline int bench_cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

#endif
