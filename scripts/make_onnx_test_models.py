#!/usr/bin/env python3
"""Writes the ONNX importer's test data into tests/data/onnx/ (run it with the reference
Python: `$(scripts/python-env) scripts/make_onnx_test_models.py`).

Every case is a folder holding model.onnx, input_<k>.npy for the k-th graph input that is not
an initializer, and output_<k>.npy with ONNX Runtime's value of the k-th graph output
(CPU provider, graph optimizations off, one thread):
  ops/<case>/     one ONNX op (or a short chain) built with onnx.helper, per opset form;
  models/<name>/  small real models exported from PyTorch (TorchScript exporter, opset 17):
                  an MLP, LeNet, a residual CNN, a MobileNet-v2 block, a transformer encoder
                  layer and a GPT-2-style block with token/position embeddings and a causal mask;
  dynamic/<case>/ models with dim_param dims (inputs at one size; the C++ tests bind it);
  specialize/<case>/ models whose shape-deciding inputs (Reshape's shape, Slice's starts, ...)
                  are graph inputs, with the values in input_<k>.npy;
  covered_ops.txt the op types the cases above use;
  bad/            models the importer must refuse (checker failure, opsets out of range,
                  missing external data, unsupported ops) and external/ (weights in a side file).
Inputs are random with a fixed seed, so running the script again rewrites the same models and
inputs (outputs may differ in the last bits across ONNX Runtime versions).
"""
import os
import shutil
import sys

import numpy as np
import onnx
import onnxruntime as ort
import torch
from onnx import TensorProto, helper, numpy_helper

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests", "data", "onnx")
RNG = np.random.default_rng(20261130)


def reseed(seed):
    """Each group of cases draws from its own seed, so adding a case leaves the others as they are."""
    global RNG
    RNG = np.random.default_rng(seed)

IR_FOR_OPSET = {11: 6, 12: 7, 13: 7, 14: 7, 15: 8, 16: 8, 17: 8, 18: 8, 19: 9, 20: 9, 21: 10}
ONNX_TYPE = {np.dtype(np.float32): TensorProto.FLOAT, np.dtype(np.int64): TensorProto.INT64,
             np.dtype(np.int32): TensorProto.INT32, np.dtype(np.bool_): TensorProto.BOOL,
             np.dtype(np.float64): TensorProto.DOUBLE, np.dtype(np.uint8): TensorProto.UINT8,
             np.dtype(np.int8): TensorProto.INT8, np.dtype(np.int16): TensorProto.INT16}


def run_reference(model_bytes, feeds, evaluator=False):
    """ONNX Runtime's outputs, or (evaluator) those of ONNX's reference evaluator, for ops ONNX
    Runtime does not implement (ai.onnx.preview.training)."""
    if evaluator:
        from onnx.reference import ReferenceEvaluator
        return ReferenceEvaluator(onnx.load_from_string(model_bytes)).run(None, feeds)
    options = ort.SessionOptions()
    options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    options.intra_op_num_threads = 1
    session = ort.InferenceSession(model_bytes, options, providers=["CPUExecutionProvider"])
    return session.run(None, feeds)


def write_case(folder, model, inputs, check=True, evaluator=False):
    """Saves model.onnx with static output shapes from ONNX Runtime, inputs and outputs."""
    initializers = {init.name for init in model.graph.initializer}
    names = [value.name for value in model.graph.input if value.name not in initializers]
    assert len(names) == len(inputs), (folder, names)
    feeds = dict(zip(names, inputs))
    outputs = [np.asarray(o) for o in run_reference(model.SerializeToString(), feeds, evaluator)]
    if evaluator:  # ONNX's evaluator computes the optimizers in float64 from float32 tensors
        floats = {a.dtype for a in inputs if a.dtype.kind == "f"}
        if len(floats) == 1:
            outputs = [o.astype(next(iter(floats))) if o.dtype == np.float64 else o for o in outputs]
    for value, result in zip(model.graph.output, outputs):
        value.type.tensor_type.elem_type = ONNX_TYPE[result.dtype]
        value.type.tensor_type.ClearField("shape")
        shape = value.type.tensor_type.shape
        shape.SetInParent()
        for size in result.shape:
            shape.dim.add().dim_value = size
    if check:
        onnx.checker.check_model(model)
    shutil.rmtree(folder, ignore_errors=True)
    os.makedirs(folder)
    onnx.save(model, os.path.join(folder, "model.onnx"))
    for k, array in enumerate(inputs):
        np.save(os.path.join(folder, f"input_{k}.npy"), array)
    for k, array in enumerate(outputs):
        np.save(os.path.join(folder, f"output_{k}.npy"), array)


def value_info(name, array_or_type, shape=None):
    if isinstance(array_or_type, np.ndarray):
        return helper.make_tensor_value_info(name, ONNX_TYPE[array_or_type.dtype], list(array_or_type.shape))
    return helper.make_tensor_value_info(name, array_or_type, shape)


def graph_model(nodes, inputs, outputs, opset=17, initializers=None, name="case"):
    """A model of `nodes` with graph inputs {name: array}, `outputs` names, initializers
    {name: array}; output types are inferred."""
    graph = helper.make_graph(
        nodes, name, [value_info(n, a) for n, a in inputs.items()],
        [helper.make_empty_tensor_value_info(n) for n in outputs],
        initializer=[numpy_helper.from_array(a, n) for n, a in (initializers or {}).items()])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
    model.ir_version = IR_FOR_OPSET[opset]
    return model


def op_case(case, op, inputs, attributes=None, opset=17, initializers=None, outputs=1, input_names=None, check=True,
            evaluator=False):
    """One node of `op`: graph inputs `inputs` (arrays), then initializers (arrays, or None
    for an omitted optional input) in the order given. `check`: run ONNX's checker (off only
    for forms the current ONNX deprecates but exporters still write). `evaluator`: the expected
    outputs from ONNX's reference evaluator (for types ONNX Runtime has no kernel for)."""
    names = list(input_names or [f"x{k}" for k in range(len(inputs))])
    graph_inputs = dict(zip(names, inputs))
    node_inputs = list(names)
    constants = {}
    for k, (name, array) in enumerate((initializers or {}).items()):
        node_inputs.append("" if array is None else name)
        if array is not None:
            constants[name] = array
    output_names = [f"y{k}" for k in range(outputs)]
    node = helper.make_node(op, node_inputs, output_names, name=f"{case}_node", **(attributes or {}))
    model = graph_model([node], graph_inputs, output_names, opset, constants, case)
    write_case(os.path.join(ROOT, "ops", case), model, inputs, check, evaluator)


def f32(*shape, low=-2.0, high=2.0):
    return RNG.uniform(low, high, size=shape).astype(np.float32)


def i64(*values):
    return np.array(values, dtype=np.int64)


