// SmallVector: a vector of trivially copyable items that keeps its first N items inside the
// object and moves to the heap only past them. An instruction has a few accesses, a few
// out-edges and a few call slots; keeping them inline saves three allocations per instruction
// (malloc and free were a third of the VM's cost per instruction). Items never move while
// the vector stays within its capacity, so an item can be linked into a list by address
// once reserve() made room for all of them.
#pragma once

#include <cstddef>
#include <cstdlib>
#include <cstring>
#include <new>
#include <type_traits>
#include <utility>

namespace kiln::vm {

template <typename T, size_t N>
class SmallVector {
  static_assert(std::is_trivially_copyable_v<T>, "SmallVector holds trivially copyable items");

 public:
  SmallVector() = default;
  SmallVector(const SmallVector&) = delete;
  SmallVector& operator=(const SmallVector&) = delete;
  ~SmallVector() {
    if (data_ != inline_items()) std::free(data_);
  }

  size_t size() const { return size_; }
  bool empty() const { return size_ == 0; }
  T* begin() { return data_; }
  T* end() { return data_ + size_; }
  const T* begin() const { return data_; }
  const T* end() const { return data_ + size_; }
  T& operator[](size_t i) { return data_[i]; }
  const T& operator[](size_t i) const { return data_[i]; }
  T& back() { return data_[size_ - 1]; }
  const T& back() const { return data_[size_ - 1]; }

  void reserve(size_t capacity) {
    if (capacity <= capacity_) return;
    T* grown = static_cast<T*>(std::malloc(capacity * sizeof(T)));
    if (grown == nullptr) throw std::bad_alloc();
    if (size_ > 0) std::memcpy(static_cast<void*>(grown), static_cast<const void*>(data_), size_ * sizeof(T));
    if (data_ != inline_items()) std::free(data_);
    data_ = grown;
    capacity_ = capacity;
  }
  void push_back(const T& item) {
    if (size_ == capacity_) reserve(2 * capacity_);
    data_[size_++] = item;
  }
  T& emplace_back() {
    if (size_ == capacity_) reserve(2 * capacity_);
    data_[size_] = T{};
    return data_[size_++];
  }

 private:
  T* inline_items() { return reinterpret_cast<T*>(inline_); }

  alignas(T) unsigned char inline_[N * sizeof(T)];
  T* data_ = inline_items();
  size_t size_ = 0;
  size_t capacity_ = N;
};

}  // namespace kiln::vm
