#!/usr/bin/env python3
"""Writes the ONNX seed models of the onnx_model fuzz corpus (corpus/onnx_model/seed-*.onnx).

A hand-rolled protobuf encoder, so that it needs neither the onnx nor the protobuf Python
package: three small ModelProtos (an MLP with a dynamic batch, a convolution block, a
Gemm + Softmax) whose initializers carry raw data. Run from anywhere; rewrites the seeds.
"""
import os
import struct


def varint(n):
    if n < 0:
        n += 1 << 64
    out = bytearray()
    while True:
        b = n & 0x7F
        n >>= 7
        if n:
            out.append(b | 0x80)
        else:
            out.append(b)
            return bytes(out)


def field(number, wire, payload):
    return varint((number << 3) | wire) + payload


def v(number, value):  # varint field
    return field(number, 0, varint(value))


def s(number, data):  # length-delimited field
    if isinstance(data, str):
        data = data.encode()
    return field(number, 2, varint(len(data)) + data)


FLOAT = 1


def tensor_type(dims):
    shape = b"".join(
        s(1, s(2, d) if isinstance(d, str) else v(1, d)) for d in dims)
    return s(1, v(1, FLOAT) + s(2, shape))


def value_info(name, dims):
    return s(1, name) + s(2, tensor_type(dims))


def initializer(name, dims):
    count = 1
    for d in dims:
        count *= d
    body = b"".join(v(1, d) for d in dims) + v(2, FLOAT) + s(8, name)
    body += s(9, struct.pack("<%df" % count, *([0.5] * count)))
    return body


def attr_int(name, value):
    return s(1, name) + v(3, value) + v(20, 2)


def attr_ints(name, values):
    return s(1, name) + b"".join(v(8, x) for x in values) + v(20, 7)


def node(op, inputs, outputs, name, attrs=()):
    body = b"".join(s(1, i) for i in inputs) + b"".join(s(2, o) for o in outputs)
    body += s(3, name) + s(4, op) + b"".join(s(5, a) for a in attrs)
    return body


def model(graph_name, nodes, inits, inputs, outputs):
    graph = b"".join(s(1, n) for n in nodes) + s(2, graph_name)
    graph += b"".join(s(5, i) for i in inits)
    graph += b"".join(s(11, i) for i in inputs) + b"".join(s(12, o) for o in outputs)
    opset = s(1, "") + v(2, 13)
    return v(1, 7) + s(2, "gopt-fuzz-seed") + s(7, graph) + s(8, opset)


def main():
    out = os.path.join(os.path.dirname(os.path.abspath(__file__)), "corpus", "onnx_model")
    os.makedirs(out, exist_ok=True)
    models = {
        "seed-mlp.onnx": model(
            "mlp",
            [node("MatMul", ["x", "w1"], ["h"], "mm1"), node("Add", ["h", "b1"], ["hb"], "add1"),
             node("Relu", ["hb"], ["r"], "relu1"), node("MatMul", ["r", "w2"], ["y"], "mm2")],
            [initializer("w1", [8, 16]), initializer("b1", [16]), initializer("w2", [16, 4])],
            [value_info("x", ["batch", 8])], [value_info("y", ["batch", 4])]),
        "seed-conv.onnx": model(
            "conv",
            [node("Conv", ["x", "k"], ["c"], "conv",
                  [attr_ints("kernel_shape", [3, 3]), attr_ints("pads", [1, 1, 1, 1]),
                   attr_ints("strides", [1, 1])]),
             node("Relu", ["c"], ["r"], "relu"),
             node("MaxPool", ["r"], ["p"], "pool",
                  [attr_ints("kernel_shape", [2, 2]), attr_ints("strides", [2, 2])])],
            [initializer("k", [4, 3, 3, 3])],
            [value_info("x", [1, 3, 8, 8])], [value_info("p", [1, 4, 4, 4])]),
        "seed-gemm.onnx": model(
            "gemm",
            [node("Gemm", ["x", "w", "b"], ["g"], "gemm", [attr_int("transB", 1)]),
             node("Softmax", ["g"], ["y"], "softmax", [attr_int("axis", 1)])],
            [initializer("w", [5, 6]), initializer("b", [5])],
            [value_info("x", [2, 6])], [value_info("y", [2, 5])]),
    }
    for name, data in models.items():
        with open(os.path.join(out, name), "wb") as f:
            f.write(data)


if __name__ == "__main__":
    main()
