"""Exports PyTorch's own OpInfo samples with torch.export, for Kiln's .pt2 conformance suite
(tests/pt2_conformance/). Called by scripts/make-pt2-test-data; writes, per OpInfo entry of
torch.testing._internal.common_methods_invocations.op_db (the list shipped in the PyPI wheel):

  OUT/<op>/meta.json         the op's entry: dtype, tolerances, and one record per sample
  OUT/<op>/<k>/training.pt2  sample k exported with torch.export.export (training IR: in-place
                             ops and views as the program wrote them); its sample inputs are
                             the archive's own (data/sample_inputs)
  OUT/<op>/<k>/core.pt2      the same after run_decompositions() (the Core ATen opset), written
                             only when it uses other targets than training.pt2
  OUT/<op>/<k>/expected_<i>.npy  eager PyTorch's outputs (pytree leaves of the op's result)
  OUT/<op>/<k>/exact_<i>.npy     the same op computed in float64 from the same inputs, rounded
                             to float32 (float32 samples of ops with a float64 CPU kernel,
                             floating outputs, deterministic ops only)

Each sample is the OpInfo's op called on (sample.input, *sample.args, **sample.kwargs), wrapped
in a module whose forward takes the sample's tensors (in pytree order) and holds its other
values as constants. The dtype is float32 where the op supports it on the CPU, else int64,
else bool. At most --samples-per-op samples are taken, evenly spaced over the OpInfo's list
(seeded: the same every run). Samples that torch.export refuses are recorded with the reason
and counted apart. Each exported program is also run in PyTorch (ExportedProgram.module()),
which should give eager's outputs (or, where eager misses the float64 result, that result) at
the op's tolerances; a program that does not (torch.export wrote something else than the op) is
recorded with the first difference ("training_diverges", "core_diverges"), and where Kiln fails
such a case the suite reports it apart, since Kiln runs a program as written. Random ops whose
eager run differs between two seeds skip that check and have no exact outputs (OpInfo seeds
most random ops itself, so their programs diverge; the suite checks those by a property of the
output). Tolerances are OpInfo's: torch.testing's float32 defaults (atol 1e-5, rtol 1.3e-6),
raised to the largest float32 toleranceOverride the op's entry declares.

An op's folder is written to OUT/<op>.partial and renamed when complete, so an interrupted run
resumes where it stopped (ops already present are skipped). Ops run in --jobs processes.
"""

import argparse
import json
import multiprocessing
import os
import shutil
import sys
import time
import traceback
import warnings


def op_key(op):
    return op.name + ("." + op.variant_test_name if op.variant_test_name else "")


def folder_name(key):
    return "".join(ch if ch.isalnum() or ch in "._-" else "_" for ch in key)


def choose_dtype(op, torch):
    dtypes = op.supported_dtypes("cpu")
    for dtype in (torch.float32, torch.int64, torch.bool):
        if dtype in dtypes:
            return dtype
    return None


def tolerances(op, torch):
    from torch.testing._internal.common_device_type import toleranceOverride

    atol, rtol = 1e-5, 1.3e-6
    for decoration in op.decorators:
        for decorator in getattr(decoration, "decorators", [decoration]):
            if isinstance(decorator, toleranceOverride) and torch.float32 in decorator.d:
                atol = max(atol, decorator.d[torch.float32].atol)
                rtol = max(rtol, decorator.d[torch.float32].rtol)
    return atol, rtol


def target_name(target):
    """A node's target as a .pt2 archive names it, without "torch.ops." ("aten.add.Tensor",
    "_operator.mul")."""
    if hasattr(target, "_schema") or type(target).__name__ == "OpOverload":
        return str(target)
    return f"{getattr(target, '__module__', '')}.{getattr(target, '__name__', str(target))}"


def targets_of(program):
    return sorted({target_name(node.target) for node in program.graph.nodes if node.op == "call_function"})


