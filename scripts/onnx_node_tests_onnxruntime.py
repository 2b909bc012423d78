#!/usr/bin/env python3
"""ONNX's backend node tests through ONNX Runtime, run the way a user runs a model: the same
harness as Kiln's conformance runner (tests/onnx_conformance, "as a user runs it" view), so that
the two counts compare.

For every case folder under NODE_DIR (.cache/onnx-tests/node, made by scripts/make-onnx-test-data):
  - the model is loaded as it is (no input is frozen into an initializer);
  - every graph input that is not an initializer is fed from test_data_set_0/input_<k>.pb, in
    the order of the graph's inputs;
  - every graph output is fetched by its ONNX name and compared with output_<k>.pb at
    rtol 1e-3 / atol 1e-7 as ONNX's own runner (numpy.isclose; NaN equals NaN), same dtype and shape; sequences
    and optionals element by element.
A case passes when the session builds, runs and every output matches. It prints pass/total,
and with --results FILE writes one line per case: `name<TAB>passed|failed<TAB>reason`.

  ~/.cache/kiln-pyenv/bin/python scripts/onnx_node_tests_onnxruntime.py [NODE_DIR] [--results FILE]
"""
import argparse
import glob
import os
import sys

import numpy as np
import onnx
from onnx import numpy_helper
import onnxruntime as ort

RTOL = 1e-3
ATOL = 1e-7


def read_value(path, type_proto):
    """A test data file as a numpy array, a list (sequence) or None (empty optional)."""
    data = open(path, "rb").read()
    if type_proto.HasField("sequence_type"):
        sequence = onnx.SequenceProto()
        sequence.ParseFromString(data)
        return [numpy_helper.to_array(t) for t in sequence.tensor_values]
    if type_proto.HasField("optional_type"):
        optional = onnx.OptionalProto()
        optional.ParseFromString(data)
        if optional.HasField("tensor_value"):
            return numpy_helper.to_array(optional.tensor_value)
        if optional.HasField("sequence_value"):
            return [numpy_helper.to_array(t) for t in optional.sequence_value.tensor_values]
        return None
    tensor = onnx.TensorProto()
    tensor.ParseFromString(data)
    return numpy_helper.to_array(tensor)


def difference(expected, actual, atol):
    """'' when `actual` matches `expected`, else the first difference in words."""
    if isinstance(expected, list) or isinstance(actual, list):
        if not isinstance(expected, list) or not isinstance(actual, list) or len(expected) != len(actual):
            return "sequence mismatch"
        for e, a in zip(expected, actual):
            problem = difference(e, a, atol)
            if problem:
                return problem
        return ""
    if expected is None or actual is None:
        return "" if expected is None and actual is None else "optional mismatch"
    expected, actual = np.asarray(expected), np.asarray(actual)
    if expected.dtype != actual.dtype:
        return f"dtype {actual.dtype}, expected {expected.dtype}"
    if expected.shape != actual.shape:
        return f"shape {actual.shape}, expected {expected.shape}"
    if expected.dtype.kind in "fc":
        ok = np.isclose(actual, expected, rtol=RTOL, atol=atol, equal_nan=True)
    elif expected.dtype.kind in "OSU":
        ok = actual == expected
    else:
        ok = actual == expected
    if not np.all(ok):
        return f"{int(np.size(ok) - np.count_nonzero(ok))} elements differ"
    return ""


def run_case(folder, atol):
    model = onnx.load(os.path.join(folder, "model.onnx"))
    initializers = {t.name for t in model.graph.initializer}
    inputs = [i for i in model.graph.input if i.name not in initializers]
    data = os.path.join(folder, "test_data_set_0")
    input_files = sorted(glob.glob(os.path.join(data, "input_*.pb")), key=lambda p: int(p.rsplit("_", 1)[1][:-3]))
    output_files = sorted(glob.glob(os.path.join(data, "output_*.pb")), key=lambda p: int(p.rsplit("_", 1)[1][:-3]))
    feeds = {i.name: read_value(f, i.type) for i, f in zip(inputs, input_files)}
    try:
        session = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    except Exception as error:  # noqa: BLE001 - every failure is a result
        return "failed", "session: " + str(error).splitlines()[0][:200]
    names = [o.name for o in model.graph.output]
    try:
        outputs = session.run(names, feeds)
    except Exception as error:  # noqa: BLE001
        return "failed", "run: " + str(error).splitlines()[0][:200]
    for output, name, path, result in zip(model.graph.output, names, output_files, outputs):
        problem = difference(read_value(path, output.type), result, atol)
        if problem:
            return "failed", f"output '{name}': {problem}"
    return "passed", ""


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    repo = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    parser.add_argument("node_dir", nargs="?", default=os.path.join(repo, ".cache", "onnx-tests", "node"))
    parser.add_argument("--results", help="write one line per case: name, passed|failed, reason")
    parser.add_argument("--atol", type=float, default=ATOL, help="absolute tolerance (default %(default)s)")
    args = parser.parse_args()

    ort.set_default_logger_severity(4)
    cases = sorted(d for d in os.listdir(args.node_dir) if os.path.exists(os.path.join(args.node_dir, d, "model.onnx")))
    if not cases:
        sys.exit(f"no node test cases under {args.node_dir} (run scripts/make-onnx-test-data)")
    lines, passed = [], 0
    for name in cases:
        status, reason = run_case(os.path.join(args.node_dir, name), args.atol)
        passed += status == "passed"
        lines.append(f"{name}\t{status}\t{reason}")
    if args.results:
        with open(args.results, "w") as out:
            out.write("\n".join(lines) + "\n")
    print(f"ONNX Runtime {ort.__version__}: {passed}/{len(cases)} node test cases pass as a user runs them "
          f"(rtol {RTOL}, atol {args.atol})")


if __name__ == "__main__":
    main()