def make_op_cases():
    reseed(1)
    x = f32(2, 3, 4)
    positive = f32(2, 3, 4, low=0.1, high=3.0)
    for op in ["Abs", "Neg", "Exp", "Sin", "Cos", "Tanh", "Sigmoid", "Erf", "Relu", "Floor", "Ceil", "Sign",
               "Softplus", "Softsign", "HardSwish"]:
        op_case(op.lower(), op, [x])
    for op in ["Log", "Sqrt", "Reciprocal"]:
        op_case(op.lower(), op, [positive])
    op_case("round", "Round", [np.array([[-2.5, -1.5, -0.5, 0.5], [1.5, 2.5, 0.4, -0.6]], np.float32)])
    op_case("leaky_relu", "LeakyRelu", [x], {"alpha": 0.1})
    op_case("elu", "Elu", [x], {"alpha": 0.5})
    op_case("selu", "Selu", [x])
    op_case("hard_sigmoid", "HardSigmoid", [x], {"alpha": 0.25, "beta": 0.4})
    op_case("thresholded_relu", "ThresholdedRelu", [x], {"alpha": 0.5})
    op_case("prelu", "PRelu", [x], initializers={"slope": f32(3, 1, low=0.0, high=0.5)})
    op_case("clip", "Clip", [x], initializers={"low": np.array(-0.5, np.float32), "high": np.array(1.0, np.float32)})
    op_case("clip_min_only", "Clip", [x], initializers={"low": np.array(-0.5, np.float32)})
    op_case("clip_runtime_bounds", "Clip", [x, np.array(-0.25, np.float32), np.array(0.75, np.float32)])
    op_case("isnan", "IsNaN", [np.array([1.0, np.nan, -np.inf, 0.0], np.float32)])
    op_case("not", "Not", [RNG.random((3, 4)) > 0.5])
    op_case("mish", "Mish", [x], opset=18)
    op_case("gelu", "Gelu", [x], opset=20)
    op_case("gelu_tanh", "Gelu", [x], {"approximate": "tanh"}, opset=20)

    y = f32(4)
    for op in ["Add", "Sub", "Mul", "Div"]:
        op_case(op.lower(), op, [x, y])
    op_case("add_scalar_constant", "Add", [x], initializers={"c": np.array(1.5, np.float32)})
    op_case("pow", "Pow", [positive, f32(4, low=-1.0, high=2.0)])
    op_case("pow_int_exponent", "Pow", [x], initializers={"e": np.array(3, np.int64)})
    op_case("mod_fmod", "Mod", [x, f32(4, low=0.5, high=1.5)], {"fmod": 1})
    a_int = RNG.integers(-9, 10, size=(3, 4)).astype(np.int64)
    b_int = np.array([3, -4, 5, 7], np.int64)
    op_case("mod_int", "Mod", [a_int, b_int])
    op_case("div_int", "Div", [a_int, b_int])
    for op in ["Equal", "Less", "Greater", "LessOrEqual", "GreaterOrEqual"]:
        op_case(op.lower(), op, [a_int, np.array([0, 1, -1, 2], np.int64)])
    p, q = RNG.random((3, 4)) > 0.5, RNG.random((4,)) > 0.5
    for op in ["And", "Or", "Xor"]:
        op_case(op.lower(), op, [p, q])
    op_case("max", "Max", [x, y, f32(3, 1)])
    op_case("min", "Min", [x, y])
    op_case("sum", "Sum", [x, y, f32(3, 1)])
    op_case("mean", "Mean", [x, y])
    op_case("where", "Where", [RNG.random((3, 4)) > 0.5, f32(3, 4), f32(4)])
    op_case("cast_float_to_int", "Cast", [f32(3, 4, low=-5, high=5)], {"to": TensorProto.INT64})
    op_case("cast_int_to_float", "Cast", [a_int], {"to": TensorProto.FLOAT})
    op_case("cast_float_to_bool", "Cast", [np.array([0.0, 1.5, -2.0, 0.0], np.float32)], {"to": TensorProto.BOOL})
    op_case("castlike", "CastLike", [a_int, f32(1)])

    op_case("matmul_batched", "MatMul", [f32(2, 3, 5), f32(5, 4)])
    op_case("matmul_vector", "MatMul", [f32(5), f32(2, 5, 3)])
    op_case("gemm", "Gemm", [f32(5, 3)], {"transA": 1, "alpha": 0.5, "beta": 2.0},
            initializers={"b": f32(5, 4), "c": f32(3, 4)})
    op_case("gemm_linear", "Gemm", [f32(3, 5)], {"transB": 1}, initializers={"w": f32(4, 5), "bias": f32(4)})
    op_case("gemm_no_bias", "Gemm", [f32(3, 5), f32(5, 4)])

    image = f32(2, 4, 9, 9)
    op_case("conv_groups_asymmetric_pads", "Conv", [image],
            {"group": 2, "pads": [1, 0, 2, 1], "strides": [2, 1], "dilations": [1, 2]},
            initializers={"w": f32(6, 2, 3, 3), "b": f32(6)})
    op_case("conv_same_upper", "Conv", [image], {"auto_pad": "SAME_UPPER", "strides": [2, 2]},
            initializers={"w": f32(3, 4, 4, 4)})
    op_case("conv_same_lower", "Conv", [image], {"auto_pad": "SAME_LOWER"}, initializers={"w": f32(3, 4, 2, 2)})
    op_case("conv_valid", "Conv", [image], {"auto_pad": "VALID"}, initializers={"w": f32(5, 4, 3, 3), "b": f32(5)})
    op_case("conv_depthwise", "Conv", [image], {"group": 4, "pads": [1, 1, 1, 1]}, initializers={"w": f32(4, 1, 3, 3)})
    op_case("conv_1d", "Conv", [f32(2, 3, 11)], {"pads": [1, 1], "strides": [2]}, initializers={"w": f32(4, 3, 3)})
    op_case("conv_transpose", "ConvTranspose", [f32(2, 4, 5, 5)],
            {"strides": [2, 2], "pads": [1, 1, 1, 1], "output_padding": [1, 1]},
            initializers={"w": f32(4, 3, 3, 3), "b": f32(3)})
    op_case("conv_transpose_asymmetric", "ConvTranspose", [f32(1, 2, 4, 4)], {"strides": [2, 2], "pads": [0, 1, 1, 0]},
            initializers={"w": f32(2, 2, 3, 3)})
    op_case("maxpool", "MaxPool", [image], {"kernel_shape": [3, 3], "strides": [2, 2], "pads": [1, 1, 1, 1]})
    op_case("maxpool_ceil", "MaxPool", [image], {"kernel_shape": [2, 2], "strides": [2, 2], "ceil_mode": 1})
    op_case("maxpool_same_upper", "MaxPool", [image], {"kernel_shape": [2, 2], "auto_pad": "SAME_UPPER"})
    op_case("averagepool", "AveragePool", [image], {"kernel_shape": [3, 3], "strides": [2, 2], "pads": [1, 1, 1, 1]})
    op_case("averagepool_include_pad", "AveragePool", [image],
            {"kernel_shape": [3, 3], "pads": [1, 1, 1, 1], "count_include_pad": 1})
    op_case("averagepool_same_upper", "AveragePool", [image], {"kernel_shape": [2, 2], "auto_pad": "SAME_UPPER"})
    op_case("global_average_pool", "GlobalAveragePool", [image])
    op_case("global_max_pool", "GlobalMaxPool", [image])
    op_case("batch_normalization", "BatchNormalization", [image], {"epsilon": 1e-3},
            initializers={"scale": f32(4), "bias": f32(4), "mean": f32(4), "var": f32(4, low=0.5, high=2.0)})
    op_case("layer_normalization", "LayerNormalization", [x], {"epsilon": 1e-5},
            initializers={"scale": f32(4), "bias": f32(4)})
    op_case("layer_normalization_axis1", "LayerNormalization", [x], {"axis": 1},
            initializers={"scale": f32(3, 4), "bias": f32(3, 4)})
    op_case("instance_normalization", "InstanceNormalization", [image],
            initializers={"scale": f32(4), "bias": f32(4)})
    # GroupNormalization-18 (per-group scale and bias) is deprecated by ONNX 1.16's checker.
    op_case("group_normalization_opset18", "GroupNormalization", [image], {"num_groups": 2}, opset=18,
            initializers={"scale": f32(2), "bias": f32(2)}, check=False)
    op_case("group_normalization_opset21", "GroupNormalization", [image], {"num_groups": 2}, opset=21,
            initializers={"scale": f32(4), "bias": f32(4)})
    op_case("softmax", "Softmax", [x], {"axis": 1})
    op_case("softmax_opset11_coerced", "Softmax", [x], {"axis": 1}, opset=11)
    op_case("log_softmax", "LogSoftmax", [x])

    op_case("reduce_sum_opset11", "ReduceSum", [x], {"axes": [0, 2], "keepdims": 0}, opset=11)
    op_case("reduce_sum", "ReduceSum", [x], {"keepdims": 1}, initializers={"axes": i64(-1)})
    op_case("reduce_sum_all", "ReduceSum", [x], {"keepdims": 0})
    op_case("reduce_sum_int", "ReduceSum", [a_int.astype(np.int32)], initializers={"axes": i64(1)})
    op_case("reduce_mean", "ReduceMean", [x], {"axes": [1]})
    op_case("reduce_mean_opset18", "ReduceMean", [x], {"keepdims": 0}, opset=18, initializers={"axes": i64(0, 1)})
    op_case("reduce_max", "ReduceMax", [x], {"axes": [2], "keepdims": 0})
    op_case("reduce_min", "ReduceMin", [x], {"axes": [0]})
    op_case("reduce_prod", "ReduceProd", [f32(2, 3, 4, low=0.5, high=1.5)], {"axes": [1]})
    op_case("reduce_l1", "ReduceL1", [x], {"axes": [2]})
    op_case("reduce_l2", "ReduceL2", [x], {"axes": [2]})
    op_case("reduce_log_sum", "ReduceLogSum", [positive], {"axes": [1]})
    op_case("reduce_log_sum_exp", "ReduceLogSumExp", [x], {"axes": [2], "keepdims": 0})
    op_case("reduce_sum_square", "ReduceSumSquare", [x], {"axes": [0, 1]})
    ties = np.array([[1, 3, 3, 0], [2, 2, 1, 2]], np.float32)
    op_case("argmax", "ArgMax", [ties], {"axis": 1})
    op_case("argmax_last_index", "ArgMax", [ties], {"axis": 1, "keepdims": 0, "select_last_index": 1})
    op_case("argmin", "ArgMin", [ties], {"axis": 0, "keepdims": 0})
    op_case("cumsum", "CumSum", [x], initializers={"axis": np.array(1, np.int64)})
    op_case("cumsum_exclusive_reverse", "CumSum", [x], {"exclusive": 1, "reverse": 1},
            initializers={"axis": np.array(-1, np.int64)})

    op_case("reshape", "Reshape", [x], initializers={"shape": i64(0, -1, 2)})
    op_case("flatten", "Flatten", [x], {"axis": 2})
    op_case("flatten_axis0", "Flatten", [x], {"axis": 0})
    op_case("transpose", "Transpose", [x], {"perm": [2, 0, 1]})
    op_case("transpose_default", "Transpose", [x])
    op_case("squeeze_opset11", "Squeeze", [f32(3, 1, 4, 1)], {"axes": [1, -1]}, opset=11)
    op_case("squeeze", "Squeeze", [f32(3, 1, 4, 1)], initializers={"axes": i64(1)})
    op_case("squeeze_all", "Squeeze", [f32(3, 1, 4, 1)])
    op_case("unsqueeze_opset11", "Unsqueeze", [x], {"axes": [0, 4]}, opset=11)
    op_case("unsqueeze", "Unsqueeze", [x], initializers={"axes": i64(-1, 1)})
    op_case("concat", "Concat", [x, f32(2, 2, 4)], {"axis": 1})
    op_case("split_opset11", "Split", [f32(2, 6)], {"axis": 1, "split": [2, 4]}, opset=11, outputs=2)
    op_case("split", "Split", [f32(5, 3)], initializers={"split": i64(1, 3, 1)}, outputs=3)
    op_case("split_equal", "Split", [f32(4, 6)], {"axis": 1}, outputs=3)
    op_case("split_num_outputs", "Split", [f32(2, 7)], {"axis": 1, "num_outputs": 3}, opset=18, outputs=3)
    op_case("slice", "Slice", [f32(5, 6, 7)],
            initializers={"starts": i64(1, -4), "ends": i64(9223372036854775807, -1), "axes": i64(0, 2),
                          "steps": i64(2, 1)})
    op_case("slice_negative_step", "Slice", [f32(5, 6)],
            initializers={"starts": i64(-1), "ends": i64(-9223372036854775807), "axes": i64(1), "steps": i64(-2)})
    op_case("slice_default_axes", "Slice", [f32(5, 6)], initializers={"starts": i64(1, 2), "ends": i64(4, 5)})
    op_case("gather_scalar_index", "Gather", [x], {"axis": 1}, initializers={"i": np.array(-1, np.int64)})
    op_case("gather_vector_index", "Gather", [x], {"axis": 2}, initializers={"i": i64(3, 0, -2)})
    op_case("gather_matrix_index", "Gather", [x], {"axis": 1}, initializers={"i": np.array([[0, 2], [1, 1]], np.int64)})
    op_case("gather_runtime_indices", "Gather", [f32(10, 4), np.array([[1, -1, 3], [9, 0, 2]], np.int64)])
    op_case("gather_elements", "GatherElements", [f32(3, 4), np.array([[0, 1, 2, 0], [2, 2, 1, -1]], np.int64)],
            {"axis": 0})
    op_case("scatter_elements_add", "ScatterElements",
            [f32(3, 4), np.array([[0, 1, 2, 0], [2, 2, 1, 0]], np.int64), f32(2, 4)], {"axis": 0, "reduction": "add"},
            opset=18)
    op_case("expand", "Expand", [f32(3, 1)], initializers={"shape": i64(2, 1, 4)})
    op_case("tile", "Tile", [f32(2, 3)], initializers={"repeats": i64(2, 3)})
    op_case("range", "Range", [], initializers={"start": np.array(1.5, np.float32), "limit": np.array(7.0, np.float32),
                                                "delta": np.array(1.25, np.float32)})
    op_case("trilu_upper", "Trilu", [f32(2, 4, 5)], initializers={"k": np.array(1, np.int64)})
    op_case("trilu_lower", "Trilu", [f32(4, 5)], {"upper": 0}, initializers={"k": np.array(-1, np.int64)})
    op_case("pad_constant", "Pad", [f32(2, 3, 4)], initializers={"pads": i64(0, 1, 2, 0, 2, 1),
                                                                 "value": np.array(0.5, np.float32)})
    op_case("pad_reflect", "Pad", [f32(1, 2, 4, 5)], {"mode": "reflect"}, initializers={"pads": i64(0, 0, 1, 2, 0, 0, 2, 1)})
    op_case("pad_edge", "Pad", [f32(1, 2, 4, 5)], {"mode": "edge"}, initializers={"pads": i64(0, 0, 0, 3, 0, 0, 0, 1)})
    op_case("pad_axes_opset18", "Pad", [f32(2, 3, 4)], opset=18,
            initializers={"pads": i64(1, 2), "value": None, "axes": i64(-1)})
    op_case("identity", "Identity", [x])
    op_case("size", "Size", [x])
    op_case("dropout_inference", "Dropout", [x], opset=13, initializers={"ratio": np.array(0.5, np.float32)})
    op_case("constant_of_shape", "ConstantOfShape", [], {"value": numpy_helper.from_array(np.array([7], np.int64))},
            initializers={"shape": i64(2, 3)})

    reseed(5)  # cases added later: a seed of their own
    small_image = f32(1, 2, 4, 5)
    op_case("resize_nearest_asymmetric_floor", "Resize", [small_image],
            {"mode": "nearest", "coordinate_transformation_mode": "asymmetric", "nearest_mode": "floor"},
            initializers={"roi": None, "scales": np.array([1, 1, 2, 2], np.float32)})
    op_case("resize_nearest_half_pixel_down", "Resize", [f32(1, 2, 8, 9)], {"mode": "nearest"},
            initializers={"roi": None, "scales": np.array([1, 1, 0.5, 0.5], np.float32)})
    op_case("resize_nearest_sizes_round_prefer_ceil", "Resize", [small_image],
            {"mode": "nearest", "nearest_mode": "round_prefer_ceil"},
            initializers={"roi": None, "scales": None, "sizes": i64(1, 2, 7, 3)})
    op_case("resize_linear_pytorch_half_pixel", "Resize", [small_image],
            {"mode": "linear", "coordinate_transformation_mode": "pytorch_half_pixel"},
            initializers={"roi": None, "scales": np.array([1, 1, 2, 1.5], np.float32)})
    op_case("resize_linear_align_corners", "Resize", [small_image],
            {"mode": "linear", "coordinate_transformation_mode": "align_corners"},
            initializers={"roi": None, "scales": None, "sizes": i64(1, 2, 7, 9)})
    op_case("resize_linear_half_pixel_down", "Resize", [f32(1, 1, 9, 7)], {"mode": "linear"},
            initializers={"roi": None, "scales": np.array([1, 1, 0.5, 0.6], np.float32)})
    op_case("resize_opset11", "Resize", [small_image], {"mode": "linear"}, opset=11,
            initializers={"roi": np.array([], np.float32), "scales": np.array([1, 1, 2, 2], np.float32)})
    op_case("resize_axes_opset18", "Resize", [small_image], {"mode": "nearest", "axes": [2, 3]}, opset=18,
            initializers={"roi": None, "scales": np.array([3, 2], np.float32)})
    op_case("einsum_batched_matmul", "Einsum", [f32(2, 3, 4), f32(2, 4, 5)], {"equation": "bij,bjk->bik"})
    op_case("einsum_attention_scores", "Einsum", [f32(2, 3, 5, 4), f32(2, 3, 6, 4)], {"equation": "bhqd,bhkd->bhqk"})
    op_case("einsum_transpose", "Einsum", [f32(3, 4)], {"equation": "ij->ji"})
    op_case("einsum_sum", "Einsum", [f32(2, 3, 4)], {"equation": "abc->b"})
    op_case("einsum_outer", "Einsum", [f32(3), f32(4)], {"equation": "i,j->ij"})
    op_case("einsum_implicit_output", "Einsum", [f32(3, 4), f32(4, 5)], {"equation": "ij,jk"})
    op_case("einsum_ellipsis_broadcast", "Einsum", [f32(2, 1, 3, 4), f32(1, 5, 4, 2)], {"equation": "...ij,...jk->...ik"})
    op_case("einsum_three_operands", "Einsum", [f32(2, 3), f32(3, 4), f32(4, 5)], {"equation": "ij,jk,kl->il"})

    # A graph input that also has an initializer (IR version 3 style): a parameter, not an input.
    weight = f32(4)
    model = graph_model([helper.make_node("Add", ["x", "w"], ["y"])], {"x": x}, ["y"], initializers={"w": weight})
    model.graph.input.append(value_info("w", weight))
    write_case(os.path.join(ROOT, "ops", "initializer_as_input"), model, [x])

    # Constant, Shape -> Gather -> Unsqueeze -> Concat -> Reshape: folded while importing.
    nodes = [
        helper.make_node("Shape", ["x"], ["shape"]),
        helper.make_node("Constant", [], ["zero"], value=numpy_helper.from_array(np.array(0, np.int64))),
        helper.make_node("Gather", ["shape", "zero"], ["batch"], axis=0),
        helper.make_node("Unsqueeze", ["batch", "axes"], ["batch_1d"]),
        helper.make_node("Constant", [], ["minus_one"], value_ints=[-1]),
        helper.make_node("Concat", ["batch_1d", "minus_one"], ["new_shape"], axis=0),
        helper.make_node("Reshape", ["x", "new_shape"], ["flat"]),
        helper.make_node("Constant", [], ["scale"], value_float=2.0),
        helper.make_node("Mul", ["flat", "scale"], ["y"]),
    ]
    model = graph_model(nodes, {"x": x}, ["y"], initializers={"axes": i64(0)})
    write_case(os.path.join(ROOT, "ops", "shape_chain_folded"), model, [x])


