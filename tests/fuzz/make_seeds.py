#!/usr/bin/env python3
"""Writes the raw seed inputs of every fuzz target (tests/fuzz/fuzz_target.h) into a folder,
one subfolder per target, from the repository's samples and test data plus a few inputs made
here (each safetensors and npy dtype, byte orders, npy versions, a compile-cache entry).
Each target gets at most MAX_SEEDS files of the test data, small ones spread evenly over the
sorted list, so that a fresh corpus stays small; scripts/fuzz --minimize TARGET then keeps the
ones that add coverage in tests/fuzz/corpus/<target>/ (libFuzzer -merge=1).

    tests/fuzz/make_seeds.py OUT_DIR KILN_EXECUTABLE

KILN_EXECUTABLE converts the .kiln seeds to JSON (kiln dump --format json)."""
import io
import json
import pathlib
import shutil
import struct
import subprocess
import sys

import numpy as np

ROOT = pathlib.Path(__file__).resolve().parents[2]


def xxh64(data: bytes, seed: int = 0) -> int:
    """XXH64, as runtime/checksum.h computes it (the reference algorithm)."""
    p1, p2, p3, p4, p5 = (0x9E3779B185EBCA87, 0xC2B2AE3D27D4EB4F, 0x165667B19E3779F9, 0x85EBCA77C2B2AE63,
                          0x27D4EB2F165667C5)
    mask = (1 << 64) - 1

    def rotl(x, r):
        return ((x << r) | (x >> (64 - r))) & mask

    def round_(acc, lane):
        acc = (acc + lane * p2) & mask
        return (rotl(acc, 31) * p1) & mask

    def merge(acc, val):
        acc ^= round_(0, val)
        return (acc * p1 + p4) & mask

    n = len(data)
    i = 0
    if n >= 32:
        v = [(seed + p1 + p2) & mask, (seed + p2) & mask, seed & mask, (seed - p1) & mask]
        while i + 32 <= n:
            for k in range(4):
                v[k] = round_(v[k], struct.unpack_from("<Q", data, i + 8 * k)[0])
            i += 32
        h = (rotl(v[0], 1) + rotl(v[1], 7) + rotl(v[2], 12) + rotl(v[3], 18)) & mask
        for k in range(4):
            h = merge(h, v[k])
    else:
        h = (seed + p5) & mask
    h = (h + n) & mask
    while i + 8 <= n:
        h ^= round_(0, struct.unpack_from("<Q", data, i)[0])
        h = (rotl(h, 27) * p1 + p4) & mask
        i += 8
    if i + 4 <= n:
        h ^= (struct.unpack_from("<I", data, i)[0] * p1) & mask
        h = (rotl(h, 23) * p2 + p3) & mask
        i += 4
    while i < n:
        h ^= (data[i] * p5) & mask
        h = (rotl(h, 11) * p1) & mask
        i += 1
    h ^= h >> 33
    h = (h * p2) & mask
    h ^= h >> 29
    h = (h * p3) & mask
    h ^= h >> 32
    return h


MAX_SEEDS = 24


