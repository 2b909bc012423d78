// Buffer: the VM's object for one block of tensor memory (OneFlow's "EagerBlobObject"). It
// knows its size and its home stream (whose caching allocator gives it memory), holds the
// memory once allocated (a kiln::Storage, so a kernel can view it as a Tensor), owns the
// dependence object that orders every instruction touching it, and remembers whether a failed
// instruction left its contents invalid.
//
// Who touches what:
//  - any thread: id, nbytes, home stream;
//  - the scheduler thread: dependence, storage (set when an instruction allocates it in
//    prepare, taken by a release instruction);
//  - instructions on workers: failure, ordered by the dependence DAG exactly like the contents.
#pragma once

#include <cstddef>
#include <cstdint>
#include <exception>
#include <initializer_list>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "kiln/tensor.h"
#include "runtime/vm/dependence.h"

namespace kiln::vm {

class Stream;

class Buffer {
 public:
  // A buffer with no memory yet: an allocate instruction, or the first instruction that
  // writes it, allocates `nbytes` from `home`'s allocator.
  Buffer(size_t nbytes, Stream& home);
  // A buffer over memory the caller already owns, e.g. a Tensor's storage.
  Buffer(std::shared_ptr<Storage> storage, Stream& home);
  Buffer(const Buffer&) = delete;
  Buffer& operator=(const Buffer&) = delete;

  uint64_t id() const { return id_; }
  size_t nbytes() const { return nbytes_; }
  Stream& home_stream() const { return *home_; }
  std::string describe() const;  // "buffer #3 (4096 bytes)"

  // Scheduler thread.
  Dependence& dependence() { return dependence_; }
  const std::shared_ptr<Storage>& storage() const { return storage_; }
  void set_storage(std::shared_ptr<Storage> storage) { storage_ = std::move(storage); }
  std::shared_ptr<Storage> take_storage() { return std::move(storage_); }

  // Instructions, on workers: the error of the failed instruction that last wrote it, or null.
  const std::exception_ptr& failure() const { return failure_; }
  void set_failure(std::exception_ptr failure) { failure_ = std::move(failure); }

 private:
  uint64_t id_;
  size_t nbytes_;
  Stream* home_;
  Dependence dependence_;
  std::shared_ptr<Storage> storage_;
  std::exception_ptr failure_;
};

using BufferPtr = std::shared_ptr<Buffer>;

// A borrowed list of buffers, built from a braced list, a vector or a span. Valid for the
// call it is passed to.
class BufferList {
 public:
  BufferList() = default;
  BufferList(std::initializer_list<BufferPtr> buffers) : buffers_(buffers.begin(), buffers.size()) {}
  BufferList(const std::vector<BufferPtr>& buffers) : buffers_(buffers) {}
  BufferList(std::span<const BufferPtr> buffers) : buffers_(buffers) {}
  size_t size() const { return buffers_.size(); }
  auto begin() const { return buffers_.begin(); }
  auto end() const { return buffers_.end(); }
  const BufferPtr& operator[](size_t i) const { return buffers_[i]; }

 private:
  std::span<const BufferPtr> buffers_;
};

}  // namespace kiln::vm