def export_torch(name, module, inputs, input_names, output_names, dynamic_axes=None, folder="models"):
    module.eval()
    path = os.path.join(ROOT, folder, name, "model.onnx")
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with torch.no_grad():
        torch.onnx.export(module, tuple(torch.from_numpy(a) for a in inputs), path, input_names=input_names,
                          output_names=output_names, opset_version=17, dynamo=False, do_constant_folding=True,
                          dynamic_axes=dynamic_axes)
    model = onnx.load(path)
    write_case(os.path.dirname(path), model, inputs)


class Mlp(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1, self.fc2, self.fc3 = torch.nn.Linear(64, 128), torch.nn.Linear(128, 64), torch.nn.Linear(64, 10)

    def forward(self, x):
        return torch.log_softmax(self.fc3(torch.relu(self.fc2(torch.relu(self.fc1(x))))), dim=-1)


class LeNet(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.conv1, self.conv2 = torch.nn.Conv2d(1, 6, 5, padding=2), torch.nn.Conv2d(6, 16, 5)
        self.fc1, self.fc2, self.fc3 = torch.nn.Linear(400, 120), torch.nn.Linear(120, 84), torch.nn.Linear(84, 10)

    def forward(self, x):
        x = torch.max_pool2d(torch.relu(self.conv1(x)), 2)
        x = torch.nn.functional.avg_pool2d(torch.relu(self.conv2(x)), 2)
        x = torch.flatten(x, 1)
        return self.fc3(torch.relu(self.fc2(torch.relu(self.fc1(x)))))


class BasicBlock(torch.nn.Module):
    def __init__(self, cin, cout, stride):
        super().__init__()
        self.conv1 = torch.nn.Conv2d(cin, cout, 3, stride, 1, bias=False)
        self.bn1 = torch.nn.BatchNorm2d(cout)
        self.conv2 = torch.nn.Conv2d(cout, cout, 3, 1, 1, bias=False)
        self.bn2 = torch.nn.BatchNorm2d(cout)
        self.down = None
        if stride != 1 or cin != cout:
            self.down = torch.nn.Sequential(torch.nn.Conv2d(cin, cout, 1, stride, bias=False), torch.nn.BatchNorm2d(cout))

    def forward(self, x):
        y = self.bn2(self.conv2(torch.relu(self.bn1(self.conv1(x)))))
        return torch.relu(y + (x if self.down is None else self.down(x)))


class ResNetTiny(torch.nn.Module):
    """ResNet-18's structure (stem, basic blocks with downsampling, global pool, fc), narrow."""

    def __init__(self):
        super().__init__()
        self.stem = torch.nn.Sequential(torch.nn.Conv2d(3, 8, 7, 2, 3, bias=False), torch.nn.BatchNorm2d(8),
                                        torch.nn.ReLU(), torch.nn.MaxPool2d(3, 2, 1))
        self.blocks = torch.nn.Sequential(BasicBlock(8, 8, 1), BasicBlock(8, 16, 2), BasicBlock(16, 32, 2))
        self.fc = torch.nn.Linear(32, 10)

    def forward(self, x):
        x = self.blocks(self.stem(x))
        return self.fc(torch.flatten(torch.nn.functional.adaptive_avg_pool2d(x, 1), 1))


class MobileNetBlock(torch.nn.Module):
    """MobileNet-v2/v3 inverted residual: expand 1x1, depthwise 3x3, project 1x1, hardswish, ReLU6."""

    def __init__(self):
        super().__init__()
        self.expand = torch.nn.Conv2d(8, 32, 1)
        self.depthwise = torch.nn.Conv2d(32, 32, 3, padding=1, groups=32)
        self.project = torch.nn.Conv2d(32, 8, 1)

    def forward(self, x):
        y = torch.nn.functional.hardswish(self.expand(x))
        y = torch.nn.functional.relu6(self.depthwise(y))
        return x + self.project(y)


class EncoderLayer(torch.nn.Module):
    """torch.nn.TransformerEncoderLayer, called with its mask arguments spelled out (the
    TorchScript exporter cannot trace the defaults)."""

    def __init__(self):
        super().__init__()
        self.layer = torch.nn.TransformerEncoderLayer(d_model=32, nhead=4, dim_feedforward=64, dropout=0.0,
                                                      batch_first=True)

    def forward(self, x):
        return self.layer(x, src_mask=None, is_causal=False)


class GptBlock(torch.nn.Module):
    def __init__(self, vocab=96, context=16, dim=32, heads=4):
        super().__init__()
        self.heads = heads
        self.token = torch.nn.Embedding(vocab, dim)
        self.position = torch.nn.Embedding(context, dim)
        self.ln1, self.ln2, self.ln_final = torch.nn.LayerNorm(dim), torch.nn.LayerNorm(dim), torch.nn.LayerNorm(dim)
        self.qkv, self.proj = torch.nn.Linear(dim, 3 * dim), torch.nn.Linear(dim, dim)
        self.fc, self.fc_proj = torch.nn.Linear(dim, 4 * dim), torch.nn.Linear(4 * dim, dim)
        self.head = torch.nn.Linear(dim, vocab, bias=False)
        self.register_buffer("mask", torch.tril(torch.ones(context, context)).view(1, 1, context, context))

    def forward(self, ids):
        b, t = ids.shape
        positions = torch.arange(0, t, dtype=torch.long).unsqueeze(0)
        x = self.token(ids) + self.position(positions)
        q, k, v = self.qkv(self.ln1(x)).split(x.shape[-1], dim=2)
        shape = (b, t, self.heads, x.shape[-1] // self.heads)
        q, k, v = (z.view(shape).transpose(1, 2) for z in (q, k, v))
        scores = (q @ k.transpose(-2, -1)) / (k.shape[-1] ** 0.5)
        scores = scores.masked_fill(self.mask[:, :, :t, :t] == 0, float("-inf"))
        y = (torch.softmax(scores, dim=-1) @ v).transpose(1, 2).contiguous().view(b, t, x.shape[-1])
        x = x + self.proj(y)
        x = x + self.fc_proj(torch.nn.functional.gelu(self.fc(self.ln2(x)), approximate="tanh"))
        return self.head(self.ln_final(x))


def make_model_cases():
    reseed(2)
    torch.manual_seed(0)
    export_torch("mlp", Mlp(), [f32(8, 64)], ["x"], ["log_probs"])
    export_torch("lenet", LeNet(), [f32(2, 1, 28, 28)], ["image"], ["logits"])
    resnet = ResNetTiny()
    for module in resnet.modules():  # non-trivial batch-norm statistics
        if isinstance(module, torch.nn.BatchNorm2d):
            module.running_mean.uniform_(-0.5, 0.5)
            module.running_var.uniform_(0.5, 2.0)
            module.weight.data.uniform_(0.5, 1.5)
    export_torch("resnet_tiny", resnet, [f32(2, 3, 32, 32)], ["image"], ["logits"])
    export_torch("mobilenet_block", MobileNetBlock(), [f32(2, 8, 12, 12)], ["x"], ["y"])
    torch.backends.mha.set_fastpath_enabled(False)  # the fused fast path has no ONNX export
    export_torch("transformer_encoder_layer", EncoderLayer(), [f32(2, 10, 32)], ["x"], ["y"])
    ids = RNG.integers(0, 96, size=(2, 12)).astype(np.int64)
    export_torch("gpt_block", GptBlock(), [ids], ["ids"], ["logits"])


def make_slice_edge_cases():
    """Slice's bounds at their edges (ONNX clamps a negative step's start to [0, size - 1] and
    its end to [-1, size - 1]), among them the reversed slice PyTorch exports for x.flip(0) and
    pads[::-1]: starts=-1, ends=-9223372036854775807 (INT64_MIN + 1), steps=-1."""
    reseed(6)
    top, bottom = np.iinfo(np.int64).max, np.iinfo(np.int64).min
    op_case("slice_reversed_torch", "Slice", [f32(3, 2)],
            initializers={"starts": i64(-1), "ends": i64(bottom + 1), "axes": i64(0), "steps": i64(-1)})
    op_case("slice_reversed_int64_bounds", "Slice", [f32(4, 3)],
            initializers={"starts": i64(top), "ends": i64(bottom), "axes": i64(1), "steps": i64(-1)})
    op_case("slice_negative_step_partial", "Slice", [f32(7, 2)],
            initializers={"starts": i64(5), "ends": i64(0), "axes": i64(0), "steps": i64(-3)})
    op_case("slice_negative_step_empty", "Slice", [f32(4, 2)],
            initializers={"starts": i64(0), "ends": i64(2), "axes": i64(0), "steps": i64(-1)})
    op_case("slice_empty", "Slice", [f32(5, 3)], initializers={"starts": i64(3), "ends": i64(1), "axes": i64(0)})
    op_case("slice_out_of_range_bounds", "Slice", [f32(4, 5)],
            initializers={"starts": i64(-100, 2), "ends": i64(100, 1000), "axes": i64(-2, -1)})
    op_case("slice_huge_steps", "Slice", [f32(5, 4)],
            initializers={"starts": i64(1, -1), "ends": i64(top, bottom), "axes": i64(0, 1), "steps": i64(top, bottom)})


def make_node_test_op_cases():
    """One case per op the importer gained for ONNX's node tests (more forms of each are in the
    node tests themselves, tests/onnx_conformance)."""
    reseed(8)
    x = f32(2, 3, 4)
    unit = f32(2, 3, 4, low=-0.9, high=0.9)
    for op in ["Tan", "Sinh", "Cosh", "Asinh", "Atanh"]:
        op_case(op.lower(), op, [unit])
    op_case("acosh", "Acosh", [f32(2, 3, low=1.0, high=4.0)])
    # The inverse trigonometric functions over a grid (their edges and zero included).
    grid = np.concatenate([np.linspace(-1, 1, 801), [0.0, -0.0, 1e-6, -1e-6, 0.999999]]).astype(np.float32)
    op_case("asin", "Asin", [grid])
    op_case("acos", "Acos", [grid])
    op_case("atan", "Atan", [np.concatenate([grid, np.geomspace(1e-4, 1e8, 200), -np.geomspace(1e-4, 1e8, 200),
                                             [np.inf, -np.inf]]).astype(np.float32)])
    op_case("bitwise_and", "BitwiseAnd", [np.array([[5, -3, 12]], np.int32), np.array([6, 7, -1], np.int32)], opset=18)
    op_case("bitwise_or", "BitwiseOr", [np.array([[5, -3, 12]], np.int64), np.array([6, 7, -1], np.int64)], opset=18)
    op_case("bitwise_xor", "BitwiseXor", [np.array([0, 15, 255, 128], np.uint8), np.array([255, 15, 1, 128], np.uint8)], opset=18)
    op_case("bitwise_not", "BitwiseNot", [np.array([0, 1, 200, 255], np.uint8)], opset=18)
    op_case("bit_shift", "BitShift", [np.array([1, 16, 255], np.uint8), np.array([3, 2, 9], np.uint8)],
            {"direction": "RIGHT"})
    op_case("isinf", "IsInf", [np.array([1.0, np.inf, -np.inf, np.nan], np.float32)], {"detect_negative": 0})
    op_case("celu", "Celu", [x], {"alpha": 2.0})
    op_case("shrink", "Shrink", [x], {"lambd": 0.5, "bias": 0.25})
    op_case("nll_loss", "NegativeLogLikelihoodLoss", [f32(3, 5, 2), np.array([[0, 4], [1, -1], [3, 2]], np.int64),
                                                      f32(5, low=0.1, high=1.0)], {"ignore_index": -1})
    op_case("softmax_cross_entropy_loss", "SoftmaxCrossEntropyLoss", [f32(3, 5), np.array([0, 4, 2], np.int64)],
            {"reduction": "sum"}, outputs=2)
    op_case("gather_nd", "GatherND", [f32(2, 3, 4), np.array([[[1, -1]], [[0, 2]]], np.int64)], {"batch_dims": 1})
    op_case("scatter_nd", "ScatterND", [f32(4, 3), np.array([[1], [3]], np.int64), f32(2, 3)], {"reduction": "add"})
    op_case("one_hot", "OneHot", [np.array([[0, 3], [-1, 2]], np.int64)], {"axis": 1},
            initializers={"depth": np.array(4, np.int64), "values": np.array([-1.0, 2.0], np.float32)})
    op_case("hardmax", "Hardmax", [x], {"axis": 1})
    op_case("eye_like", "EyeLike", [f32(3, 4)], {"k": 1})
    op_case("reverse_sequence", "ReverseSequence", [f32(4, 3, 2)], {"batch_axis": 1, "time_axis": 0},
            initializers={"lens": np.array([4, 1, 2], np.int64)})
    op_case("top_k", "TopK", [f32(3, 5)], {"axis": 1}, initializers={"k": i64(2)}, outputs=2)
    op_case("compress", "Compress", [f32(3, 4)], {"axis": 1}, initializers={"condition": np.array([1, 0, 1, 1], np.bool_)})
    op_case("non_zero", "NonZero", [], initializers={"x": np.array([[1, 0], [0, 3]], np.int64)})
    op_case("unique", "Unique", [], {"sorted": 1}, initializers={"x": np.array([2, 1, 1, 3, 2], np.int64)}, outputs=4)
    op_case("non_max_suppression", "NonMaxSuppression", [],
            initializers={"boxes": np.array([[[0, 0, 1, 1], [0, 0.1, 1, 1.1], [0, 2, 1, 3]]], np.float32),
                          "scores": np.array([[[0.9, 0.8, 0.7]]], np.float32), "max": i64(2),
                          "iou": np.array([0.5], np.float32)})
    # torchvision.ops.nms exports max_output_boxes_per_class as INT64_MAX: every box kept that survives
    op_case("non_max_suppression_int64_max", "NonMaxSuppression", [],
            initializers={"boxes": np.array([[[0, 0, 1, 1], [0, 0.1, 1, 1.1], [0, 2, 1, 3], [0, 4, 1, 5]]], np.float32),
                          "scores": np.array([[[0.9, 0.8, 0.7, 0.6]]], np.float32),
                          "max": np.array([np.iinfo(np.int64).max], np.int64), "iou": np.array([0.5], np.float32)})
    op_case("depth_to_space", "DepthToSpace", [f32(1, 8, 2, 3)], {"blocksize": 2, "mode": "CRD"})
    op_case("space_to_depth", "SpaceToDepth", [f32(1, 2, 4, 6)], {"blocksize": 2})
    op_case("center_crop_pad", "CenterCropPad", [f32(5, 3)], opset=18, initializers={"shape": i64(2, 6)})
    op_case("lrn", "LRN", [f32(1, 5, 3, 3)], {"size": 3, "alpha": 0.01, "beta": 0.75, "bias": 1.0})
    op_case("mean_variance_normalization", "MeanVarianceNormalization", [f32(2, 3, 4, 5)])
    op_case("grid_sample", "GridSample", [f32(1, 2, 4, 5), f32(1, 3, 2, 2, low=-1.2, high=1.2)],
            {"mode": "bilinear", "padding_mode": "border"}, opset=16)
    op_case("roi_align", "RoiAlign", [f32(1, 2, 6, 6), np.array([[0.5, 1.0, 4.0, 5.5]], np.float32)],
            {"output_height": 2, "output_width": 3, "sampling_ratio": 2}, opset=16,
            initializers={"batch": np.array([0], np.int64)})
    op_case("det", "Det", [f32(2, 3, 3)])
    op_case("affine_grid", "AffineGrid", [f32(2, 2, 3)], {"align_corners": 1}, opset=20, initializers={"size": i64(2, 3, 4, 5)})
    op_case("lp_pool", "LpPool", [f32(1, 2, 5, 5)], {"kernel_shape": [2, 2], "p": 3, "strides": [2, 1]})
    op_case("averagepool_dilations", "AveragePool", [f32(1, 1, 6, 6)],
            {"kernel_shape": [2, 2], "dilations": [2, 2], "pads": [1, 1, 0, 0]}, opset=19)
    op_case("max_unpool", "MaxUnpool", [np.array([[[[5, 6], [7, 8]]]], np.float32)], {"kernel_shape": [2, 2], "strides": [2, 2]},
            initializers={"indices": np.array([[[[5, 7], [13, 15]]]], np.int64)})
    op_case("col2im", "Col2Im", [f32(1, 4, 4)], opset=18,
            initializers={"image_shape": i64(3, 3), "block_shape": i64(2, 2)})
    op_case("quantize_linear", "QuantizeLinear", [f32(2, 3, low=-3, high=3)], {"axis": 1},
            initializers={"scale": np.array([0.02, 0.03, 0.04], np.float32), "zero": np.array([0, 10, -5], np.int8)})
    op_case("dequantize_linear", "DequantizeLinear", [np.array([[0, 128, 255]], np.uint8)],
            initializers={"scale": np.array(0.5, np.float32), "zero": np.array(128, np.uint8)})
    op_case("dynamic_quantize_linear", "DynamicQuantizeLinear", [f32(2, 4)], outputs=3)
    a, b = np.array([[1, 200, 3], [4, 5, 255]], np.uint8), np.array([[7, 8], [9, 10], [11, 12]], np.uint8)
    op_case("qlinear_matmul", "QLinearMatMul", [a], input_names=["a"],
            initializers={"a_scale": np.array(0.05, np.float32), "a_zero": np.array(100, np.uint8), "b": b,
                          "b_scale": np.array(0.1, np.float32), "b_zero": np.array(8, np.uint8),
                          "y_scale": np.array(0.2, np.float32), "y_zero": np.array(120, np.uint8)})
    op_case("matmul_integer", "MatMulInteger", [a, b], initializers={"a_zero": np.array(100, np.uint8)})
    xq = np.arange(1, 17, dtype=np.uint8).reshape(1, 1, 4, 4)
    wq = np.array([[[[1, 2], [3, 4]]]], np.uint8)
    op_case("conv_integer", "ConvInteger", [xq, wq], {"pads": [1, 1, 0, 0]}, initializers={"x_zero": np.array(2, np.uint8)})
    op_case("qlinear_conv", "QLinearConv", [xq], input_names=["x"],
            initializers={"x_scale": np.array(0.1, np.float32), "x_zero": np.array(3, np.uint8), "w": wq,
                          "w_scale": np.array([0.2], np.float32), "w_zero": np.array([1], np.uint8),
                          "y_scale": np.array(0.3, np.float32), "y_zero": np.array(5, np.uint8)})
    for op in ["HannWindow", "HammingWindow", "BlackmanWindow"]:
        op_case(op.lower(), op, [], {"periodic": 0}, opset=17, initializers={"size": np.array(7, np.int64)})
    op_case("mel_weight_matrix", "MelWeightMatrix", [], opset=17,
            initializers={"bins": np.array(4, np.int64), "dft": np.array(16, np.int64), "rate": np.array(8000, np.int64),
                          "low": np.array(100, np.float32), "high": np.array(3000, np.float32)})
    op_case("optional_has_element", "OptionalHasElement", [f32(2)], opset=18)
    op_case("optional_get_element", "OptionalGetElement", [f32(2)], opset=18)
    make_control_flow_cases()
    make_recurrent_cases()
    # Cases added later, after every case above so that their random inputs stay as they are.
    op_case("tfidf_vectorizer", "TfIdfVectorizer", [np.array([[1, 2, 3, 2, 3, 4], [4, 3, 2, 1, 2, 3]], np.int64)],
            {"mode": "TFIDF", "min_gram_length": 1, "max_gram_length": 2, "max_skip_count": 1,
             "ngram_counts": [0, 3], "ngram_indexes": [0, 1, 2, 3, 4], "pool_int64s": [2, 3, 4, 2, 3, 3, 2],
             "weights": [1.0, 0.5, 2.0, 1.5, 0.25]}, opset=11)
    op_case("dft", "DFT", [f32(2, 8, 2)], {"axis": 1, "inverse": 1}, opset=17)
    make_other_domain_cases()
    op_case("maxpool_with_indices", "MaxPool", [f32(2, 2, 5, 6)],
            {"kernel_shape": [3, 2], "strides": [2, 2], "pads": [1, 0, 1, 1], "storage_order": 1}, outputs=2)
    # onesided=0: Debian's ONNX 1.12 infers the full frame length for STFT's bins even when
    # onesided (its shape inference would refuse ONNX Runtime's output shape).
    op_case("stft", "STFT", [f32(1, 32, 1)], {"onesided": 0}, opset=17,
            initializers={"step": np.array(8, np.int64), "window": np.hanning(12).astype(np.float32),
                          "frame_length": np.array(12, np.int64)})
    op_case("deform_conv", "DeformConv", [f32(1, 2, 5, 5), f32(2, 2, 2, 2), f32(1, 8, 4, 4, low=-0.7, high=0.7)],
            {"pads": [0, 0, 0, 0]}, opset=19, initializers={"bias": f32(2), "mask": f32(1, 4, 4, 4, low=0.0, high=1.0)})


def make_int16_cases():
    """INT16 tensors: graph inputs, an initializer (int32_data), Cast to and from INT16 (float
    to int truncates) and int16 arithmetic. ONNX Runtime's CPU provider has no int16 kernels
    for most ops, so the expected outputs are those of ONNX's reference evaluator."""
    reseed(9)
    values = RNG.integers(-32768, 32768, size=(2, 3, 4)).astype(np.int16)
    others = RNG.integers(-300, 300, size=(3, 4)).astype(np.int16)
    others[others == 0] = 7
    op_case("int16_max", "Max", [values, others], opset=13, evaluator=True)
    op_case("int16_min", "Min", [values, others], opset=13, evaluator=True)
    op_case("int16_mod", "Mod", [values, others], opset=13, evaluator=True)
    op_case("int16_fmod", "Mod", [values, others], {"fmod": 1}, opset=13, evaluator=True)
    op_case("int16_bitwise_and", "BitwiseAnd", [values, others], opset=18, evaluator=True)
    op_case("int16_bitwise_xor", "BitwiseXor", [values, others], opset=18, evaluator=True)
    op_case("int16_bitwise_not", "BitwiseNot", [values], opset=18, evaluator=True)
    op_case("int16_cast_to_float", "Cast", [values], {"to": TensorProto.FLOAT}, evaluator=True)
    floats = np.array([[-32768.0, -1234.9, -2.5, -0.7, 0.0, 0.7, 2.5, 1234.9, 32767.0]], np.float32)
    op_case("int16_cast_from_float", "Cast", [floats], {"to": TensorProto.INT16}, evaluator=True)
    op_case("int16_cast_from_int64", "Cast", [i64(-32768, -5, 0, 5, 32767)], {"to": TensorProto.INT16}, evaluator=True)
    # A chain on an int16 graph input and an int16 initializer stored as int32_data (as some
    # exporters write small integer types), cast back to float at the end.
    cast = helper.make_node("Cast", ["x"], ["xi"], to=TensorProto.INT16)
    biggest = helper.make_node("Max", ["xi", "w"], ["m"])
    back = helper.make_node("Cast", ["m"], ["y0"], to=TensorProto.FLOAT)
    graph = helper.make_graph([cast, biggest, back], "int16_chain", [value_info("x", TensorProto.FLOAT, [2, 3])],
                              [helper.make_empty_tensor_value_info("y0"), helper.make_empty_tensor_value_info("m")],
                              initializer=[helper.make_tensor("w", TensorProto.INT16, [3], [-7, 300, -32768])])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    model.ir_version = IR_FOR_OPSET[13]
    write_case(os.path.join(ROOT, "ops", "int16_chain"), model, [f32(2, 3, low=-500.0, high=500.0)],
               evaluator=True)


def other_domain_case(case, op, domain, version, inputs, outputs, attributes, evaluator=False):
    """One node of `op` in `domain` (the model imports that domain only), graph inputs {name: array}."""
    node = helper.make_node(op, list(inputs), outputs, name=f"{case}_node", domain=domain, **attributes)
    graph = helper.make_graph([node], case, [value_info(n, a) for n, a in inputs.items()],
                              [helper.make_empty_tensor_value_info(n) for n in outputs])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid(domain, version)])
    model.ir_version = 8
    write_case(os.path.join(ROOT, "ops", case), model, list(inputs.values()), check=False, evaluator=evaluator)


def make_other_domain_cases():
    other_domain_case("binarizer", "Binarizer", "ai.onnx.ml", 1, {"x": f32(3, 4)}, ["y"], {"threshold": 0.5})
    other_domain_case("array_feature_extractor", "ArrayFeatureExtractor", "ai.onnx.ml", 1,
                      {"x": f32(3, 5), "i": i64(4, 0, 2)}, ["y"], {})
    tree = {"n_targets": 2, "aggregate_function": 1, "tree_roots": [0, 3],
            "nodes_featureids": [0, 1, 1, 2, 0], "nodes_modes": numpy_helper.from_array(np.array([0, 3, 1, 0, 2], np.uint8), "modes"),
            "nodes_splits": numpy_helper.from_array(np.array([0.1, -0.5, 1.0, 0.0, -1.0], np.float32), "splits"),
            "nodes_truenodeids": [1, 0, 2, 4, 3], "nodes_trueleafs": [0, 1, 1, 0, 1],
            "nodes_falsenodeids": [2, 1, 3, 5, 4], "nodes_falseleafs": [0, 1, 1, 1, 1],
            "leaf_targetids": [0, 1, 0, 1, 0, 1],
            "leaf_weights": numpy_helper.from_array(np.array([1.5, -2.0, 3.0, 0.25, -1.0, 4.0], np.float32), "weights")}
    other_domain_case("tree_ensemble", "TreeEnsemble", "ai.onnx.ml", 5, {"x": f32(6, 3)}, ["y"], tree, evaluator=True)
    scalar = lambda v, t: np.array(v, dtype=t)
    optimizer = {"R": scalar(0.1, np.float32), "T": scalar(2, np.int64), "X": f32(3), "G": f32(3), "V": f32(3)}
    other_domain_case("momentum", "Momentum", "ai.onnx.preview.training", 1, optimizer, ["X_new", "V_new"],
                      {"alpha": 0.9, "beta": 0.5, "mode": "nesterov", "norm_coefficient": 0.01}, evaluator=True)
    adam = dict(optimizer, H=f32(3, low=0.1, high=1.0))
    other_domain_case("adam", "Adam", "ai.onnx.preview.training", 1, adam, ["X_new", "V_new", "H_new"],
                      {"alpha": 0.9, "beta": 0.99, "epsilon": 1e-6, "norm_coefficient": 0.01}, evaluator=True)
    adagrad = {"R": scalar(0.1, np.float32), "T": scalar(3, np.int64), "X": f32(3), "G": f32(3), "H": f32(3, low=0.1, high=1.0)}
    other_domain_case("adagrad", "Adagrad", "ai.onnx.preview.training", 1, adagrad, ["X_new", "H_new"],
                      {"decay_factor": 0.1, "epsilon": 1e-6, "norm_coefficient": 0.01}, evaluator=True)


def make_control_flow_cases():
    x = f32(2, 3)
    # If on a run-time condition whose branches agree in type: both run, where() selects.
    then_graph = helper.make_graph([helper.make_node("Relu", ["x"], ["t"])], "then", [], [value_info("t", TensorProto.FLOAT, [2, 3])])
    else_graph = helper.make_graph([helper.make_node("Neg", ["x"], ["e"])], "else", [], [value_info("e", TensorProto.FLOAT, [2, 3])])
    nodes = [helper.make_node("If", ["cond"], ["y"], then_branch=then_graph, else_branch=else_graph)]
    write_case(os.path.join(ROOT, "ops", "if_runtime_condition"),
               graph_model(nodes, {"x": x, "cond": np.array(False)}, ["y"]), [x, np.array(False)])
    # Loop with a trip count of 3 and a scan output: y accumulates x, the scan keeps each step.
    body = helper.make_graph(
        [helper.make_node("Add", ["acc_in", "x"], ["acc_out"]), helper.make_node("Identity", ["cond_in"], ["cond_out"]),
         helper.make_node("Identity", ["acc_out"], ["scan"])],
        "body", [value_info("i", TensorProto.INT64, []), value_info("cond_in", TensorProto.BOOL, []),
                 value_info("acc_in", TensorProto.FLOAT, [2, 3])],
        [value_info("cond_out", TensorProto.BOOL, []), value_info("acc_out", TensorProto.FLOAT, [2, 3]),
         value_info("scan", TensorProto.FLOAT, [2, 3])])
    nodes = [helper.make_node("Loop", ["trips", "", "start"], ["y", "steps"], body=body)]
    model = graph_model(nodes, {"x": x}, ["y", "steps"],
                        initializers={"trips": np.array(3, np.int64), "start": np.zeros((2, 3), np.float32)})
    write_case(os.path.join(ROOT, "ops", "loop_trip_count"), model, [x])
    # Scan summing the rows of a sequence.
    body = helper.make_graph([helper.make_node("Add", ["sum_in", "row"], ["sum_out"]),
                              helper.make_node("Identity", ["sum_out"], ["partial"])],
                             "scan_body", [value_info("sum_in", TensorProto.FLOAT, [3]), value_info("row", TensorProto.FLOAT, [3])],
                             [value_info("sum_out", TensorProto.FLOAT, [3]), value_info("partial", TensorProto.FLOAT, [3])])
    nodes = [helper.make_node("Scan", ["init", "seq"], ["total", "partials"], body=body, num_scan_inputs=1)]
    seq = f32(4, 3)
    model = graph_model(nodes, {"seq": seq}, ["total", "partials"], initializers={"init": np.zeros(3, np.float32)})
    write_case(os.path.join(ROOT, "ops", "scan_sum"), model, [seq])


def make_recurrent_cases():
    seq, batch, size, hidden = 4, 2, 3, 5
    x = f32(seq, batch, size)
    op_case("rnn", "RNN", [x], {"hidden_size": hidden, "direction": "bidirectional"},
            initializers={"W": f32(2, hidden, size), "R": f32(2, hidden, hidden), "B": f32(2, 2 * hidden)}, outputs=2)
    op_case("gru", "GRU", [x], {"hidden_size": hidden, "linear_before_reset": 1},
            initializers={"W": f32(1, 3 * hidden, size), "R": f32(1, 3 * hidden, hidden), "B": f32(1, 6 * hidden),
                          "lens": np.array([4, 2], np.int32)}, outputs=2)
    op_case("lstm", "LSTM", [x], {"hidden_size": hidden, "direction": "reverse"},
            initializers={"W": f32(1, 4 * hidden, size), "R": f32(1, 4 * hidden, hidden), "B": f32(1, 8 * hidden),
                          "lens": None, "h0": f32(1, batch, hidden), "c0": f32(1, batch, hidden),
                          "P": f32(1, 3 * hidden)}, outputs=3)


def make_specialize_cases():
    """specialize/: models whose shape-deciding inputs are graph inputs, fed at run time with
    the values in input_<k>.npy (the importer specializes on them)."""
    reseed(7)
    x = f32(2, 6)
    nodes = [helper.make_node("Reshape", ["x", "shape"], ["y"], name="reshape")]
    model = graph_model(nodes, {"x": x, "shape": i64(3, 4)}, ["y"])
    write_case(os.path.join(ROOT, "specialize", "reshape_shape_input"), model, [x, i64(3, 4)])
    forget_output_dims(os.path.join(ROOT, "specialize", "reshape_shape_input"))
    image = f32(2, 3, 5)
    nodes = [helper.make_node("Slice", ["x", "starts", "ends", "axes", "steps"], ["sliced"], name="slice"),
             helper.make_node("Pad", ["sliced", "pads"], ["y"], name="pad", mode="constant")]
    inputs = [image, i64(-1, 1), i64(bottom_int64() + 1, 100), i64(2, 1), i64(-1, 2), i64(0, 1, 0, 0, 2, 1)]
    model = graph_model(nodes, dict(zip(["x", "starts", "ends", "axes", "steps", "pads"], inputs)), ["y"])
    write_case(os.path.join(ROOT, "specialize", "slice_and_pad_inputs"), model, inputs)
    forget_output_dims(os.path.join(ROOT, "specialize", "slice_and_pad_inputs"))


def forget_output_dims(folder):
    """write_case fixed the outputs' shapes to the run's; other input values give other shapes."""
    path = os.path.join(folder, "model.onnx")
    model = onnx.load(path)
    for output in model.graph.output:
        for dim in output.type.tensor_type.shape.dim:
            dim.ClearField("dim_value")
    onnx.save(model, path)


def bottom_int64():
    return int(np.iinfo(np.int64).min)


def make_dynamic_cases():
    reseed(3)
    torch.manual_seed(1)
    export_torch("mlp_dynamic_batch", Mlp(), [f32(3, 64)], ["x"], ["log_probs"], {"x": {0: "batch"}}, folder="dynamic")
    # The GPT block with a dynamic batch: the attention heads are reshaped to sizes computed
    # from the symbolic batch (Shape -> Gather -> Unsqueeze -> Concat -> Reshape). (A dynamic
    # sequence length slices the causal mask to min(sequence, 16), which Kiln cannot prove
    # equal to the sequence length: not supported yet.)
    ids = RNG.integers(0, 96, size=(2, 12)).astype(np.int64)
    export_torch("gpt_block_dynamic", GptBlock(), [ids], ["ids"], ["logits"],
                 {"ids": {0: "batch"}, "logits": {0: "batch"}}, folder="dynamic")
    # Shape arithmetic on a dim_param dim: Shape -> Gather -> Unsqueeze -> Concat -> Reshape.
    x = f32(3, 4, 5)
    nodes = [
        helper.make_node("Shape", ["x"], ["shape"]),
        helper.make_node("Gather", ["shape", "zero"], ["n"], axis=0),
        helper.make_node("Unsqueeze", ["n", "axes"], ["n_1d"]),
        helper.make_node("Concat", ["n_1d", "minus_one"], ["new_shape"], axis=0),
        helper.make_node("Reshape", ["x", "new_shape"], ["flat"]),
        helper.make_node("Relu", ["flat"], ["y"]),
    ]
    graph = helper.make_graph(nodes, "symbolic_reshape", [value_info("x", TensorProto.FLOAT, ["rows", 4, 5])],
                              [helper.make_empty_tensor_value_info("y")],
                              initializer=[numpy_helper.from_array(np.array(0, np.int64), "zero"),
                                           numpy_helper.from_array(i64(0), "axes"),
                                           numpy_helper.from_array(i64(-1), "minus_one")])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    write_case(os.path.join(ROOT, "dynamic", "symbolic_reshape"), model, [x])
    # write_case fixed the output's shape to the run's; give it back its symbolic rows.
    path = os.path.join(ROOT, "dynamic", "symbolic_reshape", "model.onnx")
    saved = onnx.load(path)
    saved.graph.output[0].type.tensor_type.shape.dim[0].ClearField("dim_value")
    saved.graph.output[0].type.tensor_type.shape.dim[0].dim_param = "rows"
    onnx.save(saved, path)


def make_equal_dim_cases():
    """Dynamic dims under different names that the ops need equal (the importer makes them one
    symbol): two batches, a dim_param that meets a fixed size, a KV cache whose past length
    plus one meets a total length, and a Reshape whose shape bakes the batch in; and a mask
    buffer sliced at a dynamic size that an op needs to be that size (the importer cuts it)."""
    reseed(11)

    def with_symbolic_outputs(folder, dims_by_output):
        path = os.path.join(folder, "model.onnx")
        saved = onnx.load(path)
        for output, dims in zip(saved.graph.output, dims_by_output):
            for axis, name in dims.items():
                output.type.tensor_type.shape.dim[axis].ClearField("dim_value")
                output.type.tensor_type.shape.dim[axis].dim_param = name
        onnx.save(saved, path)

    nodes = [helper.make_node("Add", ["x", "y"], ["sum"]), helper.make_node("Relu", ["sum"], ["batched"]),
             helper.make_node("Add", ["z", "table"], ["sized"])]
    graph = helper.make_graph(nodes, "batch_names_and_a_size",
                              [value_info("x", TensorProto.FLOAT, ["batch_x", 4]), value_info("y", TensorProto.FLOAT, ["batch_y", 4]),
                               value_info("z", TensorProto.FLOAT, ["rows", 4])],
                              [helper.make_empty_tensor_value_info("batched"), helper.make_empty_tensor_value_info("sized")],
                              initializer=[numpy_helper.from_array(f32(5, 4), "table")])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    folder = os.path.join(ROOT, "dynamic", "batch_names_and_a_size")
    write_case(folder, model, [f32(3, 4), f32(3, 4), f32(5, 4)])
    with_symbolic_outputs(folder, [{0: "batch_x"}])

    nodes = [helper.make_node("Concat", ["past", "k"], ["keys"], axis=1),
             helper.make_node("Transpose", ["keys"], ["keys_t"], perm=[0, 2, 1]),
             helper.make_node("MatMul", ["q", "keys_t"], ["scores"]),
             helper.make_node("Softmax", ["scores"], ["weights"], axis=-1),
             helper.make_node("MatMul", ["weights", "v"], ["attended"])]
    graph = helper.make_graph(nodes, "kv_cache_names",
                              [value_info("q", TensorProto.FLOAT, ["q_batch", 1, 8]), value_info("k", TensorProto.FLOAT, ["k_batch", 1, 8]),
                               value_info("past", TensorProto.FLOAT, ["past_batch", "past", 8]),
                               value_info("v", TensorProto.FLOAT, ["v_batch", "total", 8])],
                              [helper.make_empty_tensor_value_info("attended")])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    folder = os.path.join(ROOT, "dynamic", "kv_cache_names")
    write_case(folder, model, [f32(2, 1, 8), f32(2, 1, 8), f32(2, 5, 8), f32(2, 6, 8)])
    with_symbolic_outputs(folder, [{0: "q_batch"}])

    # A Reshape whose shape bakes the batch of the exporter's trace in: [n, 4, 6] to [2, 24].
    nodes = [helper.make_node("Reshape", ["x", "shape"], ["flat"]), helper.make_node("Relu", ["flat"], ["y"])]
    graph = helper.make_graph(nodes, "baked_batch", [value_info("x", TensorProto.FLOAT, ["n", 4, 6])],
                              [helper.make_empty_tensor_value_info("y")],
                              initializer=[numpy_helper.from_array(i64(2, 24), "shape")])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    write_case(os.path.join(ROOT, "dynamic", "baked_batch"), model, [f32(2, 4, 6)])

    # A causal mask buffer [8, 8] sliced [:seq, :seq] at the scores' dynamic size (GPT-style): the
    # slice has min(seq, 8) rows, which the Where needs to be seq.
    mask = np.tril(np.ones((8, 8), dtype=bool))
    nodes = [helper.make_node("Shape", ["scores"], ["shape"]),
             helper.make_node("Gather", ["shape", "one"], ["seq"], axis=0),
             helper.make_node("Unsqueeze", ["seq", "zero_axis"], ["seq_1"]),
             helper.make_node("Concat", ["seq_1", "seq_1"], ["ends"], axis=0),
             helper.make_node("Slice", ["mask", "starts", "ends", "axes"], ["causal"]),
             helper.make_node("Where", ["causal", "scores", "minus_inf"], ["masked"]),
             helper.make_node("Softmax", ["masked"], ["weights"], axis=-1)]
    graph = helper.make_graph(nodes, "sliced_mask", [value_info("scores", TensorProto.FLOAT, ["batch", "seq", "seq"])],
                              [helper.make_empty_tensor_value_info("weights")],
                              initializer=[numpy_helper.from_array(mask, "mask"), numpy_helper.from_array(i64(1).reshape(()), "one"),
                                           numpy_helper.from_array(i64(0), "zero_axis"), numpy_helper.from_array(i64(0, 0), "starts"),
                                           numpy_helper.from_array(i64(0, 1), "axes"),
                                           numpy_helper.from_array(np.array(-np.inf, dtype=np.float32), "minus_inf")])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    folder = os.path.join(ROOT, "dynamic", "sliced_mask")
    write_case(folder, model, [f32(2, 5, 5)])
    with_symbolic_outputs(folder, [{0: "batch", 1: "seq", 2: "seq"}])


def save_bad(name, model):
    os.makedirs(os.path.join(ROOT, "bad"), exist_ok=True)
    with open(os.path.join(ROOT, "bad", name), "wb") as file:
        file.write(model.SerializeToString())


def relu_model(opset):
    node = helper.make_node("Relu", ["x"], ["y"])
    graph = helper.make_graph([node], "relu", [value_info("x", TensorProto.FLOAT, [2])], [value_info("y", TensorProto.FLOAT, [2])])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
    model.ir_version = 8
    return model


def make_bad_cases():
    reseed(4)
    shutil.rmtree(os.path.join(ROOT, "bad"), ignore_errors=True)
    save_bad("opset_10.onnx", relu_model(10))
    save_bad("opset_22.onnx", relu_model(22))
    # The checker: a node reads a value nothing defines.
    node = helper.make_node("Add", ["x", "undefined"], ["y"])
    graph = helper.make_graph([node], "g", [value_info("x", TensorProto.FLOAT, [2])], [value_info("y", TensorProto.FLOAT, [2])])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    save_bad("checker_fails.onnx", model)
    # The same defect at opset 18, which ONNX 1.12's checker does not know: Kiln's own check.
    model.opset_import[0].version = 18
    save_bad("opset18_undefined_input.onnx", model)
    # A shape computed at run time (Reshape's shape is a graph input).
    node = helper.make_node("Reshape", ["x", "shape"], ["y"], name="reshape_runtime")
    graph = helper.make_graph([node], "g", [value_info("x", TensorProto.FLOAT, [2, 6]), value_info("shape", TensorProto.INT64, [2])],
                              [value_info("y", TensorProto.FLOAT, [None, None])])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    save_bad("reshape_runtime_shape.onnx", model)
    # An input of an element type Kiln has no dtype for.
    node = helper.make_node("Identity", ["x"], ["y"])
    graph = helper.make_graph([node], "g", [value_info("x", TensorProto.STRING, [3])], [value_info("y", TensorProto.STRING, [3])])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    save_bad("string_input.onnx", model)
    # Unsupported ops (random draws Kiln cannot reproduce): Bernoulli twice, RandomUniformLike
    # once, and an op of another domain.
    nodes = [
        helper.make_node("Bernoulli", ["x"], ["draw_a"], name="bernoulli_a"),
        helper.make_node("Bernoulli", ["draw_a"], ["draw_b"], name="bernoulli_b"),
        helper.make_node("Relu", ["draw_b"], ["relu"], name="relu"),
        helper.make_node("RandomUniformLike", ["x"], ["noise"], name="noise"),
        helper.make_node("FusedThing", ["relu"], ["y"], name="custom", domain="com.example"),
    ]
    graph = helper.make_graph(
        nodes, "g", [value_info("x", TensorProto.FLOAT, [4, 8])],
        [value_info("y", TensorProto.FLOAT, [4, 8]), value_info("noise", TensorProto.FLOAT, [4, 8])])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17), helper.make_opsetid("com.example", 1)])
    model.ir_version = 8
    save_bad("unsupported_ops.onnx", model)
    # External data: a good model with its weight in a side file, one whose file is missing, and
    # one whose file lies outside the model's folder; the bad ones also at opset 18, where
    # Kiln's own reader (not ONNX's checker) finds the fault.
    shutil.rmtree(os.path.join(ROOT, "external"), ignore_errors=True)
    os.makedirs(os.path.join(ROOT, "external"))
    weight = f32(4, 3)
    for case in ["good", "missing", "outside"]:
        for opset in [17, 18]:
            if case == "good" and opset == 18:
                continue
            node = helper.make_node("MatMul", ["x", "w"], ["y"])
            graph = helper.make_graph([node], "external", [value_info("x", TensorProto.FLOAT, [2, 4])],
                                      [value_info("y", TensorProto.FLOAT, [2, 3])],
                                      initializer=[numpy_helper.from_array(weight, "w")])
            model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
            model.ir_version = 8
            suffix = "" if opset == 17 else "_opset18"
            if case == "outside":
                onnx.external_data_helper.set_external_data(model.graph.initializer[0], location="../outside.bin")
                model.graph.initializer[0].ClearField("raw_data")
                save_bad(f"external_data_outside{suffix}.onnx", model)
                continue
            onnx.external_data_helper.convert_model_to_external_data(
                model, all_tensors_to_one_file=True, location="weights.bin" if case == "good" else "missing_weights.bin",
                size_threshold=0)
            if case == "good":
                onnx.save_model(model, os.path.join(ROOT, "external", "model.onnx"))
                x = f32(2, 4)
                np.save(os.path.join(ROOT, "external", "input_0.npy"), x)
                np.save(os.path.join(ROOT, "external", "output_0.npy"), x @ weight)
            else:
                onnx.save_model(model, os.path.join(ROOT, "bad", f"external_data_missing{suffix}.onnx"))
                os.remove(os.path.join(ROOT, "bad", "missing_weights.bin"))
    # ONNX's own shape inference crashes on LayerNormalization's axis out of range for its input
    # (axis -4 of a rank-3 input) when the node has its mean and inverse std outputs: Kiln's
    # converter must refuse the axis before ONNX's inference sees the node.
    node = helper.make_node("LayerNormalization", ["x", "scale", "bias"], ["y", "mean", "inv_std"], axis=-4,
                            name="norm")
    graph = helper.make_graph([node], "g", [value_info("x", TensorProto.FLOAT, [2, 3, 4])],
                              [value_info("y", TensorProto.FLOAT, [2, 3, 4])],
                              initializer=[numpy_helper.from_array(f32(4), "scale"), numpy_helper.from_array(f32(4), "bias")])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    save_bad("layer_norm_axis_out_of_range.onnx", model)
    # A node with more outputs than its op has, at an opset ONNX 1.12's checker does not know.
    node = helper.make_node("Relu", ["x"], ["y", "extra"], name="relu")
    graph = helper.make_graph([node], "g", [value_info("x", TensorProto.FLOAT, [2])], [value_info("y", TensorProto.FLOAT, [2])])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 18)])
    model.ir_version = 8
    save_bad("relu_two_outputs_opset18.onnx", model)
    # A graph output declared with another shape than the node computes (opset 18: no ONNX
    # shape inference to catch it first).
    node = helper.make_node("Flatten", ["x"], ["y"], axis=1, name="flatten")
    graph = helper.make_graph([node], "g", [value_info("x", TensorProto.FLOAT, [2, 3])],
                              [value_info("y", TensorProto.FLOAT, [2, 3, 1])])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 18)])
    model.ir_version = 8
    save_bad("declared_output_shape_wrong.onnx", model)
    # Resize by a scale whose output size no int64 holds (1e30 x 4 elements): refused, never cast.
    node = helper.make_node("Resize", ["x", "", "scales"], ["y"], mode="nearest", name="resize")
    graph = helper.make_graph([node], "g", [value_info("x", TensorProto.FLOAT, [1, 1, 4, 4])],
                              [value_info("y", TensorProto.FLOAT, None)],
                              initializer=[numpy_helper.from_array(np.array([1, 1, 1e30, 1], np.float32), "scales")])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 18)])
    model.ir_version = 8
    save_bad("resize_scale_overflows.onnx", model)
    # A graph input whose initializer has another shape than the input declares (found by the
    # bounded fuzz run: ONNX types the users from the declaration, Kiln froze the initializer).
    node = helper.make_node("Sin", ["x"], ["y"], name="sin")
    graph = helper.make_graph([node], "g", [value_info("x", TensorProto.FLOAT, [3, 4])],
                              [value_info("y", TensorProto.FLOAT, [3, 4])],
                              initializer=[numpy_helper.from_array(np.ones((2, 3, 4), np.float32), "x")])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    save_bad("initializer_shape_unlike_its_input.onnx", model)
    # A graph input that the file declares again, as a graph output or in value_info, with
    # another shape (found by the bounded fuzz run: ONNX types the users from the second one).
    for case, extra in (("output", "outputs"), ("value_info", "value_info")):
        node = helper.make_node("Add", ["x", "c"], ["y"], name="add")
        again = value_info("x", TensorProto.FLOAT, [2, 1, 4])
        graph = helper.make_graph([node], "g", [value_info("x", TensorProto.FLOAT, [2, 3, 4])],
                                  [value_info("y", TensorProto.FLOAT, [2, 3, 4])] + ([again] if extra == "outputs" else []),
                                  initializer=[numpy_helper.from_array(np.ones((), np.float32), "c")],
                                  value_info=[again] if extra == "value_info" else None)
        model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
        model.ir_version = 8
        save_bad(f"input_declared_again_as_{case}.onnx", model)


