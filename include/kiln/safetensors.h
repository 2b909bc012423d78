// Hugging Face's safetensors format, exactly: an 8-byte little-endian header length N, N
// bytes of JSON header
//   {"__metadata__": {"key": "value", ...},
//    "name": {"dtype": "F32", "shape": [2, 3], "data_offsets": [begin, end]}, ...}
// then the raw little-endian, row-major data; offsets count from the first byte after the
// header. Dtypes Kiln reads and writes: F32 F16 BF16 F64 I64 I32 I8 U8 BOOL.
//
// Reading memory-maps the file: the tensors are views into one private mapping (copy-on-write:
// the file itself is never modified) that lives as long as any of them does. A tensor whose
// data is misaligned for its element type (only a malformed file does that) is copied instead.
// Writing lays tensors out by decreasing element size, then by name (as the safetensors
// library does, so every tensor is aligned to its element size), pads the header with spaces
// to a multiple of 8 bytes, and replaces the file atomically (temp file + rename).
//
// Every malformed input is a kiln::Error naming the file and, where one is at fault, the
// tensor: truncated file, header length beyond the file, bad JSON, unknown dtype, offsets
// outside the data or not matching shape * dtype size, overlapping tensors.
#pragma once

#include <map>
#include <string>
#include <string_view>

#include "kiln/tensor.h"

namespace kiln {

struct SafetensorsContents {
  std::map<std::string, Tensor> tensors;
  std::map<std::string, std::string> metadata;  // the "__metadata__" entry
};

// Tensors of a safetensors file, memory-mapped (see above).
std::map<std::string, Tensor> read_safetensors(const std::string& path);
// Tensors and metadata.
SafetensorsContents load_safetensors(const std::string& path);

// Writes CPU tensors (any strides) and string metadata to `path` atomically. A tensor may
// not be named "__metadata__".
void write_safetensors(const std::string& path, const std::map<std::string, Tensor>& tensors,
                       const std::map<std::string, std::string>& metadata = {});

// In-memory variants. parse_safetensors copies the data into fresh tensors; `name` stands for
// the file in error messages.
SafetensorsContents parse_safetensors(std::string_view bytes, const std::string& name = "<safetensors bytes>");
std::string serialize_safetensors(const std::map<std::string, Tensor>& tensors,
                                  const std::map<std::string, std::string>& metadata = {});

}  // namespace kiln
