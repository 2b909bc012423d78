// The fuzz targets (tests/fuzz/fuzz_target.h), one file each in this folder:
//   text_parser        the IR text form (ir/parser.h): parse; if it reads, verify, print, parse
//                      the print again and print it identically, and round-trip it through JSON
//   json_reader        the IR JSON form (ir/json_format.h), with the same round trips
//   safetensors_reader parse_safetensors, and read_safetensors of the same bytes as a file (mmap)
//   npy_reader         parse_npy; what reads must write back and read back equal
//   onnx_importer      a .onnx file through frontends::load_model (ONNX's checker, shape inference)
//   cache_entry        a compile-cache entry (entry.json and one file) through CompileCache::lookup
//   run_graph          a small .kiln graph: load, random inputs, the interpreter, eager mode, and
//                      the CPU pipeline up to its generated C++ (built by no compiler: too slow)
//   expression_parser  a `kiln kernel --expr` expression: parse, verify, and the pipeline up to the
//                      standalone C++ header's text
// Graph inputs get their get_attr parameters from fuzz_weights.h.
#pragma once

#include <string_view>

namespace kiln::fuzz {

void fuzz_text_parser(std::string_view input);
void fuzz_json_reader(std::string_view input);
void fuzz_safetensors_reader(std::string_view input);
void fuzz_npy_reader(std::string_view input);
void fuzz_onnx_importer(std::string_view input);
void fuzz_cache_entry(std::string_view input);
void fuzz_run_graph(std::string_view input);
void fuzz_expression_parser(std::string_view input);

}  // namespace kiln::fuzz
