#!/usr/bin/env python3
"""Writes a real ResNet-18 (torchvision's architecture: 7x7 stem, four stages of two basic
blocks, 64-128-256-512 channels, 1x1 strided downsampling, global average pool, 1000-way
classifier) with random weights as ONNX, built with onnx.helper, into the folder given as the
only argument: model.onnx (opset 17, batch-norm kept as BatchNormalization nodes, ~47 MB of
weights), input_0.npy (one 3x224x224 image) and output_0.npy (ONNX Runtime's logits: CPU
provider, graph optimizations off, one thread). scripts/make-onnx-test-data runs it in the test
set-up; the model is too large to commit. Seeded, so it writes the same model every time.
Needs numpy, onnx and onnxruntime (no torch).
"""
import os
import sys

import numpy as np
import onnx
import onnxruntime as ort
from onnx import TensorProto, helper, numpy_helper

RNG = np.random.default_rng(20261201)


class Builder:
    """Collects nodes and initializers; each method adds one layer and returns its output name."""

    def __init__(self):
        self.nodes, self.initializers = [], []

    def weight(self, name, array):
        self.initializers.append(numpy_helper.from_array(array.astype(np.float32), name))
        return name

    def conv(self, name, x, cin, cout, kernel, stride, padding):
        fan_in = cin * kernel * kernel
        w = self.weight(name + ".weight", RNG.normal(0, np.sqrt(2.0 / fan_in), (cout, cin, kernel, kernel)))
        self.nodes.append(helper.make_node("Conv", [x, w], [name], name=name, kernel_shape=[kernel, kernel],
                                           strides=[stride, stride], pads=[padding] * 4))
        return name

    def batch_norm(self, name, x, channels):
        """Random (non-trivial) scale, bias and running statistics."""
        inputs = [x, self.weight(name + ".weight", RNG.uniform(0.5, 1.5, channels)),
                  self.weight(name + ".bias", RNG.uniform(-0.2, 0.2, channels)),
                  self.weight(name + ".running_mean", RNG.uniform(-0.2, 0.2, channels)),
                  self.weight(name + ".running_var", RNG.uniform(0.5, 2.0, channels))]
        self.nodes.append(helper.make_node("BatchNormalization", inputs, [name], name=name, epsilon=1e-5))
        return name

    def op(self, op_type, name, inputs, **attributes):
        self.nodes.append(helper.make_node(op_type, inputs, [name], name=name, **attributes))
        return name

    def basic_block(self, name, x, cin, cout, stride):
        y = self.batch_norm(name + ".bn1", self.conv(name + ".conv1", x, cin, cout, 3, stride, 1), cout)
        y = self.op("Relu", name + ".relu1", [y])
        y = self.batch_norm(name + ".bn2", self.conv(name + ".conv2", y, cout, cout, 3, 1, 1), cout)
        shortcut = x
        if stride != 1 or cin != cout:
            shortcut = self.batch_norm(name + ".downsample.1",
                                       self.conv(name + ".downsample.0", x, cin, cout, 1, stride, 0), cout)
        return self.op("Relu", name + ".relu2", [self.op("Add", name + ".add", [y, shortcut])])


def resnet18():
    b = Builder()
    x = b.batch_norm("bn1", b.conv("conv1", "image", 3, 64, 7, 2, 3), 64)
    x = b.op("Relu", "relu", [x])
    x = b.op("MaxPool", "maxpool", [x], kernel_shape=[3, 3], strides=[2, 2], pads=[1, 1, 1, 1])
    channels = 64
    for stage, width in enumerate([64, 128, 256, 512], start=1):
        for block in range(2):
            stride = 2 if stage > 1 and block == 0 else 1
            x = b.basic_block(f"layer{stage}.{block}", x, channels, width, stride)
            channels = width
    x = b.op("Flatten", "flatten", [b.op("GlobalAveragePool", "avgpool", [x])], axis=1)
    bound = 1.0 / np.sqrt(512)
    fc_w = b.weight("fc.weight", RNG.uniform(-bound, bound, (1000, 512)))
    fc_b = b.weight("fc.bias", RNG.uniform(-bound, bound, 1000))
    b.op("Gemm", "logits", [x, fc_w, fc_b], transB=1)
    graph = helper.make_graph(b.nodes, "resnet18",
                              [helper.make_tensor_value_info("image", TensorProto.FLOAT, [1, 3, 224, 224])],
                              [helper.make_tensor_value_info("logits", TensorProto.FLOAT, [1, 1000])],
                              initializer=b.initializers)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=8,
                              producer_name="kiln make_resnet18_onnx.py")
    onnx.checker.check_model(model, full_check=True)
    return model


def main():
    if len(sys.argv) != 2:
        sys.exit(f"usage: {sys.argv[0]} OUTPUT_FOLDER")
    folder = sys.argv[1]
    model = resnet18()
    image = RNG.standard_normal((1, 3, 224, 224)).astype(np.float32)
    options = ort.SessionOptions()
    options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    options.intra_op_num_threads = 1
    session = ort.InferenceSession(model.SerializeToString(), options, providers=["CPUExecutionProvider"])
    (logits,) = session.run(None, {"image": image})
    os.makedirs(folder, exist_ok=True)
    onnx.save(model, os.path.join(folder, "model.onnx"))
    np.save(os.path.join(folder, "input_0.npy"), image)
    np.save(os.path.join(folder, "output_0.npy"), logits)
    print(f"make_resnet18_onnx: {folder}: {sum(t.ByteSize() for t in model.graph.initializer) / 1e6:.1f} MB of "
          f"weights, logits in [{logits.min():.3f}, {logits.max():.3f}]")


if __name__ == "__main__":
    main()
