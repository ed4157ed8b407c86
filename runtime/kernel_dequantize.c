/* placeholder until the dequantize kernels are wired */
#include "runtime/kernel.h"
dqg_status dqg_kernel_dequantize_build(const dqg_kernel_request *req, dqg_kernel **out)
{
    return dqg_set_error(DQG_UNSUPPORTED, "not available");
}
