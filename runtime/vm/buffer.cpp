// Buffer: numbering and description.
#include "runtime/vm/buffer.h"

#include <atomic>

#include "kiln/error.h"

namespace kiln::vm {

namespace {
std::atomic<uint64_t> next_buffer_id{1};
}

Buffer::Buffer(size_t nbytes, Stream& home)
    : id_(next_buffer_id.fetch_add(1, std::memory_order_relaxed)), nbytes_(nbytes), home_(&home) {}

Buffer::Buffer(std::shared_ptr<Storage> storage, Stream& home)
    : id_(next_buffer_id.fetch_add(1, std::memory_order_relaxed)),
      nbytes_(storage != nullptr ? storage->nbytes() : 0),
      home_(&home),
      storage_(std::move(storage)) {
  if (storage_ == nullptr) fail("cannot wrap a null storage in a VM buffer");
}

std::string Buffer::describe() const {
  return detail::concat("buffer #", id_, " (", nbytes_, " bytes)");
}

}  // namespace kiln::vm
