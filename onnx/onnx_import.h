/* Internal to onnx/: the import context shared by the model loader and the
 * per-operator importers, the name table, and TensorProto decoding. */
#ifndef DQG_ONNX_IMPORT_H
#define DQG_ONNX_IMPORT_H

#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>

#include "dqgraph.h"
#include "dqgraph_onnx.h"
#include "onnx.pb-c.h"

/* ---- Name table (onnx/name_table.c): string -> int32, keys copied --------- */

typedef struct onnx_name_table {
    char **keys;
    int32_t *vals;
    size_t cap, count;
} onnx_name_table;

void onnx_names_free(onnx_name_table *t);
/* -1 when the key is absent. */
int32_t onnx_names_get(const onnx_name_table *t, const char *key);
/* Inserts or replaces; false on out of memory. */
bool onnx_names_put(onnx_name_table *t, const char *key, int32_t val);

/* ---- Wire-format check before decoding (onnx/wire_check.c) ------------- */

/* Refuses messages nested more than 100 deep (protobuf-c's decoder would
 * recurse that deep) and string fields other than doc_string holding a NUL
 * byte. Malformed bytes pass: the decoder reports them. `what` starts the
 * message. */
dqg_status onnx_wire_check(const ProtobufCMessageDescriptor *d, const void *data, size_t size,
                           const char *what);

/* ---- Data types and TensorProto decoding (onnx/tensor_proto.c) ----------- */

/* ONNX TensorProto.DataType numbers dqgraph knows (onnx.proto of any
 * version: newer types are plain integers in the int32 data_type field). */
enum {
    ONNX_FLOAT = 1,
    ONNX_UINT8 = 2,
    ONNX_INT8 = 3,
    ONNX_UINT16 = 4,
    ONNX_INT16 = 5,
    ONNX_INT32 = 6,
    ONNX_INT64 = 7,
    ONNX_STRING = 8,
    ONNX_BOOL = 9,
    ONNX_FLOAT16 = 10,
    ONNX_DOUBLE = 11,
    ONNX_UINT32 = 12,
    ONNX_UINT64 = 13,
    ONNX_BFLOAT16 = 16,
    ONNX_FLOAT8E4M3FN = 17,
    ONNX_FLOAT8E4M3FNUZ = 18,
    ONNX_FLOAT8E5M2 = 19,
    ONNX_FLOAT8E5M2FNUZ = 20,
    ONNX_UINT4 = 21,
    ONNX_INT4 = 22,
    ONNX_FLOAT4E2M1 = 23,
};

/* DQG_DTYPE_UNDEF for types dqgraph does not have. */
dqg_dtype onnx_dtype_to_dqg(int64_t onnx_type);
/* 0 for DQG_DTYPE_UNDEF. */
int32_t onnx_dtype_from_dqg(dqg_dtype dtype);
/* "FLOAT", "DOUBLE", ... or "type 42". buf holds at least 32 bytes. */
const char *onnx_dtype_name(int64_t onnx_type, char *buf, size_t size);

/* A decoded tensor in dqgraph's storage layout (owned). */
typedef struct onnx_tensor {
    dqg_dtype dtype;
    int rank;
    int64_t dims[DQG_MAX_RANK];
    int64_t nelems;
    void *data; /* nbytes bytes; never NULL after a successful decode */
    size_t nbytes;
} onnx_tensor;

/* Where a TensorProto may find external data, and how much it may read. */
typedef struct onnx_external_ctx {
    const char *base_dir; /* NULL: external data is rejected */
    uint64_t budget;      /* bytes still allowed */
} onnx_external_ctx;

/* Decodes `t` (raw_data, typed fields or external data). `what` names it in
 * messages ("initializer 'w'"). allow_empty admits dimensions of size 0
 * (tensor files); the graph cannot hold them. ext may be NULL. */
dqg_status onnx_tensor_decode(const Onnx__TensorProto *t, const char *what, bool allow_empty,
                              onnx_external_ctx *ext, onnx_tensor *out);
