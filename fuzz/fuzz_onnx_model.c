/* Fuzz target: ONNX ModelProto bytes -> dqg_onnx_load_memory -> (when the
 * graph is small) dqg_compile + dqg_execute on zero-filled inputs, and
 * dqg_reference_run on the same inputs. Expected: no crash, no leak, no UB;
 * every failure has a message. Seeds: ONNX backend node tests (see
 * scripts/fuzz.sh). */
#include <stdint.h>
#include <stdlib.h>

#include "dqgraph.h"
#include "dqgraph_onnx.h"

#include "fuzz/fuzz_common.h"

#define MAX_MODEL_BYTES  ((uint64_t)1 << 20)
#define MAX_GRAPH_BYTES  ((size_t)1 << 20) /* all tensors together */
#define MAX_GRAPH_WORK   2e6               /* multiply-adds; more stalls a run under ASan */
#define MAX_INPUTS_BYTES ((size_t)1 << 20)

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    /* Keep the process-wide cache small so that evictions happen too. */
    dqg_cache_set_capacity(32);
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    /* Symbolic dimensions commonly found in models. */
    static const dqg_onnx_dim_param dims[] = {
        {"N", 1}, {"batch", 2}, {"batch_size", 1}, {"B", 1}, {"M", 3}, {"K", 2}, {"seq", 2},
    };
    dqg_onnx_options opts = {
        .dim_params = dims,
        .n_dim_params = sizeof dims / sizeof dims[0],
        .max_model_bytes = MAX_MODEL_BYTES,
    };
    dqg_graph *g = NULL;
    dqg_status st = dqg_onnx_load_memory(data, size, NULL, &opts, &g);
    fz_require_message("dqg_onnx_load_memory", st);
    if (st != DQG_OK) {
        if (g) {
            fprintf(stderr, "fuzz: dqg_onnx_load_memory failed but returned a graph\n");
            __builtin_trap();
        }
        return 0;
    }
    if (!dqg_graph_is_finalized(g)) {
        fprintf(stderr, "fuzz: dqg_onnx_load_memory returned a graph that is not finalized\n");
        __builtin_trap();
    }
    size_t io = 0;
    for (size_t i = 0; i < dqg_graph_input_count(g); i++)
        io += dqg_tensor_byte_size(g, dqg_graph_input_id(g, i));
    for (size_t i = 0; i < dqg_graph_output_count(g); i++)
        io += dqg_tensor_byte_size(g, dqg_graph_output_id(g, i));
    if (io <= MAX_INPUTS_BYTES && fz_graph_within(g, MAX_GRAPH_BYTES, MAX_GRAPH_WORK)) {
        fz_buffers b;
        if (fz_buffers_make(g, NULL, &b)) {
            /* The options follow from the input, so a crash reproduces. */
            uint32_t h = 2166136261u;
            for (size_t i = 0; i < size; i++)
                h = (h ^ data[i]) * 16777619u;
            dqg_compile_options o = dqg_compile_options_default();
            o.threads = 1;
            o.disable_fusion = h & 1;
            o.backend = (h >> 1) % 4 == 0 ? DQG_BACKEND_REFERENCE : DQG_BACKEND_ONEDNN;
            fz_compile_and_run(g, &o, &b);
            fz_buffers_free(&b);
        }
    }
    dqg_graph_destroy(g);
    return 0;
}
