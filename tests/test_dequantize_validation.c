/* Every front door's rules: each invalid build gets its status and a
 * message naming the dialect, the op, the input and the rule. */
#include "test_common.h"

typedef struct dq_case {
    const char *name;
    /* x, scale, zero point (DQG_UNDEF = absent) types and shapes */
    dqg_dtype xt, st, zt;
    int xr, sr, zr;
    int64_t xd[4], sd[4], zd[4];
    bool z_runtime;
    int dialect; /* 0 ONNX, 1 DynamicDequantize, 2 Quark, 3 DirectML, 4 QuantizeLinear */
    dqg_dequantize_linear_attrs onnx;
    dqg_quantize_linear_attrs qonnx;
    const char *qtype;
    int64_t axis;
    dqg_status status;
    const char *key1, *key2;
} dq_case;

static dqg_tensor_id tensor(dqg_graph *g, const char *name, dqg_dtype t, int rank,
                            const int64_t *dims, bool runtime)
{
    if (runtime)
        return dqg_input(g, name, t, rank, dims);
    int64_t n = 1;
    for (int i = 0; i < rank; i++)
        n *= dims[i];
    size_t bytes = dqg_dtype_storage_size(t, n);
    unsigned char buf[256] = {0};
    if (t == DQG_S32 || t == DQG_S8 || t == DQG_U8)
        buf[0] = 3; /* a non-zero zero point for the int32 rule */
    return dqg_constant(g, name, t, rank, dims, buf, bytes);
}

static void run_case(const dq_case *c)
{
    dqg_graph *g = NULL;
    cr_assert_eq(dqg_graph_create(&g), DQG_OK);
    dqg_tensor_id x = dqg_input(g, "x", c->xt, c->xr, c->xd);
    dqg_tensor_id s = tensor(g, "s", c->st, c->sr, c->sd, c->dialect == 1);
    dqg_tensor_id z =
        c->zt == DQG_DTYPE_UNDEF ? DQG_NONE : tensor(g, "z", c->zt, c->zr, c->zd, c->z_runtime);
    dqg_tensor_id y = DQG_NONE;
    switch (c->dialect) {
    case 0:
        y = dqg_dequantize_linear(g, "op", x, s, z, &c->onnx);
        break;
    case 1:
        y = dqg_dynamic_dequantize(g, "op", x, s, z, c->qtype, c->axis);
        break;
    case 2:
        y = dqg_extended_dequantize_linear(g, "op", x, s, z, c->axis);
        break;
    case 3:
        y = dqg_dml_dequantize(g, "op", x, s, z);
        break;
    default:
        y = dqg_quantize_linear(g, "op", x, s, z, &c->qonnx);
        break;
    }
    if (y != DQG_NONE)
        dqg_output(g, y, "y");
    dqg_status st = dqg_graph_finalize(g);
    cr_assert_eq(st, c->status, "%s: status %s (%s)", c->name, dqg_status_name(st),
                 dqg_last_error());
    cr_assert(strstr(dqg_last_error(), c->key1), "%s: \"%s\" lacks \"%s\"", c->name,
              dqg_last_error(), c->key1);
    if (c->key2)
        cr_assert(strstr(dqg_last_error(), c->key2), "%s: \"%s\" lacks \"%s\"", c->name,
                  dqg_last_error(), c->key2);
    dqg_graph_destroy(g);
}

#define U DQG_DTYPE_UNDEF
#define BAD DQG_INVALID_ARGUMENT
#define ONNX(op, ...) .dialect = 0, .onnx = {.opset = op, __VA_ARGS__}
#define QL(op, ...) .dialect = 4, .qonnx = {.opset = op, __VA_ARGS__}