def spread(paths, count=MAX_SEEDS, max_bytes=3000):
    """At most `count` of the files of `paths` under `max_bytes`, evenly spread over the list."""
    small = [path for path in paths if path.stat().st_size <= max_bytes]
    if len(small) <= count:
        return small
    return [small[i * len(small) // count] for i in range(count)]


def safetensors_bytes(tensors, metadata=None):
    header, blobs, offset = {}, [], 0
    if metadata:
        header["__metadata__"] = metadata
    for name, (dtype, shape, raw) in tensors.items():
        header[name] = {"dtype": dtype, "shape": shape, "data_offsets": [offset, offset + len(raw)]}
        blobs.append(raw)
        offset += len(raw)
    text = json.dumps(header).encode()
    text += b" " * (-len(text) % 8)
    return struct.pack("<Q", len(text)) + text + b"".join(blobs)


def npy_bytes(array, version=None):
    out = io.BytesIO()
    if version is None:
        np.save(out, array)
    else:
        np.lib.format.write_array(out, array, version=version)
    return out.getvalue()


def main():
    out, kiln = pathlib.Path(sys.argv[1]), sys.argv[2]
    shutil.rmtree(out, ignore_errors=True)
    folders = {name: out / name for name in
               ["text_parser", "json_reader", "safetensors_reader", "npy_reader", "onnx_importer", "cache_entry",
                "run_graph", "expression_parser"]}
    for folder in folders.values():
        folder.mkdir(parents=True)

    kiln_files = sorted(ROOT.glob("samples/models/*.kiln")) + spread(sorted(ROOT.glob("tests/**/*.kiln")))
    for i, path in enumerate(kiln_files):
        for target in ("text_parser", "run_graph"):
            shutil.copy(path, folders[target] / f"{i:03d}_{path.name}")
        dumped = subprocess.run([kiln, "dump", str(path), "--format", "json"], capture_output=True)
        if dumped.returncode == 0:
            (folders["json_reader"] / f"{i:03d}_{path.stem}.json").write_bytes(dumped.stdout)
    for path in sorted(ROOT.glob("tests/ir/golden/*.json")):
        shutil.copy(path, folders["json_reader"] / path.name)

    rng = np.random.default_rng(0)
    for path in [ROOT / "samples/models/inplace.safetensors", ROOT / "samples/models/cnn.safetensors"]:
        shutil.copy(path, folders["safetensors_reader"] / path.name)
    every_dtype = {
        "f32": ("F32", [2, 3], rng.standard_normal((2, 3)).astype("<f4").tobytes()),
        "f16": ("F16", [3], np.array([1, -2, 0.5], "<f2").tobytes()),
        "bf16": ("BF16", [2], b"\x80\x3f\x00\xc0"),
        "f64": ("F64", [1], np.array([3.5], "<f8").tobytes()),
        "i64": ("I64", [2, 1], np.array([[7], [-1]], "<i8").tobytes()),
        "i32": ("I32", [], np.array(5, "<i4").tobytes()),
        "i8": ("I8", [4], np.array([1, -1, 2, -2], "i1").tobytes()),
        "u8": ("U8", [0], b""),
        "bool": ("BOOL", [3], b"\x01\x00\x01"),
    }
    (folders["safetensors_reader"] / "every_dtype.safetensors").write_bytes(
        safetensors_bytes(every_dtype, {"format": "pt", "source": "kiln"}))

    for path in sorted(ROOT.glob("samples/models/*_data/inputs/*.npy")):
        shutil.copy(path, folders["npy_reader"] / f"{path.parent.parent.name}_{path.name}")
    arrays = {"f4": rng.standard_normal((2, 3)).astype("<f4"), "f2": np.array([1.5, -2], "<f2"),
              "f8": np.array([[1.0]], "<f8"), "i8": np.arange(4, dtype="<i8"), "i4": np.array(3, "<i4"),
              "i1": np.array([-1, 2], "i1"), "u1": np.array([250], "u1"), "b1": np.array([True, False]),
              "big_f4": np.arange(3, dtype=">f4"), "empty": np.zeros((0, 2), "<f4")}
    for name, array in arrays.items():
        (folders["npy_reader"] / f"{name}.npy").write_bytes(npy_bytes(array))
    (folders["npy_reader"] / "version2.npy").write_bytes(npy_bytes(arrays["f4"], (2, 0)))
    (folders["npy_reader"] / "version3.npy").write_bytes(npy_bytes(arrays["i8"], (3, 0)))
    (folders["npy_reader"] / "fortran.npy").write_bytes(npy_bytes(np.asfortranarray(arrays["f4"])))

    onnx_files = spread(sorted(ROOT.glob("tests/data/onnx/**/*.onnx")), 2 * MAX_SEEDS)
    for i, path in enumerate(onnx_files):
        shutil.copy(path, folders["onnx_importer"] / f"{i:03d}_{path.name}")

    module = b"\x7fELF kiln artifact bytes"
    manifest = b'{"abi": 1, "kernels": 2}'
    files = [{"path": "module.so", "bytes": len(module), "xxh64": f"{xxh64(module):016x}"}]
    entry = {"format": "kiln-cache-entry", "version": 1, "checksum": "xxh64", "files": files}
    (folders["cache_entry"] / "entry").write_bytes(json.dumps(entry).encode() + b"\0" + module)
    entry_with_manifest = dict(entry, files=files + [
        {"path": "manifest.json", "bytes": len(manifest), "xxh64": f"{xxh64(manifest):016x}"}])
    (folders["cache_entry"] / "entry_missing_file").write_bytes(json.dumps(entry_with_manifest).encode() + b"\0" + module)
    (folders["cache_entry"] / "entry_bad_checksum").write_bytes(json.dumps(entry).encode() + b"\0" + module[:-1] + b"!")

    # kiln kernel --expr expressions over x=f32[s0, 8], y=f32[8], i=i64[s0, 8], m=bool[8]
    # (tests/fuzz/targets/expression_parser.cpp): each form of the language, and a few errors.
    expressions = ["gelu(x * y + 1) * sigmoid(x)", "softmax(x, -1)", "sum(x * x, 1)", "mean(x, [0, 1], keepdim=True) - x",
                   "-x / (y - 2.5e-1)", "where(m, x, 0.0)", "cast(i, f32) + x", "argmax(x, 1)",
                   "gelu(x, approximate='tanh')", "amax(x, [1]) + sum(i, dim=[1])", "div(i, 3, rounding_mode='floor')",
                   "relu(x", "x + q", "gelo(x)", "x + y[0]"]
    for n, text in enumerate(expressions):
        (folders["expression_parser"] / f"{n:03d}.txt").write_text(text)


if __name__ == "__main__":
    main()
