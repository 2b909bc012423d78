// SharedLibrary: an owned handle to a dlopen'ed shared object (RTLD_NOW | RTLD_LOCAL |
// RTLD_NODELETE), closed by the destructor. NODELETE keeps the code (and the OpenMP runtime
// it pulls in) mapped after the close: OpenMP's idle worker threads outlive any one module,
// and unmapping libgomp under them crashes the process. Every failure is a kiln::Error naming the file, the symbol and dlerror()'s
// text. Used to load the module.so of compiled artifacts (runtime/cpu/cpu_artifact.h).
//
// Note: the dynamic loader reuses an already loaded object when the same path is opened again,
// even if the file was replaced in between; compiled artifacts live at content-addressed paths,
// so a path always names the same code.
#pragma once

#include <filesystem>
#include <string>

namespace kiln {

class SharedLibrary {
 public:
  SharedLibrary() = default;  // holds nothing
  // Loads `path` with every symbol resolved now; throws kiln::Error naming the path and the
  // loader's reason (missing file, not an ELF object, an undefined symbol, ...).
  static SharedLibrary open(const std::filesystem::path& path);

  ~SharedLibrary();
  SharedLibrary(SharedLibrary&& other) noexcept;
  SharedLibrary& operator=(SharedLibrary&& other) noexcept;
  SharedLibrary(const SharedLibrary&) = delete;
  SharedLibrary& operator=(const SharedLibrary&) = delete;

  bool is_open() const { return handle_ != nullptr; }
  const std::filesystem::path& path() const { return path_; }

  // The address of exported symbol `name`; throws kiln::Error naming the library and the
  // symbol when it is absent.
  void* symbol(const std::string& name) const;
  // The address of `name`, or nullptr when the library does not export it.
  void* find_symbol(const std::string& name) const;

  // `symbol` cast to a function pointer type, e.g. function<int32_t (*)(void)>("kiln_abi_version").
  template <typename FunctionPointer>
  FunctionPointer function(const std::string& name) const {
    return reinterpret_cast<FunctionPointer>(symbol(name));
  }

 private:
  SharedLibrary(void* handle, std::filesystem::path path) : handle_(handle), path_(std::move(path)) {}
  void close() noexcept;

  void* handle_ = nullptr;
  std::filesystem::path path_;
};

}  // namespace kiln
