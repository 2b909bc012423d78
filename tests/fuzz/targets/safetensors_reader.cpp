// Fuzz target: safetensors, in memory (parse_safetensors) and as a memory-mapped file
// (read_safetensors); both must agree, and what reads must write and read back equal.
#include <cstring>
#include <filesystem>
#include <optional>

#include "runtime/atomic_file.h"
#include "kiln/error.h"
#include "kiln/safetensors.h"
#include "tests/fuzz/fuzz_target.h"
#include "tests/fuzz/targets/fuzz_targets.h"
#include "tests/fuzz/targets/scratch_directory.h"

namespace kiln::fuzz {

namespace {

bool same_tensors(const std::map<std::string, Tensor>& a, const std::map<std::string, Tensor>& b) {
  if (a.size() != b.size()) return false;
  for (auto left = a.begin(), right = b.begin(); left != a.end(); ++left, ++right) {
    if (left->first != right->first || left->second.dtype() != right->second.dtype() ||
        left->second.sizes() != right->second.sizes())
      return false;
    Tensor x = left->second.contiguous(), y = right->second.contiguous();
    if (x.nbytes() != y.nbytes() || std::memcmp(x.data_ptr(), y.data_ptr(), x.nbytes()) != 0) return false;
  }
  return true;
}

}  // namespace

void fuzz_safetensors_reader(std::string_view input) {
  std::filesystem::path path = fresh_scratch_directory("safetensors") / "fuzz.safetensors";
  write_file_atomically(path.string(), input);
  std::optional<std::map<std::string, Tensor>> mapped;
  std::string mapped_error;
  try {
    mapped = read_safetensors(path.string());
  } catch (const Error& error) {
    mapped_error = error.what();
  }
  SafetensorsContents contents;
  try {
    contents = parse_safetensors(input, "fuzz.safetensors");
  } catch (const Error&) {
    if (mapped) throw FuzzPropertyFailure("read_safetensors accepts what parse_safetensors refuses");
    throw;
  }
  if (!mapped) throw FuzzPropertyFailure("parse_safetensors accepts what read_safetensors refuses: " + mapped_error);
  if (!same_tensors(*mapped, contents.tensors)) throw FuzzPropertyFailure("read_safetensors and parse_safetensors differ");
  SafetensorsContents again = parse_safetensors(serialize_safetensors(contents.tensors, contents.metadata), "written");
  if (!same_tensors(again.tensors, contents.tensors) || again.metadata != contents.metadata)
    throw FuzzPropertyFailure("written and read back, the tensors differ");
}

}  // namespace kiln::fuzz
