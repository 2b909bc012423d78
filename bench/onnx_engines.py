"""The ONNX side of the comparisons (compare_onnxruntime.py, compare_suite.py): exporting a
PyTorch module the way the tests do, and an ONNX Runtime session set up like Kiln's runs
(CPU provider, every graph optimization, `threads` intra-op threads, sequential)."""
import time
import warnings

import onnxruntime as ort
import torch


def export(module, inputs, path):
    """Writes `module` (put in eval mode) called on the numpy arrays `inputs` (name -> array, in
    order) to `path` as ONNX opset 17 through the TorchScript exporter, one output named y."""
    module.eval()
    torch.backends.mha.set_fastpath_enabled(False)  # the fused fast path has no ONNX export
    with torch.no_grad(), warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the TorchScript exporter, on purpose (as the tests)
        torch.onnx.export(module, tuple(torch.from_numpy(a) for a in inputs.values()), path,
                          input_names=list(inputs), output_names=["y"], opset_version=17, dynamo=False,
                          do_constant_folding=True)


def ort_session(path, threads):
    options = ort.SessionOptions()
    options.intra_op_num_threads = threads
    options.inter_op_num_threads = 1
    options.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
    options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
    return ort.InferenceSession(path, options, providers=["CPUExecutionProvider"])


def ort_call_times(session, inputs, iters, warmup=5):
    """Milliseconds of each of `iters` session.run calls after `warmup` untimed ones, as a caller sees
    them: fresh outputs per call, dropped before the clock stops."""
    for _ in range(warmup):
        session.run(None, inputs)
    times = []
    for _ in range(iters):
        start = time.perf_counter()
        session.run(None, inputs)
        times.append((time.perf_counter() - start) * 1e3)
    return times