static const dq_case onnx_cases[] = {
    {"s16 before opset 21", DQG_S16, DQG_F32, U, 1, 0, 0, {4}, {0}, {0}, false, ONNX(19), .status = BAD, .key1 = "DequantizeLinear-19 'op': input 0 (x)", .key2 = "data type s16 is not allowed"},
    {"u4 at opset 13", DQG_U4, DQG_F32, U, 1, 0, 0, {4}, {0}, {0}, false, ONNX(13), .status = BAD, .key1 = "DequantizeLinear-13", .key2 = "u4"},
    {"float8 at opset 13", DQG_F8E4M3FN, DQG_F32, U, 1, 0, 0, {4}, {0}, {0}, false, ONNX(13), .status = BAD, .key1 = "input 0 (x)", .key2 = "f8e4m3fn"},
    {"f4e2m1 at opset 21", DQG_F4E2M1, DQG_F32, U, 1, 0, 0, {4}, {0}, {0}, false, ONNX(21), .status = BAD, .key1 = "DequantizeLinear-21", .key2 = "f4e2m1"},
    {"f16 input", DQG_F16, DQG_F32, U, 1, 0, 0, {4}, {0}, {0}, false, ONNX(23), .status = BAD, .key1 = "input 0 (x)", .key2 = "f16"},
    {"f16 scale at opset 13", DQG_U8, DQG_F16, U, 1, 0, 0, {4}, {0}, {0}, false, ONNX(13), .status = BAD, .key1 = "input 1 (x_scale)", .key2 = "expected f32"},
    {"s8 scale", DQG_U8, DQG_S8, U, 1, 0, 0, {4}, {0}, {0}, false, ONNX(21), .status = BAD, .key1 = "input 1 (x_scale)", .key2 = "s8"},
    {"zero point type differs", DQG_U8, DQG_F32, DQG_S8, 1, 0, 0, {4}, {0}, {0}, false, ONNX(13), .status = BAD, .key1 = "input 2 (x_zero_point)", .key2 = "differs from x's u8"},
    {"zero point shape differs", DQG_U8, DQG_F32, DQG_U8, 2, 1, 0, {2, 3}, {3}, {0}, false, ONNX(13), .status = BAD, .key1 = "input 2 (zero point)", .key2 = "differs from the scale's shape [3]"},
    {"axis out of range", DQG_U8, DQG_F32, U, 2, 1, 0, {2, 3}, {3}, {0}, false, ONNX(13, .has_axis = true, .axis = 2), .status = BAD, .key1 = "axis 2 is outside [-2, 1]", .key2 = NULL},
    {"negative axis out of range", DQG_U8, DQG_F32, U, 2, 1, 0, {2, 3}, {2}, {0}, false, ONNX(13, .has_axis = true, .axis = -3), .status = BAD, .key1 = "axis -3 is outside", .key2 = NULL},
    {"per-axis length differs", DQG_U8, DQG_F32, U, 2, 1, 0, {2, 3}, {4}, {0}, false, ONNX(13, .has_axis = true, .axis = 1), .status = BAD, .key1 = "per-axis length 4 differs from x's dimension 3 on axis 1", .key2 = NULL},
    {"per-axis on default axis", DQG_U8, DQG_F32, U, 2, 1, 0, {2, 3}, {2}, {0}, false, ONNX(13), .status = BAD, .key1 = "per-axis length 2 differs", .key2 = NULL},
    {"axis before opset 13", DQG_U8, DQG_F32, U, 1, 0, 0, {4}, {0}, {0}, false, ONNX(10, .has_axis = true, .axis = 0), .status = BAD, .key1 = "DequantizeLinear-10", .key2 = "axis is not an attribute before opset 13"},
    {"1-D scale at opset 10", DQG_U8, DQG_F32, U, 2, 1, 0, {2, 3}, {3}, {0}, false, ONNX(10), .status = BAD, .key1 = "must be a scalar (per-tensor) before opset 13", .key2 = NULL},
    {"block_size before opset 21", DQG_U8, DQG_F32, U, 2, 2, 0, {4, 2}, {2, 2}, {0}, false, ONNX(19, .has_axis = true, .axis = 0, .block_size = 2), .status = BAD, .key1 = "block_size is not an attribute before opset 21", .key2 = NULL},
    {"output_dtype before opset 23", DQG_U8, DQG_F32, U, 1, 0, 0, {4}, {0}, {0}, false, ONNX(21, .output_dtype = DQG_F16), .status = BAD, .key1 = "output_dtype is not an attribute before opset 23", .key2 = NULL},
    {"output_dtype not float", DQG_U8, DQG_F32, U, 1, 0, 0, {4}, {0}, {0}, false, ONNX(23, .output_dtype = DQG_S8), .status = BAD, .key1 = "output_dtype s8 is not allowed", .key2 = NULL},
    {"block_size below range", DQG_S4, DQG_F32, U, 2, 2, 0, {28, 2}, {4, 2}, {0}, false, ONNX(21, .has_axis = true, .axis = 0, .block_size = 6), .status = BAD, .key1 = "block_size 6 is outside [7, 9] for axis 0 (dim 28, scale dim 4)", .key2 = NULL},
    {"block_size above range", DQG_S4, DQG_F32, U, 2, 2, 0, {28, 2}, {4, 2}, {0}, false, ONNX(21, .has_axis = true, .axis = 0, .block_size = 10), .status = BAD, .key1 = "block_size 10 is outside [7, 9]", .key2 = NULL},
    {"block_size below dim with one block", DQG_S4, DQG_F32, U, 2, 2, 0, {5, 2}, {1, 2}, {0}, false, ONNX(21, .has_axis = true, .axis = 0, .block_size = 4), .status = BAD, .key1 = "block_size 4 is below 5", .key2 = NULL},
    {"negative block_size", DQG_S4, DQG_F32, U, 2, 2, 0, {4, 2}, {2, 2}, {0}, false, ONNX(21, .has_axis = true, .axis = 0, .block_size = -2), .status = BAD, .key1 = "block_size -2 must be positive", .key2 = NULL},
    {"blocked scale rank wrong", DQG_S4, DQG_F32, U, 2, 1, 0, {4, 2}, {2}, {0}, false, ONNX(21, .has_axis = true, .axis = 0, .block_size = 2), .status = BAD, .key1 = "blocked quantization needs a scale of x's rank 2", .key2 = NULL},
    {"blocked scale shape wrong", DQG_S4, DQG_F32, U, 2, 2, 0, {4, 2}, {2, 3}, {0}, false, ONNX(21, .has_axis = true, .axis = 0, .block_size = 2), .status = BAD, .key1 = "except on axis 0 (dimension 1 differs)", .key2 = NULL},
    {"rank-2 scale without block_size", DQG_S4, DQG_F32, U, 2, 2, 0, {4, 2}, {2, 2}, {0}, false, ONNX(21), .status = BAD, .key1 = "nor a blocked scale (block_size is 0)", .key2 = NULL},
    {"opset 9", DQG_U8, DQG_F32, U, 1, 0, 0, {4}, {0}, {0}, false, ONNX(9), .status = DQG_UNSUPPORTED, .key1 = "opset 9 is not supported", .key2 = NULL},
    {"opset 24", DQG_U8, DQG_F32, U, 1, 0, 0, {4}, {0}, {0}, false, ONNX(24), .status = DQG_UNSUPPORTED, .key1 = "opset 24 is not supported", .key2 = NULL},
    {"int32 constant non-zero zero point", DQG_S32, DQG_F32, DQG_S32, 1, 0, 0, {4}, {0}, {0}, false, ONNX(13), .status = BAD, .key1 = "input 2 (zero point): element 0 is 3 (constant)", .key2 = "int32 input has no zero point"},
};