def save_output(folder, name, output, torch):
    """One output as `folder/name` (.npy): a tensor (bfloat16 as float32: npy has no bfloat16), or
    an int as an int64 scalar."""
    import numpy as np

    if isinstance(output, torch.Tensor):
        value = (output.float() if output.dtype == torch.bfloat16 else output).detach().numpy()
    else:
        value = np.array(output, dtype=np.int64)
    np.save(os.path.join(folder, name), np.array(value, order="C"))


def leaves_of(output, torch):
    from torch.utils import _pytree as pytree

    return pytree.tree_flatten(output)[0]


def outputs_differ(actual, expected, atol, rtol, torch):
    """The first difference of two lists of outputs at the given tolerances, or None."""
    if len(actual) != len(expected):
        return f"{len(actual)} outputs, expected {len(expected)}"
    for i, (a, b) in enumerate(zip(actual, expected)):
        if not isinstance(b, torch.Tensor) or not isinstance(a, torch.Tensor):
            if a != b:
                return f"output {i} is {a}, expected {b}"
            continue
        try:
            torch.testing.assert_close(a, b, atol=atol, rtol=rtol, equal_nan=True, check_device=False)
        except AssertionError as error:
            lines = [line.strip() for line in str(error).splitlines() if line.strip()]
            return f"output {i}: " + "; ".join(lines[:3])[:300]
    return None


def is_random(module, tensors, torch):
    """Whether the sample's outputs change with the random seed (dropout, rand_like, ...)."""
    results = []
    for seed in (1, 2):
        torch.manual_seed(seed)
        with torch.no_grad():
            results.append(leaves_of(module(*[t.clone() for t in tensors]), torch))
    return outputs_differ(results[0], results[1], 0, 0, torch) is not None


def exact_outputs(module, tensors, outputs, torch):
    """The sample computed in float64 (float32 inputs made float64), rounded back to float32:
    a list parallel to `outputs`, None where an output has no such value."""
    if not any(t.dtype == torch.float32 for t in tensors):
        return [None] * len(outputs)
    try:
        with torch.no_grad(), warnings.catch_warnings():
            warnings.simplefilter("ignore")
            wide = leaves_of(module(*[t.double() if t.dtype == torch.float32 else t.clone() for t in tensors]), torch)
    except Exception:  # no float64 kernel, or the op insists on float32
        return [None] * len(outputs)
    if len(wide) != len(outputs):
        return [None] * len(outputs)
    exact = []
    for w, output in zip(wide, outputs):
        usable = (isinstance(w, torch.Tensor) and isinstance(output, torch.Tensor) and output.dtype == torch.float32
                  and w.dtype == torch.float64 and w.shape == output.shape)
        exact.append(w.float() if usable else None)
    return exact


def program_diverges(program, tensors, outputs, exact, atol, rtol, torch):
    """Why PyTorch's own run of an exported program disagrees with eager, or None: each output
    must match eager's, or, where eager misses the float64 result, that result."""
    try:
        with torch.no_grad(), warnings.catch_warnings():
            warnings.simplefilter("ignore")
            actual = leaves_of(program.module()(*[t.clone() for t in tensors]), torch)
    except Exception as error:
        return "PyTorch cannot run it: " + type(error).__name__ + ": " + (str(error).splitlines() or [""])[0][:200]
    if len(actual) != len(outputs):
        return f"it returns {len(actual)} outputs, eager {len(outputs)}"
    for i, (a, b, e) in enumerate(zip(actual, outputs, exact)):
        problem = outputs_differ([a], [b], atol, rtol, torch)
        if problem and e is not None and outputs_differ([b], [e], atol, rtol, torch) and not outputs_differ([a], [e], atol, rtol, torch):
            problem = None  # eager is the inaccurate side; the program matches the float64 result
        if problem:
            return f"output {i}: " + problem.split(": ", 1)[-1]
    return None


# The Core ATen overloads (with sym_size and the getitem of multi-output ops, which every IR
# has), set by export_op.
CORE_ATEN = set()


