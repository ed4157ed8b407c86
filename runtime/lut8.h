/* Byte tables (internal): y[i] = t[x[i]] for a 256-entry table, the form
 * every one-input int8 -> int8 element-wise map takes (a requantization,
 * a unary function between a dequantize and a quantize). */
#ifndef DQG_RUNTIME_LUT8_H
#define DQG_RUNTIME_LUT8_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Whether dqg_lut8 may look up 64 bytes at a time (AVX512-VBMI's
 * vpermi2b, which dqgraph's ISA levels do not track: capped with them, so
 * DQG_MAX_ISA below AVX-512 turns it off). */
bool dqg_lut8_vbmi(void);
/* y[b] = t[x[b]] for n bytes. */
void dqg_lut8(const uint8_t *t, const uint8_t *x, uint8_t *y, size_t n, bool vbmi);

#endif