static const dq_case other_cases[] = {
    {"dynamic: f32 src", DQG_F32, DQG_F32, U, 1, 1, 0, {4}, {1}, {0}, false, .dialect = 1, .status = BAD, .key1 = "DynamicDequantize 'op': input 0 (src)", .key2 = "expected s8 or u8"},
    {"dynamic: s16 src", DQG_S16, DQG_F32, U, 1, 1, 0, {4}, {1}, {0}, false, .dialect = 1, .status = BAD, .key1 = "input 0 (src)", .key2 = "s16"},
    {"dynamic: f16 scales", DQG_S8, DQG_F16, U, 1, 1, 0, {4}, {1}, {0}, false, .dialect = 1, .status = BAD, .key1 = "input 1 (scales)", .key2 = "f16"},
    {"dynamic: s16 zps", DQG_S8, DQG_F32, DQG_S16, 1, 1, 1, {4}, {1}, {1}, true, .dialect = 1, .status = BAD, .key1 = "input 2 (zps)", .key2 = "expected s8, u8 or s32"},
    {"dynamic: qtype misspelt", DQG_S8, DQG_F32, U, 1, 1, 0, {4}, {1}, {0}, false, .dialect = 1, .qtype = "per-tensor", .status = BAD, .key1 = "qtype 'per-tensor' is not per_tensor or per_channel", .key2 = NULL},
    {"dynamic: per_tensor with 3 scales", DQG_S8, DQG_F32, U, 1, 1, 0, {3}, {3}, {0}, false, .dialect = 1, .qtype = "per_tensor", .status = BAD, .key1 = "per_tensor needs 1 element, got 3", .key2 = NULL},
    {"dynamic: per_channel length", DQG_S8, DQG_F32, U, 2, 1, 0, {2, 3}, {2}, {0}, false, .dialect = 1, .qtype = "per_channel", .axis = 1, .status = BAD, .key1 = "per_channel needs 3 elements, got 2", .key2 = NULL},
    {"dynamic: zps length", DQG_S8, DQG_F32, DQG_S32, 2, 1, 1, {2, 3}, {3}, {2}, true, .dialect = 1, .qtype = "per_channel", .axis = 1, .status = BAD, .key1 = "input 2 (zps): per_channel needs 3 elements, got 2", .key2 = NULL},
    {"dynamic: axis out of range", DQG_S8, DQG_F32, U, 2, 1, 0, {2, 3}, {3}, {0}, false, .dialect = 1, .qtype = "per_channel", .axis = -3, .status = BAD, .key1 = "axis -3 is outside [-2, 1]", .key2 = NULL},
    {"dynamic: rank-0 scales", DQG_S8, DQG_F32, U, 1, 0, 0, {3}, {0}, {0}, false, .dialect = 1, .status = BAD, .key1 = "input 1 (scales): must be 1-D", .key2 = NULL},
    {"quark: s4 x", DQG_S4, DQG_F32, U, 1, 0, 0, {4}, {0}, {0}, false, .dialect = 2, .axis = 1, .status = BAD, .key1 = "ExtendedDequantizeLinear 'op': input 0 (x)", .key2 = "s4"},
    {"quark: float8 x", DQG_F8E5M2, DQG_F32, U, 1, 0, 0, {4}, {0}, {0}, false, .dialect = 2, .axis = 1, .status = BAD, .key1 = "input 0 (x)", .key2 = "f8e5m2"},
    {"quark: f16 scale", DQG_U16, DQG_F16, U, 1, 0, 0, {4}, {0}, {0}, false, .dialect = 2, .axis = 1, .status = BAD, .key1 = "input 1 (x_scale)", .key2 = "expected f32"},
    {"quark: zero point type", DQG_U16, DQG_F32, DQG_S16, 1, 0, 0, {4}, {0}, {0}, false, .dialect = 2, .axis = 1, .status = BAD, .key1 = "input 2 (x_zero_point): data type s16 is not allowed", .key2 = "expected x's type u16 or f32"},
    {"quark: per-axis length", DQG_U16, DQG_F32, U, 2, 1, 0, {2, 3}, {2}, {0}, false, .dialect = 2, .axis = 1, .status = BAD, .key1 = "per-axis length 2 differs", .key2 = NULL},
    {"quark: axis out of range", DQG_U16, DQG_F32, U, 2, 1, 0, {2, 3}, {3}, {0}, false, .dialect = 2, .axis = 5, .status = BAD, .key1 = "axis 5 is outside", .key2 = NULL},
    {"quark: int32 non-zero zero point", DQG_S32, DQG_F32, DQG_S32, 1, 0, 0, {4}, {0}, {0}, false, .dialect = 2, .axis = 1, .status = BAD, .key1 = "ExtendedDequantizeLinear 'op'", .key2 = "int32 input has no zero point"},
    {"dml: float8 input", DQG_F8E4M3FN, DQG_F32, U, 1, 1, 0, {4}, {4}, {0}, false, .dialect = 3, .status = BAD, .key1 = "DML_ELEMENT_WISE_DEQUANTIZE_LINEAR 'op': input 0 (InputTensor)", .key2 = "f8e4m3fn"},
    {"dml: s4 input", DQG_S4, DQG_F32, U, 1, 1, 0, {4}, {4}, {0}, false, .dialect = 3, .status = BAD, .key1 = "InputTensor", .key2 = "s4"},
    {"dml: bf16 scale", DQG_U8, DQG_BF16, U, 1, 1, 0, {4}, {4}, {0}, false, .dialect = 3, .status = BAD, .key1 = "input 1 (ScaleTensor)", .key2 = "expected f32 or f16"},
    {"dml: shapes differ", DQG_U8, DQG_F32, U, 2, 2, 0, {2, 3}, {2, 1}, {0}, false, .dialect = 3, .status = BAD, .key1 = "shape [2,1] differs from x's shape [2,3]", .key2 = "identical sizes"},
    {"dml: scale rank differs", DQG_U8, DQG_F32, U, 2, 1, 0, {2, 3}, {3}, {0}, false, .dialect = 3, .status = BAD, .key1 = "the element-wise form needs identical sizes", .key2 = NULL},
    {"dml: zero point shape differs", DQG_U8, DQG_F32, DQG_U8, 1, 1, 1, {4}, {4}, {3}, false, .dialect = 3, .status = BAD, .key1 = "input 2 (zero point)", .key2 = "differs from the scale's shape"},
    {"dml: zero point type differs", DQG_U8, DQG_F32, DQG_S8, 1, 1, 1, {4}, {4}, {4}, false, .dialect = 3, .status = BAD, .key1 = "input 2 (ZeroPointTensor)", .key2 = "differs from InputTensor's u8"},
    {"dml: rank 0", DQG_U8, DQG_F32, U, 0, 0, 0, {0}, {0}, {0}, false, .dialect = 3, .status = BAD, .key1 = "rank 0 is outside [1, 8]", .key2 = NULL},
    {"quantize: s16 output at opset 19", DQG_F32, DQG_F32, DQG_S16, 1, 0, 0, {4}, {0}, {0}, false, QL(19), .status = BAD, .key1 = "QuantizeLinear-19 'op': input 2 (y_zero_point)", .key2 = "s16"},
    {"quantize: f16 x at opset 13", DQG_F16, DQG_F16, U, 1, 0, 0, {4}, {0}, {0}, false, QL(13), .status = BAD, .key1 = "QuantizeLinear-13 'op': input 0 (x)", .key2 = "expected f32"},
    {"quantize: scale type differs", DQG_F32, DQG_F16, U, 1, 0, 0, {4}, {0}, {0}, false, QL(19), .status = BAD, .key1 = "input 1 (y_scale): data type f16 differs from x's f32", .key2 = NULL},
    {"quantize: saturate on integers", DQG_F32, DQG_F32, DQG_U8, 1, 0, 0, {4}, {0}, {0}, false, QL(19, .no_saturate = true), .status = BAD, .key1 = "saturate=0 applies to float8 outputs only", .key2 = NULL},
    {"quantize: output_dtype disagrees", DQG_F32, DQG_F32, DQG_U8, 1, 0, 0, {4}, {0}, {0}, false, QL(21, .output_dtype = DQG_S8), .status = BAD, .key1 = "output_dtype s8 differs from the zero point's type u8", .key2 = NULL},
    {"quantize: block_size before 21", DQG_F32, DQG_F32, U, 2, 2, 0, {4, 2}, {2, 2}, {0}, false, QL(19, .has_axis = true, .axis = 0, .block_size = 2), .status = BAD, .key1 = "block_size is not an attribute before opset 21", .key2 = NULL},
    {"quantize: opset 8", DQG_F32, DQG_F32, U, 1, 0, 0, {4}, {0}, {0}, false, QL(8), .status = DQG_UNSUPPORTED, .key1 = "QuantizeLinear 'op': opset 8 is not supported", .key2 = NULL},
};