def export_sample(op, sample, folder, tolerance, torch):
    """Exports one sample into `folder`; returns its record."""
    from torch.utils import _pytree as pytree

    leaves, spec = pytree.tree_flatten((sample.input, sample.args, sample.kwargs))
    positions = [i for i, leaf in enumerate(leaves) if isinstance(leaf, torch.Tensor)]
    constants = [None if isinstance(leaf, torch.Tensor) else leaf for leaf in leaves]

    class Sample(torch.nn.Module):
        def forward(self, *tensors):
            values = list(constants)
            for position, tensor in zip(positions, tensors):
                values[position] = tensor
            first, args, kwargs = pytree.tree_unflatten(values, spec)
            return op.op(first, *args, **kwargs)

    tensors = tuple(leaves[i].detach().clone().contiguous() for i in positions)
    record = {"summary": sample.summary() if hasattr(sample, "summary") else ""}
    if not tensors:
        record["status"] = "not_applicable"
        record["reason"] = "the sample has no tensor input"
        return record
    module = Sample().eval()
    try:
        with torch.no_grad():
            expected = module(*[t.clone() for t in tensors])
    except Exception as error:  # the op refuses its own sample in eager mode
        record["status"] = "not_applicable"
        record["reason"] = "eager: " + (str(error).splitlines() or [type(error).__name__])[0][:300]
        return record
    outputs, _ = pytree.tree_flatten(expected)
    kinds = []
    for output in outputs:
        if isinstance(output, torch.Tensor):
            if output.is_complex() or output.layout != torch.strided or output.dtype in (torch.uint16, torch.uint32, torch.uint64):
                kinds.append("unsupported")
            else:
                kinds.append("tensor")
        elif isinstance(output, bool) or not isinstance(output, int):
            kinds.append("unsupported")
        else:
            kinds.append("int")
    if not outputs or "unsupported" in kinds:
        record["status"] = "not_applicable"
        record["reason"] = "outputs that are not real dense tensors or ints"
        return record
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            program = torch.export.export(module, tensors)
    except Exception as error:
        record["status"] = "export_refused"
        record["reason"] = type(error).__name__ + ": " + (str(error).splitlines() or [""])[0][:300]
        return record
    os.makedirs(folder, exist_ok=True)
    torch.export.save(program, os.path.join(folder, "training.pt2"))
    record["training_targets"] = targets_of(program)
    random = is_random(module, tensors, torch)
    exact = [None] * len(outputs) if random else exact_outputs(module, tensors, outputs, torch)
    atol, rtol = tolerance
    programs = {"training": program}
    # Already Core ATen and functional: run_decompositions would give the same program.
    if not set(record["training_targets"]) <= CORE_ATEN:
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                core = program.run_decompositions()
            core_targets = targets_of(core)
            if core_targets != record["training_targets"]:
                torch.export.save(core, os.path.join(folder, "core.pt2"))
                record["core_targets"] = core_targets
                programs["core"] = core
        except Exception as error:
            record["core_refused"] = type(error).__name__ + ": " + (str(error).splitlines() or [""])[0][:300]
    if not random:
        for form, exported in programs.items():
            problem = program_diverges(exported, tensors, outputs, exact, atol, rtol, torch)
            if problem:
                record[form + "_diverges"] = problem
    for i, output in enumerate(outputs):
        save_output(folder, f"expected_{i}.npy", output, torch)
        if exact[i] is not None:
            save_output(folder, f"exact_{i}.npy", exact[i], torch)
    record["outputs"] = len(outputs)
    record["status"] = "exported"
    return record