void onnx_tensor_release(onnx_tensor *t);
/* Element i as double (exact for every dqgraph type). */
double onnx_tensor_get(const onnx_tensor *t, int64_t i);

/* Reads a whole regular file of at most `limit` bytes into malloc'd memory
 * (onnx/tensor_file.c). */
/* Opens a regular file for reading (or creates/truncates one for
 * writing) without blocking on a FIFO: NULL with errno set, and
 * *not_regular when the path exists and is not a regular file. */
FILE *onnx_open_regular(const char *path, bool write, bool *not_regular);
dqg_status onnx_read_file(const char *path, uint64_t limit, uint8_t **data, size_t *size);

/* ---- Import context (onnx/model_import.c) -------------------------------- */

typedef enum onnx_value_kind {
    ONNX_VALUE_INPUT = 0,   /* graph input (dqg_input) */
    ONNX_VALUE_INITIALIZER, /* constant from the graph's initializers, decoded on use */
    ONNX_VALUE_CONSTANT,    /* constant from a Constant node or a frozen input */
    ONNX_VALUE_NODE,        /* produced by a node */
} onnx_value_kind;

typedef struct onnx_value {
    const char *name; /* points into the model */
    onnx_value_kind kind;
    const Onnx__TensorProto *proto; /* initializers */
    bool decoded;
    onnx_tensor value; /* constants, once decoded */
    dqg_tensor_id id;  /* DQG_NONE until materialized */
    int32_t producer;  /* node index, -1 for inputs and initializers */
    int32_t alias;     /* value this one is an alias of (Identity), or -1 */
    int32_t n_consumers;
    bool is_graph_output;
    bool needs_const;    /* a node reads it while building */
    bool is_graph_input; /* declared in GraphProto.input (and not shadowed) */
} onnx_value;

typedef struct onnx_import {
    dqg_graph *g;
    const Onnx__ModelProto *model;
    const dqg_onnx_options *opts;
    onnx_external_ctx ext;
    int64_t opset;       /* default domain; 0 when not imported */
    int64_t quark_opset; /* com.amd.quark; 0 when not imported */
    onnx_value *values;
    int32_t n_values;
    onnx_name_table value_index; /* ONNX value name -> values[] */
    onnx_name_table taken;       /* names of ops and internal constants */
    char **owned_names;
    size_t n_owned, cap_owned;
    /* The node being imported. */
    const Onnx__NodeProto *node;
    int32_t node_index;
    int64_t node_opset;
    const char *node_base; /* op-name base: the node name, or OpType_index */
} onnx_import;

/* An operator importer: reads c->node, builds ops, sets the node's outputs. */
typedef dqg_status (*onnx_import_fn)(onnx_import *c);

typedef struct onnx_op_entry {
    const char *domain; /* "" (ai.onnx), "com.amd.quark" or "com.microsoft" */
    const char *op_type;
    onnx_import_fn import;
    /* Inputs read at build time (bit i = input i), given the node's opset. */
    unsigned (*const_inputs)(int64_t opset);
} onnx_op_entry;

extern const onnx_op_entry onnx_quant_ops[];
extern const size_t onnx_n_quant_ops;
extern const onnx_op_entry onnx_nn_ops[];
extern const size_t onnx_n_nn_ops;
extern const onnx_op_entry onnx_more_ops[];
extern const size_t onnx_n_more_ops;
extern const onnx_op_entry onnx_logic_ops[];
extern const size_t onnx_n_logic_ops;
extern const onnx_op_entry onnx_rnn_ops[];
extern const size_t onnx_n_rnn_ops;
/* Most inputs of a variadic node (Concat, Sum): the graph's limit. */
#define DQG_ONNX_MAX_VARIADIC 4096

/* Fails the current node: "<OpType> node '<name>' (domain '...', opset N):
 * <message>". Returns `status`. */