Test(dequantize_validation, onnx_rules)
{
    for (size_t i = 0; i < sizeof onnx_cases / sizeof *onnx_cases; i++)
        run_case(&onnx_cases[i]);
}

Test(dequantize_validation, other_dialect_rules)
{
    for (size_t i = 0; i < sizeof other_cases / sizeof *other_cases; i++)
        run_case(&other_cases[i]);
}

Test(dequantize_validation, null_attrs_and_unknown_ids)
{
    dqg_graph *g;
    cr_assert_eq(dqg_graph_create(&g), DQG_OK);
    int64_t d = 4;
    dqg_tensor_id x = dqg_input(g, "x", DQG_U8, 1, &d);
    cr_assert_eq(dqg_dequantize_linear(g, "op", x, 99, DQG_NONE, NULL), DQG_NONE);
    expect_error(dqg_graph_finalize(g), DQG_INVALID_ARGUMENT, "attrs is NULL; the opset is required");
    dqg_graph_destroy(g);
    cr_assert_eq(dqg_graph_create(&g), DQG_OK);
    x = dqg_input(g, "x", DQG_U8, 1, &d);
    dqg_dequantize_linear_attrs a = {.opset = 13};
    cr_assert_eq(dqg_dequantize_linear(g, "op", x, 99, DQG_NONE, &a), DQG_NONE);
    expect_error(dqg_graph_finalize(g), DQG_INVALID_ARGUMENT, "DequantizeLinear-13 'op'",
                 "input 1 (x_scale): unknown tensor id 99");
    dqg_graph_destroy(g);
}
