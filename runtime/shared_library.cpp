// SharedLibrary: dlopen / dlsym / dlclose behind an owning handle.
#include "runtime/shared_library.h"

#include <dlfcn.h>

#include <utility>

#include "kiln/error.h"

namespace kiln {

namespace {
// dlerror()'s text (and clears it); a fallback when the loader left none.
std::string loader_error() {
  const char* text = dlerror();
  return text != nullptr ? std::string(text) : std::string("no reason given by the dynamic loader");
}
}  // namespace

SharedLibrary SharedLibrary::open(const std::filesystem::path& path) {
  dlerror();
  void* handle = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL | RTLD_NODELETE);
  if (handle == nullptr) fail("cannot load shared library ", path.string(), ": ", loader_error());
  return SharedLibrary(handle, path);
}

SharedLibrary::~SharedLibrary() { close(); }

SharedLibrary::SharedLibrary(SharedLibrary&& other) noexcept
    : handle_(std::exchange(other.handle_, nullptr)), path_(std::move(other.path_)) {}

SharedLibrary& SharedLibrary::operator=(SharedLibrary&& other) noexcept {
  if (this != &other) {
    close();
    handle_ = std::exchange(other.handle_, nullptr);
    path_ = std::move(other.path_);
  }
  return *this;
}

void SharedLibrary::close() noexcept {
  if (handle_ != nullptr) dlclose(handle_);
  handle_ = nullptr;
}

void* SharedLibrary::find_symbol(const std::string& name) const {
  KILN_CHECK(handle_ != nullptr, "symbol lookup '", name, "' on a closed shared library");
  dlerror();
  void* address = dlsym(handle_, name.c_str());
  if (address == nullptr) dlerror();  // clear, so the next caller starts fresh
  return address;
}

void* SharedLibrary::symbol(const std::string& name) const {
  KILN_CHECK(handle_ != nullptr, "symbol lookup '", name, "' on a closed shared library");
  dlerror();
  void* address = dlsym(handle_, name.c_str());
  if (address == nullptr)
    fail("shared library ", path_.string(), " does not export symbol '", name, "': ", loader_error());
  return address;
}

}  // namespace kiln