dqg_status onnx_node_fail(onnx_import *c, dqg_status status, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
/* After a builder call returned DQG_NONE: the builder's status, with its
 * message prefixed by the node. */
dqg_status onnx_builder_failed(onnx_import *c);

/* Input i's name, or NULL when it is absent (missing or ""). */
const char *onnx_input_name(const onnx_import *c, int i);
/* The value behind input i (aliases followed), or NULL when absent. */
onnx_value *onnx_input_value(onnx_import *c, int i);
/* Input i as a graph tensor (constants are added on first use). An absent
 * input gives DQG_NONE, or an error when `required`. */
dqg_status onnx_input(onnx_import *c, int i, const char *what, bool required, dqg_tensor_id *out);
/* Input i's constant value; an error when it is absent (and required) or not
 * a constant. *out is NULL for an absent optional input. */
dqg_status onnx_input_const(onnx_import *c, int i, const char *what, bool required,
                            const onnx_tensor **out);
bool onnx_input_is_const(onnx_import *c, int i);
/* Records `id` as the node's output i (ignored when the output is unnamed). */
dqg_status onnx_set_output(onnx_import *c, int i, dqg_tensor_id id);
/* Makes output i an alias of input j (Identity and no-op casts). */
dqg_status onnx_alias_output(onnx_import *c, int i, int j);
/* Makes output i a constant value (Constant nodes); takes ownership of t. */
dqg_status onnx_const_output(onnx_import *c, int i, onnx_tensor *t);
/* The value record of output i, or NULL when it is unnamed. */
onnx_value *onnx_output_value(onnx_import *c, int i);

/* A name for an op or internal constant, unique and distinct from every
 * ONNX value name: the node's base name, plus "/suffix" when suffix is not
 * NULL. Owned by the context; NULL on out of memory (error set). */
const char *onnx_op_name(onnx_import *c, const char *suffix);
/* A constant tensor named onnx_op_name(c, suffix). */
dqg_tensor_id onnx_add_constant(onnx_import *c, const char *suffix, dqg_dtype dtype, int rank,
                                const int64_t *dims, const void *data);
/* A scalar constant (rank 0) of a float type holding v. */
dqg_tensor_id onnx_add_scalar(onnx_import *c, const char *suffix, dqg_dtype dtype, float v);

/* Attributes of the current node. */
const Onnx__AttributeProto *onnx_attr(const onnx_import *c, const char *name);
dqg_status onnx_attr_int(onnx_import *c, const char *name, int64_t def, int64_t *out);
dqg_status onnx_attr_float(onnx_import *c, const char *name, float def, float *out);
/* *n = 0 and *vals = NULL when absent; *present tells (may be NULL). */
dqg_status onnx_attr_ints(onnx_import *c, const char *name, const int64_t **vals, size_t *n,
                          bool *present);
/* FLOATS and STRINGS attributes: *n = 0 and *vals = NULL when absent (the
 * strings are not NUL-terminated). */
dqg_status onnx_attr_floats(onnx_import *c, const char *name, const float **vals, size_t *n);
dqg_status onnx_attr_strings(onnx_import *c, const char *name, const ProtobufCBinaryData **vals,
                             size_t *n);
/* Copies a string attribute (NUL-terminated) into buf, or def when absent. */
dqg_status onnx_attr_string(onnx_import *c, const char *name, const char *def, char *buf,
                            size_t size);
/* The node has min_in..max_in inputs and min_out..max_out outputs (counting
 * trailing absent ones as present). */
dqg_status onnx_check_arity(onnx_import *c, int min_in, int max_in, int min_out, int max_out);
/* Every attribute of the node must be in the NULL-terminated list. */
dqg_status onnx_check_attrs(onnx_import *c, const char *const *known);

/* Shape and type of a graph tensor. */
typedef struct onnx_shape {
    dqg_dtype dtype;
    int rank;
    int64_t dims[DQG_MAX_RANK];
    int64_t nelems;
} onnx_shape;
onnx_shape onnx_tensor_shape(const onnx_import *c, dqg_tensor_id id);

/* "f32, f16 or bf16": checks that tensor `id` (input i) has a float type,
 * else DQG_UNSUPPORTED naming the type. */
dqg_status onnx_require_float(onnx_import *c, int i, dqg_tensor_id id);

#endif /* DQG_ONNX_IMPORT_H */
