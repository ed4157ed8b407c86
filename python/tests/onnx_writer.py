"""A minimal ONNX model writer for the tests (no onnx package needed): the
protobuf wire format of the few ModelProto fields a QDQ graph uses, with
tensors given in dqgraph's storage form, which is ONNX's raw_data layout
(4-bit types packed two per byte, low nibble first; f16, bf16 and float8 as
their bit patterns, little-endian)."""

import struct

import numpy as np

from dqgraph import dtypes

# TensorProto.DataType
ONNX_TYPE = {
    "f32": 1, "u8": 2, "s8": 3, "u16": 4, "s16": 5, "s32": 6, "s64": 7, "f16": 10, "u32": 12,
    "bf16": 16, "f8e4m3fn": 17, "f8e4m3fnuz": 18, "f8e5m2": 19, "f8e5m2fnuz": 20, "u4": 21,
    "s4": 22, "f4e2m1": 23,
}


def _varint(n):
    n &= (1 << 64) - 1  # negative int64 values take ten bytes, as in protobuf
    out = bytearray()
    while True:
        b = n & 0x7F
        n >>= 7
        if n:
            out.append(b | 0x80)
        else:
            out.append(b)
            return bytes(out)


def _key(field, wire):
    return _varint(field << 3 | wire)


def _int(field, n):
    return _key(field, 0) + _varint(n)


def _bytes(field, data):
    if isinstance(data, str):
        data = data.encode()
    return _key(field, 2) + _varint(len(data)) + data


def _float(field, x):
    return _key(field, 5) + struct.pack("<f", x)


def tensor(name, dtype, shape, storage):
    """TensorProto of a tensor held in `storage` (dqgraph's storage form)."""
    body = b"".join(_int(1, d) for d in shape) + _int(2, ONNX_TYPE[dtype]) + _bytes(8, name)
    return body + _bytes(9, np.ascontiguousarray(storage).tobytes())


def value_info(name, dtype, shape):
    dims = b"".join(_bytes(1, _int(1, d) if isinstance(d, int) else _bytes(2, d)) for d in shape)
    tensor_type = _int(1, ONNX_TYPE[dtype]) + _bytes(2, dims)
    return _bytes(1, name) + _bytes(2, _bytes(1, tensor_type))


def attribute(name, value):
    """INT, FLOAT or INTS attribute."""
    if isinstance(value, float):
        return _bytes(1, name) + _int(20, 1) + _float(2, value)
    if isinstance(value, (list, tuple)):
        return _bytes(1, name) + _int(20, 7) + b"".join(_int(8, v) for v in value)
    return _bytes(1, name) + _int(20, 2) + _int(3, value)


def node(op_type, inputs, outputs, name, **attrs):
    body = b"".join(_bytes(1, i) for i in inputs) + b"".join(_bytes(2, o) for o in outputs)
    body += _bytes(3, name) + _bytes(4, op_type)
    return body + b"".join(_bytes(5, attribute(k, v)) for k, v in attrs.items())


class Model:
    """Collects nodes, initializers, inputs and outputs; bytes() is the model."""

    def __init__(self, opset):
        self.opset, self.nodes, self.inits, self.inputs, self.outputs = opset, [], [], [], []

    def input(self, name, dtype, shape):
        self.inputs.append(value_info(name, dtype, shape))
        return name

    def init(self, name, dtype, shape, storage):
        assert storage.dtype == dtypes.storage(dtype)
        self.inits.append(tensor(name, dtype, shape, storage))
        return name

    def node(self, op_type, inputs, output, **attrs):
        self.nodes.append(node(op_type, inputs, [output], output, **attrs))
        return output

    def output(self, name, dtype, shape):
        self.outputs.append(value_info(name, dtype, shape))

    def bytes(self):
        graph = b"".join(_bytes(1, n) for n in self.nodes) + _bytes(2, "g")
        graph += b"".join(_bytes(5, t) for t in self.inits)
        graph += b"".join(_bytes(11, v) for v in self.inputs)
        graph += b"".join(_bytes(12, v) for v in self.outputs)
        opset = _bytes(1, "") + _int(2, self.opset)
        return _int(1, 9) + _bytes(8, opset) + _bytes(7, graph)