def make_sequence_cases():
    """Sequence and optional ops inside models with tensor inputs and outputs (Kiln resolves
    them at import time), with ONNX Runtime's outputs."""
    reseed(21)
    def sequence_case(case, nodes, inputs, outputs, initializers=None):
        model = graph_model(nodes, inputs, outputs, 18, initializers, case)
        write_case(os.path.join(ROOT, "ops", case), model, list(inputs.values()))
    # Split, insert at the front, erase the second, the last element, the rest concatenated, the length.
    sequence_case("sequence_split_insert_erase", [
        helper.make_node("SplitToSequence", ["x", "sizes"], ["pieces"], axis=0),
        helper.make_node("SequenceInsert", ["pieces", "t", "front"], ["inserted"]),
        helper.make_node("SequenceErase", ["inserted", "second"], ["erased"]),
        helper.make_node("SequenceAt", ["erased", "last"], ["y0"]),
        helper.make_node("ConcatFromSequence", ["erased"], ["y1"], axis=0),
        helper.make_node("SequenceLength", ["erased"], ["y2"]),
    ], {"x": f32(4, 3), "t": f32(2, 3)}, ["y0", "y1", "y2"],
        {"sizes": i64(1, 3), "front": np.array(0, np.int64), "second": np.array(1, np.int64), "last": np.array(-1, np.int64)})
    # SequenceConstruct, SequenceMap with a tensor input beside the sequence, stacked on a new axis.
    body = helper.make_graph([helper.make_node("Mul", ["e", "w"], ["p"])], "body",
                             [value_info("e", TensorProto.FLOAT, [2, 3]), value_info("w", TensorProto.FLOAT, [3])],
                             [value_info("p", TensorProto.FLOAT, [2, 3])])
    sequence_case("sequence_construct_map", [
        helper.make_node("SequenceConstruct", ["x", "z"], ["s"]),
        helper.make_node("SequenceMap", ["s", "w"], ["m"], body=body),
        helper.make_node("ConcatFromSequence", ["m"], ["y0"], axis=1, new_axis=1),
    ], {"x": f32(2, 3), "z": f32(2, 3), "w": f32(3)}, ["y0"])
    # SequenceEmpty and Optional: an optional sequence read back, present and empty optionals,
    # SplitToSequence without sizes (size-1 pieces, squeezed).
    sequence_type = helper.make_sequence_type_proto(helper.make_tensor_type_proto(TensorProto.FLOAT, [3]))
    sequence_case("sequence_empty_optional", [
        helper.make_node("SequenceEmpty", [], ["empty"], dtype=TensorProto.FLOAT),
        helper.make_node("SequenceInsert", ["empty", "x"], ["s"]),
        helper.make_node("Optional", ["s"], ["o"]),
        helper.make_node("OptionalGetElement", ["o"], ["s2"]),
        helper.make_node("ConcatFromSequence", ["s2"], ["y0"], axis=0),
        helper.make_node("OptionalHasElement", ["o"], ["y1"]),
        helper.make_node("Optional", [], ["none"], type=sequence_type),
        helper.make_node("OptionalHasElement", ["none"], ["y2"]),
        helper.make_node("SplitToSequence", ["x"], ["singles"], keepdims=0),
        helper.make_node("ConcatFromSequence", ["singles"], ["y3"], axis=0, new_axis=1),
    ], {"x": f32(3)}, ["y0", "y1", "y2", "y3"])


