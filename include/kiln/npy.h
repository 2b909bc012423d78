// NumPy's .npy file format: one array, a small Python-literal header, then raw data.
//
// Reading accepts format versions 1.0, 2.0 and 3.0, C order only, and the dtypes Kiln has a
// numpy equivalent for: '<f4' f32, '<f2' f16, '<f8' f64, '<i8' i64, '<i4' i32, '|i1' i8,
// '|u1' u8, '|b1' bool, in either byte order ('>f4' is swapped on read; '=' is native).
// Writing produces version 1.0 (2.0 only when the header does not fit 1.0's 16-bit length),
// little-endian, header padded so the data starts at a multiple of 64 bytes, as np.save does.
//
// bf16: numpy has no bfloat16 and ml_dtypes saves it as an opaque '<V2' that nothing can
// tell apart from other 2-byte records, so Kiln writes a bf16 tensor as f32 ('<f4'; the
// widening is exact) and reading never yields bf16. Convert back with Tensor::to(bf16).
//
// Every malformed input is a kiln::Error naming the file (or the name given for in-memory
// bytes) and what is wrong: bad magic, unsupported version, Fortran order, unsupported dtype,
// malformed header, truncated data.
#pragma once

#include <string>
#include <string_view>

#include "kiln/tensor.h"

namespace kiln {

// Reads a .npy file into a new contiguous CPU tensor.
Tensor read_npy(const std::string& path);

// Writes a CPU tensor (any strides) to `path` atomically (temp file + rename).
void write_npy(const std::string& path, const Tensor& tensor);

// In-memory variants: `name` stands for the file in error messages.
Tensor parse_npy(std::string_view bytes, const std::string& name = "<npy bytes>");
std::string serialize_npy(const Tensor& tensor);

}  // namespace kiln
