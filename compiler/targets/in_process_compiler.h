// The in-process C++ compiler of the cpu target: the plugin libkiln-clang.so (compiler/
// clang_plugin/kiln_clang_plugin.h: Clang's and LLD's libraries) loaded with dlopen on the first
// build of generated code in a process, so that `kiln run` on a cached model, or an app that
// loads compiled models, never maps LLVM.
//
// It replaces the system compiler's processes (driver, cc1plus, as, collect2, ld: ~60 ms of a
// cold compile before any kernel, bench/README.md "Cold compile latency") with calls in this
// process, and takes the text every module starts with (the prelude, the loop runner, the op
// layer: CppModule::fixed_begin..fixed_end) from a precompiled header kept in the compile cache,
// made once per cache for each set of flags.
//
// The plugin is found beside Kiln (an installed libkiln.so: LIBDIR/kiln/libkiln-clang.so), else
// where the build tree made it; $KILN_CLANG_PLUGIN names another. It is not used when $KILN_CXX
// (or $CXX, as before) names a compiler, which then builds every module; when Kiln was built
// without Clang's libraries; or when the plugin cannot be loaded here (LLVM's libraries or Clang's
// builtin headers missing, a plugin of another interface version): then the system compiler
// builds, and KILN_LOG=cache says why in one line.
#pragma once

#include <filesystem>
#include <optional>
#include <string>
#include <vector>

namespace kiln::compiler {

class InProcessCompiler {
 public:
  // Compiles `text` (diagnostics name it `source_name`, a line of `source_name` being a line of
  // `text` from `first_line` on: the body of a module after its precompiled header) with
  // `flags` and links it with `link_inputs` into `output` (the object is written beside it).
  // A source the compiler rejects throws kiln::InternalError (a bug in Kiln's code generator)
  // with the diagnostic and where `kept_source` and the log are kept (copied to a new
  // kiln-failed-build-XXXXXX folder of the temporary directory); a link or other failure
  // throws kiln::Error with the log's head.
  // With several `texts` (translation units of one module), each is compiled on a thread of its
  // own, and the objects are linked together.
  void build_shared(const std::vector<std::string>& texts, const std::filesystem::path& source_name,
                    const std::filesystem::path& kept_source, const std::vector<std::string>& flags,
                    const std::optional<std::filesystem::path>& pch, const std::vector<std::string>& link_inputs,
                    const std::filesystem::path& output) const;
  // Writes `header` (named `header_name`) as a precompiled header for builds with `flags`;
  // throws kiln::Error with the diagnostics when it cannot.
  void make_pch(const std::string& header, const std::string& header_name, const std::vector<std::string>& flags,
                const std::filesystem::path& pch) const;
  // Compiles `text` (named `source_name`) with `flags` into the object file `object`; throws
  // kiln::Error with the diagnostics when it cannot.
  void compile_object(const std::string& text, const std::string& source_name, const std::vector<std::string>& flags,
                      const std::filesystem::path& object) const;
  // The compiler's identity for cache keys: its version and the plugin file (path, size,
  // modification time), so that a plugin rebuilt or upgraded changes every key.
  const std::string& identity() const { return identity_; }
  // "the in-process compiler (clang 14.0.6, LLD 14.0.6)", for messages.
  const std::string& description() const { return description_; }

 private:
  friend const InProcessCompiler* in_process_compiler();
  using Build = int (*)(const void*);
  using MakePch = int (*)(const char*, const char*, size_t, const char* const*, int, const char*, char*, size_t);
  using Link = int (*)(const char* const*, int, const char*, const char* const*, int, char*, size_t);
  // Reports a build that failed with `status` and `log`: see build_shared.
  [[noreturn]] void report(int status, const std::string& log, const std::filesystem::path& kept_source,
                           const std::filesystem::path& output) const;
  void* handle_ = nullptr;
  Build build_ = nullptr;
  MakePch make_pch_ = nullptr;
  Link link_ = nullptr;
  std::string identity_, description_;
};

// The plugin, loaded on the first call (in a thread-safe way); nullptr when generated code is
// built by the system compiler (see above; the reason logged once on the `cache` channel).
const InProcessCompiler* in_process_compiler();

// Whether builds will use the in-process compiler, decided without loading it (for cache keys,
// which a cached model is looked up by before anything is built): no $KILN_CXX or $CXX, and a
// plugin file found. Where that plugin then cannot be loaded, the system compiler builds the
// entry stored under the key (logged on the `cache` channel).
bool in_process_compiler_chosen();
// What builds generated code, for cache keys: the plugin file's identity (its name and a checksum
// of its bytes, so that the same plugin anywhere finds the same entries) when
// in_process_compiler_chosen(), else the system compiler's (cxx_identity).
std::string generated_code_compiler();

// The compile cache key of the precompiled header of `fixed_text` built with `flags` by `compiler`
// (the entry also holds the object of the pool's code compiled from it: cpu_target.cpp).
std::string precompiled_header_key(const InProcessCompiler& compiler, const std::string& fixed_text,
                                   const std::vector<std::string>& flags);

}  // namespace kiln::compiler