def make_einsum_diagonal_cases():
    """Einsum terms that repeat a label (a diagonal), with ONNX Runtime's outputs."""
    reseed(22)
    op_case("einsum_diagonal", "Einsum", [f32(4, 4)], {"equation": "ii->i"})
    op_case("einsum_trace_implicit", "Einsum", [f32(3, 3)], {"equation": "ii"})
    op_case("einsum_batch_diagonal_sum", "Einsum", [f32(2, 3, 3, 5)], {"equation": "biij->bj"})
    op_case("einsum_diagonal_times_matrix", "Einsum", [f32(3, 3), f32(3, 4)], {"equation": "ii,ij->ij"})
    # A diagonal over dims of different sizes: refused.
    node = helper.make_node("Einsum", ["x"], ["y"], name="einsum", equation="ii->i")
    graph = helper.make_graph([node], "einsum", [value_info("x", TensorProto.FLOAT, [2, 3])],
                              [value_info("y", TensorProto.FLOAT, [2])])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    save_bad("einsum_diagonal_of_unequal_dims.onnx", model)


def make_pool_ceil_cases():
    """Pooling with ceil_mode whose last window would start past the input: ONNX 1.15+ (and
    ONNX Runtime, PyTorch) drop it, Debian's ONNX 1.12 library infers one more; with ONNX
    Runtime's outputs. The MaxPool case declares its output's sizes (ONNX Runtime's), which the
    library's inference contradicts; the AveragePool case declares dim_params, which the
    library's inference fills in with its own sizes."""
    reseed(23)
    for op, opset in [("MaxPool", 12), ("AveragePool", 19)]:
        case = f"{op.lower()}_ceil_last_window_dropped"
        node = helper.make_node(op, ["x"], ["y"], name=case, kernel_shape=[1, 1], strides=[2, 2], ceil_mode=1)
        graph = helper.make_graph([node], case, [value_info("x", TensorProto.FLOAT, [1, 2, 4, 4])],
                                  [value_info("y", TensorProto.FLOAT, ["n", "c", "h", "w"])])
        model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
        model.ir_version = IR_FOR_OPSET[opset]
        folder = os.path.join(ROOT, "ops", case)
        write_case(folder, model, [f32(1, 2, 4, 4)])
        if op == "AveragePool":
            saved = onnx.load(os.path.join(folder, "model.onnx"))
            for dim, name in zip(saved.graph.output[0].type.tensor_type.shape.dim, "nchw"):
                dim.dim_param = name
            onnx.save(saved, os.path.join(folder, "model.onnx"))
    # A MaxPool whose declared output [1, 2, 3, 3] is wrong by every rule (a 3x3 input, stride 2:
    # 2x2): refused, naming the declared and the computed type.
    node = helper.make_node("MaxPool", ["x"], ["y"], name="pool", kernel_shape=[1, 1], strides=[2, 2], ceil_mode=1)
    graph = helper.make_graph([node], "pool", [value_info("x", TensorProto.FLOAT, [1, 2, 3, 3])],
                              [value_info("y", TensorProto.FLOAT, [1, 2, 3, 3])])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 12)])
    model.ir_version = IR_FOR_OPSET[12]
    save_bad("maxpool_ceil_output_declared_wrong.onnx", model)