def export_op(arguments):
    """Exports the samples of one OpInfo entry into out/<op>; returns (key, seconds, error)."""
    key, out, samples_per_op = arguments
    import torch
    from torch.testing._internal.common_methods_invocations import op_db

    torch.set_num_threads(1)
    if not CORE_ATEN:
        CORE_ATEN.update(core_aten_ops())
        CORE_ATEN.update({"aten.sym_size.int", "_operator.getitem"})
    op = next(op for op in op_db if op_key(op) == key)
    final = os.path.join(out, folder_name(key))
    partial = final + ".partial"
    shutil.rmtree(partial, ignore_errors=True)
    os.makedirs(partial)
    start = time.time()
    meta = {"op": op.name, "variant": op.variant_test_name, "key": key, "samples": []}
    dtype = choose_dtype(op, torch)
    if dtype is None:
        meta["status"] = "no CPU dtype among float32, int64, bool"
    else:
        meta["dtype"] = str(dtype).replace("torch.", "")
        meta["atol"], meta["rtol"] = tolerances(op, torch)
        torch.manual_seed(0)
        try:
            samples = list(op.sample_inputs("cpu", dtype, requires_grad=False))
        except Exception as error:
            samples = []
            meta["status"] = "sample_inputs failed: " + str(error).splitlines()[0][:200]
        if len(samples) > samples_per_op:
            samples = [samples[(i * len(samples)) // samples_per_op] for i in range(samples_per_op)]
        meta["sample_count"] = len(samples)
        for k, sample in enumerate(samples):
            try:
                record = export_sample(op, sample, os.path.join(partial, str(k)), (meta["atol"], meta["rtol"]), torch)
            except Exception:
                record = {"status": "not_applicable", "reason": "generator: " + traceback.format_exc().splitlines()[-1][:300]}
            record["index"] = k
            meta["samples"].append(record)
    meta["seconds"] = round(time.time() - start, 2)
    with open(os.path.join(partial, "meta.json"), "w") as f:
        json.dump(meta, f, indent=1)
    shutil.rmtree(final, ignore_errors=True)
    os.rename(partial, final)
    return key, meta["seconds"]


def core_aten_ops():
    """The overloads of the Core ATen opset (tagged core) of this torch, "aten.<op>.<overload>"."""
    import torch

    ops = []
    for name in dir(torch.ops.aten):
        try:
            packet = getattr(torch.ops.aten, name)
        except Exception:
            continue
        if not hasattr(packet, "overloads"):
            continue
        for overload in packet.overloads():
            if torch.Tag.core in getattr(packet, overload).tags:
                ops.append(f"aten.{name}.{overload}")
    return sorted(ops)


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("out")
    parser.add_argument("--samples-per-op", type=int, default=8)
    parser.add_argument("--jobs", type=int, default=os.cpu_count() or 1)
    parser.add_argument("--only", nargs="*", help="OpInfo keys to (re)generate")
    args = parser.parse_args()
    warnings.filterwarnings("ignore")
    from torch.testing._internal.common_methods_invocations import op_db

    os.makedirs(args.out, exist_ok=True)
    keys = sorted({op_key(op) for op in op_db})
    if args.only:
        keys = [key for key in keys if key in args.only]
    todo = [key for key in keys if args.only or not os.path.exists(os.path.join(args.out, folder_name(key), "meta.json"))]
    print(f"make_pt2_opinfo_samples: {len(todo)} of {len(keys)} OpInfo entries to export into {args.out}", flush=True)
    start = time.time()
    work = [(key, args.out, args.samples_per_op) for key in todo]
    with multiprocessing.get_context("spawn").Pool(args.jobs, maxtasksperchild=20) as pool:
        for done, (key, seconds) in enumerate(pool.imap_unordered(export_op, work), 1):
            if done % 25 == 0 or done == len(work):
                print(f"  {done}/{len(work)} ({time.time() - start:.0f} s; last {key} {seconds} s)", flush=True)
    with open(os.path.join(args.out, "index.json"), "w") as f:
        json.dump({"ops": [folder_name(key) for key in keys]}, f, indent=1)
    with open(os.path.join(args.out, "core_aten_ops.json"), "w") as f:
        json.dump(core_aten_ops(), f, indent=1)
    print(f"make_pt2_opinfo_samples: done in {time.time() - start:.0f} s", flush=True)


if __name__ == "__main__":
    sys.exit(main())
