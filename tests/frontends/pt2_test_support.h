// Helpers of the .pt2 importer's tests: the committed programs of tests/data/pt2/ (written by
// scripts/make_pt2_test_programs.py: <name>.pt2 and <name>/expected_<i>.npy, after_<x>.npy with
// eager PyTorch's results), the comparison with them (floats within 1e-5 + 1e-5 * |expected|;
// ints and bools exactly), and rewriting an archive entry by entry (through libzip) to make the
// damaged files of the bad-input tests.
#pragma once

#include <gtest/gtest.h>

#include <zip.h>

#include <cmath>
#include <filesystem>
#include <functional>
#include <map>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include "kiln/npy.h"
#include "kiln/tensor.h"
#include "tests/support/test_paths.h"

namespace kiln::frontends::testing {

namespace fs = std::filesystem;

inline const fs::path kPt2Data = fs::path(KILN_SOURCE_DIR) / "tests" / "data" / "pt2";

inline std::string pt2_program(const std::string& name) { return (kPt2Data / (name + ".pt2")).string(); }

inline Tensor pt2_expected(const std::string& name, const std::string& file) {
  return read_npy((kPt2Data / name / (file + ".npy")).string());
}

// Fresh copies of inputs (the interpreter and compiled models write mutated inputs back).
inline std::map<std::string, Tensor> clones(const std::map<std::string, Tensor>& inputs) {
  std::map<std::string, Tensor> copies;
  for (const auto& [name, tensor] : inputs) copies[name] = tensor.clone();
  return copies;
}

inline size_t pt2_expected_count(const std::string& name) {
  size_t count = 0;
  while (fs::exists(kPt2Data / name / ("expected_" + std::to_string(count) + ".npy"))) ++count;
  return count;
}

// Empty when `actual` matches `expected` (a NaN matches a NaN); else the first difference.
inline std::string pt2_difference(const Tensor& expected, const Tensor& actual, double tolerance = 1e-5) {
  std::ostringstream out;
  if (expected.dtype() != actual.dtype()) {
    out << "dtype " << dtype_name(actual.dtype()) << ", expected " << dtype_name(expected.dtype());
    return out.str();
  }
  if (expected.sizes() != actual.sizes()) {
    out << "shape " << sizes_to_string(actual.sizes()) << ", expected " << sizes_to_string(expected.sizes());
    return out.str();
  }
  Tensor a = actual.contiguous(), b = expected.contiguous();
  for (int64_t i = 0; i < a.numel(); ++i) {
    double x = a.flat_double(i), y = b.flat_double(i);
    bool ok = is_floating(a.dtype()) ? (x == y || std::fabs(x - y) <= tolerance + tolerance * std::fabs(y) ||
                                       (std::isnan(x) && std::isnan(y)))
                                    : x == y;
    if (!ok) {
      out << "element " << i << " is " << x << ", expected " << y;
      return out.str();
    }
  }
  return "";
}

// Copies the zip `source` to `destination` entry by entry; `edit` may replace an entry's bytes
// or drop it (nullopt). Returns `destination`.
inline std::string rewrite_archive(const std::string& source, const fs::path& destination,
                                   const std::function<std::optional<std::string>(const std::string& name, std::string bytes)>& edit) {
  int error = 0;
  zip_t* in = zip_open(source.c_str(), ZIP_RDONLY, &error);
  EXPECT_NE(in, nullptr) << source;
  fs::remove(destination);
  zip_t* out = zip_open(destination.c_str(), ZIP_CREATE | ZIP_EXCL, &error);
  EXPECT_NE(out, nullptr) << destination;
  std::vector<std::string> keep;  // zip_source_buffer reads the bytes at zip_close
  keep.reserve(size_t(zip_get_num_entries(in, 0)));
  for (zip_int64_t i = 0; i < zip_get_num_entries(in, 0); ++i) {
    std::string name = zip_get_name(in, zip_uint64_t(i), 0);
    zip_stat_t stat;
    zip_stat_index(in, zip_uint64_t(i), 0, &stat);
    std::string bytes(size_t(stat.size), '\0');
    zip_file_t* file = zip_fopen_index(in, zip_uint64_t(i), 0);
    if (stat.size > 0) zip_fread(file, bytes.data(), stat.size);
    zip_fclose(file);
    std::optional<std::string> edited = edit(name, std::move(bytes));
    if (!edited) continue;
    keep.push_back(std::move(*edited));
    zip_source_t* data = zip_source_buffer(out, keep.back().data(), keep.back().size(), 0);
    zip_file_add(out, name.c_str(), data, ZIP_FL_OVERWRITE);
  }
  zip_close(out);
  zip_discard(in);
  return destination.string();
}

}  // namespace kiln::frontends::testing
