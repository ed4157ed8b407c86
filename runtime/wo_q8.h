/* The weight-only kernel on VNNI dot products (internal): activations
 * turned into int8 codes per row and K-block at run time, times 4- or 8-bit
 * integer weights. One code per activation is the approximate mode (chosen
 * only under fpmath = DQG_FPMATH_INT8); three codes per activation carry it
 * to ~2^-24 of its block's largest magnitude, the exact mode's kernel at
 * small M. See wo_q8.c. */
#ifndef DQG_RUNTIME_WO_Q8_H
#define DQG_RUNTIME_WO_Q8_H

#include "runtime/epilogue.h"
#include "runtime/weights.h"

typedef struct dqg_wo_q8 dqg_wo_q8;

/* Packs the weights for `parts` codes per activation (1 or 3);
 * DQG_UNSUPPORTED (naming the reason) for weights or a CPU it does not
 * take. `w` is not retained. */
dqg_status dqg_wo_q8_create(const dqg_weights *w, int parts, dqg_wo_q8 **out, const char *what);
/* y[M, N] = epilogue(x[M, K] . W) with x as int8 codes; scratch:
 * dqg_wo_q8_scratch(g, M) bytes, 64-byte aligned. Thread-safe for distinct
 * scratch and outputs. */
dqg_status dqg_wo_q8_run(const dqg_wo_q8 *g, int64_t M, const float *x, float *y, void *scratch,
                         const dqg_epilogue *e, const void *const *rt);
size_t dqg_wo_q8_scratch(const dqg_wo_q8 *g, int64_t M);
/* Bytes of packed weights, scales and zero-point terms. */
size_t dqg_wo_q8_bytes(const dqg_wo_q8 *g);
/* The K-block of the activations' int8 scales. */
int64_t dqg_wo_q8_xblock(const dqg_wo_q8 *g);
/* Codes per activation: 1 or 3. */
int dqg_wo_q8_parts(const dqg_wo_q8 *g);
void dqg_wo_q8_destroy(dqg_wo_q8 *g);

#endif
