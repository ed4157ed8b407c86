/* Pre-packing constant tensors for oneDNN primitives (internal): a constant
 * is reordered once, at compile time, into the layout the primitive chose,
 * and kept with the kernel. */
#ifndef DQG_RUNTIME_ONEDNN_PACK_H
#define DQG_RUNTIME_ONEDNN_PACK_H

#include "runtime/onednn_exec.h"

/* Reorders `data` (laid out as `from`) into a new 64-byte-aligned buffer
 * laid out as `to`; *out receives it (free with free()). `conv_weights`:
 * `to` is a convolution's weights (whose packing with compensation takes
 * two reorders, onednn_defects.h's rule D). */
dqg_status dqg_dnnl_pack(const dnnl_memory_desc_t *from, const void *data,
                         const dnnl_memory_desc_t *to, bool conv_weights, void **out, size_t *bytes,
                         const char *what);

#endif
