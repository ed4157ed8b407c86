/* A partition's bias and element-wise epilogue as the own kernels'
 * dqg_epilogue (internal). */
#ifndef DQG_RUNTIME_EPILOGUE_BUILD_H
#define DQG_RUNTIME_EPILOGUE_BUILD_H

#include "runtime/epilogue.h"
#include "runtime/kernel.h"

/* Translates the BIAS and POST ops of the request's partition (in order)
 * for an output whose last dimension has N channels. Constant operands are
 * copied into e (free with dqg_epilogue_free); run-time ones get
 * consecutive rt_arg numbers, and rt_args[i] receives the kernel argument
 * that operand i is (*n_rt of them, at most DQG_EPI_MAX). DQG_UNSUPPORTED,
 * naming the op, for what the own kernels cannot apply. */
dqg_status dqg_epilogue_from_partition(const dqg_kernel_request *req, int64_t N, dqg_epilogue *e,
                                       int *rt_args, int *n_rt, const char *what);

#endif
