// Tensor: a strided view (sizes, strides, element offset, dtype) over a shared, ref-counted
// Storage. Views (permute, slice, expand, ...) share storage; contiguous() and clone() copy.
// This is the runtime's tensor, usable alone by an application; it does no autograd and no
// graph recording.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "kiln/device.h"
#include "kiln/dtype.h"

namespace kiln {

using Sizes = std::vector<int64_t>;

// A block of memory on a device. Owns it through `deleter` (which may release an mmap or
// a reference to a larger buffer).
class Storage {
 public:
  Storage(void* data, size_t nbytes, Device device, std::function<void(void*)> deleter);
  ~Storage();
  Storage(const Storage&) = delete;
  Storage& operator=(const Storage&) = delete;

  // Allocates `nbytes` of 64-byte aligned CPU memory.
  static std::shared_ptr<Storage> allocate_cpu(size_t nbytes);

  void* data() const { return data_; }
  size_t nbytes() const { return nbytes_; }
  Device device() const { return device_; }

 private:
  void* data_;
  size_t nbytes_;
  Device device_;
  std::function<void(void*)> deleter_;
};

int64_t numel_of(const Sizes& sizes);
// The element count when no size is negative and the product of the sizes that are not 0 (so
// every contiguous stride too) fits int64; std::nullopt otherwise.
std::optional<int64_t> checked_numel(const Sizes& sizes);
// The bytes of a contiguous tensor of `sizes` and `dtype` when checked_numel holds and the
// count fits size_t; std::nullopt otherwise.
std::optional<size_t> checked_nbytes(const Sizes& sizes, DType dtype);
std::string sizes_to_string(const Sizes& sizes);  // "[2, 3]"
// Wraps a possibly negative dimension into [0, rank); throws kiln::Error otherwise.
// `rank` 0 accepts dim 0 and -1 (as PyTorch does for scalars).
int64_t wrap_dim(int64_t dim, int64_t rank);

class Tensor {
 public:
  Tensor() = default;  // undefined tensor
  Tensor(std::shared_ptr<Storage> storage, Sizes sizes, Sizes strides, int64_t storage_offset,
         DType dtype);

  static Tensor empty(const Sizes& sizes, DType dtype, Device device = Device::cpu());
  static Tensor zeros(const Sizes& sizes, DType dtype);
  // Fills every element with `value` converted to dtype.
  static Tensor full(const Sizes& sizes, double value, DType dtype);
  // Copies `values` (converted to dtype) into a new contiguous tensor of `sizes`.
  static Tensor from_doubles(const Sizes& sizes, std::span<const double> values, DType dtype);
  template <typename T>
  static Tensor from_vector(const Sizes& sizes, const std::vector<T>& values, DType dtype) {
    std::vector<double> converted(values.begin(), values.end());
    return from_doubles(sizes, converted, dtype);
  }
  // Scalar (0-d) tensor.
  static Tensor scalar(double value, DType dtype) { return full({}, value, dtype); }

  bool defined() const { return storage_ != nullptr; }
  DType dtype() const { return dtype_; }
  Device device() const;
  const Sizes& sizes() const { return sizes_; }
  const Sizes& strides() const { return strides_; }
  int64_t size(int64_t dim) const;
  int64_t stride(int64_t dim) const;
  int64_t dim() const { return int64_t(sizes_.size()); }
  int64_t numel() const { return numel_of(sizes_); }
  size_t element_size() const { return dtype_size(dtype_); }
  size_t nbytes() const { return size_t(numel()) * element_size(); }
  int64_t storage_offset() const { return offset_; }
  const std::shared_ptr<Storage>& storage() const { return storage_; }
  bool is_contiguous() const;
  bool shares_storage_with(const Tensor& other) const { return storage_ == other.storage_; }

  // Address of the element at index (0, ..., 0).
  void* data_ptr() const;
  template <typename T>
  T* data() const { return static_cast<T*>(data_ptr()); }

  // Element access by multi-index or by row-major linear index (slow; for the interpreter,
  // tests and printing). Values convert through double / int64 by the usual C++ rules;
  // f16/bf16 round to nearest even, bool is value != 0.
  double item_double(std::span<const int64_t> index) const;
  int64_t item_int(std::span<const int64_t> index) const;
  double flat_double(int64_t linear_index) const;
  int64_t flat_int(int64_t linear_index) const;
  void set_double(std::span<const int64_t> index, double value) const;
  void set_int(std::span<const int64_t> index, int64_t value) const;
  // Value of a one-element tensor.
  double item() const;

  // Views: share storage.
  Tensor as_strided(const Sizes& sizes, const Sizes& strides, int64_t storage_offset) const;
  Tensor view(Sizes sizes) const;     // one -1 allowed; throws if strides make it impossible
  Tensor reshape(Sizes sizes) const;  // a view when possible, otherwise a copy
  Tensor permute(const std::vector<int64_t>& dims) const;
  Tensor transpose(int64_t dim0, int64_t dim1) const;
  Tensor slice(int64_t dim, int64_t start, int64_t end, int64_t step = 1) const;  // clamps like Python
  Tensor select(int64_t dim, int64_t index) const;  // negative index counts from the end
  Tensor expand(const Sizes& sizes) const;           // -1 keeps a size; new leading dims allowed
  Tensor unsqueeze(int64_t dim) const;
  Tensor squeeze(int64_t dim) const;  // no-op when that dim is not 1

  // Copies.
  Tensor contiguous() const;  // itself when already contiguous
  Tensor clone() const;       // always a fresh contiguous copy
  Tensor to(DType dtype) const;  // converted copy (itself when same dtype)
  // Copies src (same sizes; any strides and dtype) into this tensor's elements.
  void copy_from(const Tensor& src) const;

  // "tensor([[1., 2.], [3., 4.]], dtype=f32)": at most `max_elements` values then "...".
  std::string to_string(int64_t max_elements = 16) const;

 private:
  std::shared_ptr<Storage> storage_;
  Sizes sizes_;
  Sizes strides_;
  int64_t offset_ = 0;
  DType dtype_ = DType::f32;
};

// Generic element conversions used by the interpreter and by file readers.
double load_double(DType dtype, const void* address);
int64_t load_int(DType dtype, const void* address);
void store_double(DType dtype, void* address, double value);
void store_int(DType dtype, void* address, int64_t value);

// Calls fn(index) for every multi-index of `sizes` in row-major order (once for a 0-d shape,
// never when any size is 0).
void for_each_index(const Sizes& sizes, const std::function<void(std::span<const int64_t>)>& fn);

}  // namespace kiln
