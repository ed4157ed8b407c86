/* Builds small ONNX models in memory through protobuf-c, for the tests and
 * fuzz seeds: every allocation is tracked by the model and freed with it. */
#ifndef DQG_TEST_ONNX_MODEL_H
#define DQG_TEST_ONNX_MODEL_H

#include <stddef.h>
#include <stdint.h>

#include "dqgraph_onnx.h"
#include "onnx.pb-c.h"

typedef struct tm_model tm_model;

/* A model importing the default domain at `opset` (0: no opset import). */
tm_model *tm_new(int64_t opset);
void tm_free(tm_model *m);
void tm_opset(tm_model *m, const char *domain, int64_t version);
/* A graph input; rank < 0 gives no shape; a dim of -1 is the symbol `sym`. */
void tm_input(tm_model *m, const char *name, int32_t onnx_type, int rank, const int64_t *dims,
              const char *sym);
/* A graph output; onnx_type 0 and rank < 0 leave type and shape unset. */
void tm_output(tm_model *m, const char *name, int32_t onnx_type, int rank, const int64_t *dims);
/* An initializer holding nbytes of raw data (little endian, 4-bit packed). */
Onnx__TensorProto *tm_init(tm_model *m, const char *name, int32_t onnx_type, int rank,
                           const int64_t *dims, const void *raw, size_t nbytes);
/* An initializer whose data lives in the external file `location`. */
Onnx__TensorProto *tm_init_external(tm_model *m, const char *name, int32_t onnx_type, int rank,
                                    const int64_t *dims, const char *location);
/* A node; inputs and outputs are comma-separated lists ("" entries allowed). */
Onnx__NodeProto *tm_node(tm_model *m, const char *op_type, const char *domain, const char *name,
                         const char *inputs, const char *outputs);
void tm_attr_int(tm_model *m, Onnx__NodeProto *n, const char *name, int64_t v);
void tm_attr_float(tm_model *m, Onnx__NodeProto *n, const char *name, float v);
void tm_attr_ints(tm_model *m, Onnx__NodeProto *n, const char *name, const int64_t *v, size_t k);
void tm_attr_string(tm_model *m, Onnx__NodeProto *n, const char *name, const char *v);
void tm_attr_floats(tm_model *m, Onnx__NodeProto *n, const char *name, const float *v, size_t k);
void tm_attr_strings(tm_model *m, Onnx__NodeProto *n, const char *name, const char *const *v,
                     size_t k);
/* The model's graph, for tests that read or take apart what they wrote. */
Onnx__GraphProto *tm_graph(tm_model *m);
/* A copy of node n (of any model) in m, with its INT, INTS and FLOAT
 * attributes. */
Onnx__NodeProto *tm_copy_node(tm_model *m, const Onnx__NodeProto *n);
/* The serialized model (malloc'd; free() it). */
uint8_t *tm_pack(tm_model *m, size_t *size);
/* Imports the serialized model (m is kept) with `opts` (NULL: defaults)
 * into *g, which stays NULL when the import fails. */
dqg_status tm_load(tm_model *m, const dqg_onnx_options *opts, dqg_graph **g);
/* Writes the serialized model to `path`; 0 on success. */
int tm_write(tm_model *m, const char *path);

#endif /* DQG_TEST_ONNX_MODEL_H */
