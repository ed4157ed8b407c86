/* Small helpers the samples share: a status check and a wall clock. */
#ifndef DQG_SAMPLE_UTIL_H
#define DQG_SAMPLE_UTIL_H

#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "dqgraph.h"

#define CHECK(call)                                                                                \
    do {                                                                                           \
        dqg_status st_ = (call);                                                                   \
        if (st_ != DQG_OK) {                                                                       \
            fprintf(stderr, "%s:%d: %s: %s\n", __FILE__, __LINE__, dqg_status_name(st_),           \
                    dqg_last_error());                                                             \
            exit(1);                                                                               \
        }                                                                                          \
    } while (0)

static inline double now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

/* Deterministic pseudo-random numbers (xorshift), so runs are repeatable. */
static inline uint32_t sample_rand(uint32_t *state)
{
    uint32_t x = *state;
    x ^= x << 13;
    x ^= x >> 17;
    x ^= x << 5;
    return *state = x;
}

static inline void print_explain(const dqg_compiled *c)
{
    for (size_t i = 0; i < dqg_compiled_explain_count(c); i++)
        printf("  %s\n", dqg_compiled_explain(c, i));
    for (size_t i = 0; i < dqg_compiled_partition_count(c); i++)
        printf("  partition %zu: %s\n", i, dqg_compiled_partition_info(c, i));
}

#endif