def write_covered_ops():
    """covered_ops.txt: every op type used by a case model, one a line (the C++ tests check
    that each op the importer supports is among them)."""
    ops = set()
    for group in ["ops", "models", "dynamic", "specialize"]:
        for case in os.listdir(os.path.join(ROOT, group)):
            ops.update(node.op_type if node.domain in ("", "ai.onnx") else f"{node.domain}.{node.op_type}"
                       for node in onnx.load(os.path.join(ROOT, group, case, "model.onnx")).graph.node)
    with open(os.path.join(ROOT, "covered_ops.txt"), "w") as file:
        file.write("".join(op + "\n" for op in sorted(ops)))


GROUPS = {"ops": lambda: make_op_cases(), "models": lambda: make_model_cases(), "dynamic": lambda: make_dynamic_cases(),
          "bad": lambda: make_bad_cases(), "slice_edges": lambda: make_slice_edge_cases(),
          "specialize": lambda: make_specialize_cases(), "node_test_ops": lambda: make_node_test_op_cases(),
          "int16": lambda: make_int16_cases(), "sequences": lambda: make_sequence_cases(),
          "einsum_diagonals": lambda: make_einsum_diagonal_cases(), "pool_ceil": lambda: make_pool_ceil_cases(),
          "equal_dims": lambda: make_equal_dim_cases()}


def main():
    """Every group, or the groups named (`--only slice_edges specialize`): a group can be
    written again without touching the others' files."""
    groups = list(GROUPS)
    if len(sys.argv) > 1:
        if sys.argv[1] != "--only" or not set(sys.argv[2:]) <= set(GROUPS) or len(sys.argv) == 2:
            sys.exit(f"usage: make_onnx_test_models.py [--only GROUP...]  (groups: {' '.join(GROUPS)})")
        groups = sys.argv[2:]
    os.makedirs(ROOT, exist_ok=True)
    for group in groups:
        GROUPS[group]()
    write_covered_ops()
    total = sum(os.path.getsize(os.path.join(d, f)) for d, _, files in os.walk(ROOT) for f in files)
    print(f"wrote {os.path.normpath(ROOT)}: {total / 1e6:.2f} MB")


if __name__ == "__main__":
    main()
