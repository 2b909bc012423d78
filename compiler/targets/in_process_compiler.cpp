// The in-process C++ compiler of the cpu target. See compiler/targets/in_process_compiler.h.
#include "compiler/targets/in_process_compiler.h"

#include <dlfcn.h>

#include <cstdlib>
#include <fstream>
#include <map>
#include <mutex>
#include <thread>

#include "compiler/clang_plugin/kiln_clang_plugin.h"
#include "compiler/targets/cpu_toolchain.h"
#include "kiln/error.h"
#include "runtime/checksum.h"
#include "runtime/log.h"

namespace kiln::compiler {

namespace {

namespace fs = std::filesystem;

// Where the plugin may be: $KILN_CLANG_PLUGIN alone when set; else beside the library or program
// this code is part of (an installed libkiln.so in LIBDIR, the plugin in LIBDIR/kiln; an installed
// bin/kiln, the plugin in ../LIBDIR/kiln), then where the build tree made it.
std::vector<fs::path> plugin_candidates() {
  if (const char* chosen = std::getenv("KILN_CLANG_PLUGIN"); chosen != nullptr && *chosen != '\0') return {chosen};
  std::vector<fs::path> candidates;
  Dl_info info;
  if (dladdr(reinterpret_cast<void*>(&in_process_compiler), &info) != 0 && info.dli_fname != nullptr) {
    std::error_code error;
    fs::path self = fs::canonical(info.dli_fname, error);
    if (!error) {
      candidates.push_back(self.parent_path() / "kiln" / "libkiln-clang.so");
#ifdef KILN_INSTALL_LIBDIR
      candidates.push_back(self.parent_path().parent_path() / KILN_INSTALL_LIBDIR / "kiln" / "libkiln-clang.so");
#endif
    }
  }
#ifdef KILN_CLANG_PLUGIN_BUILT
  candidates.push_back(KILN_CLANG_PLUGIN_BUILT);
#endif
  return candidates;
}

// The plugin as the compile cache keys it: its bytes, not its path or time, so that every build
// of the same plugin (a clean clone elsewhere, a relink of the same objects: each CI run) finds
// the modules its predecessors built. The plugin links Debian's Clang and LLVM libraries, named
// by their version in the identity beside this. Hashed once per process and file state.
std::string file_identity(const fs::path& file) {
  static std::mutex mutex;
  static std::map<std::string, std::string> hashed;  // path, size and time -> identity
  std::error_code error;
  uintmax_t size = fs::file_size(file, error);
  auto modified = fs::last_write_time(file, error).time_since_epoch().count();
  std::string state = file.string() + " " + std::to_string(size) + " " + std::to_string(modified);
  std::lock_guard<std::mutex> lock(mutex);
  auto found = hashed.find(state);
  if (found != hashed.end()) return found->second;
  std::string identity;
  try {
    identity = file.filename().string() + " xxh64 " + checksum_hex(checksum_file(file));
  } catch (const Error&) {
    identity = state;  // unreadable: a build that loads it fails and says so
  }
  return hashed.emplace(state, identity).first->second;
}

std::string read_head(const std::string& text, size_t max_lines) {
  size_t at = 0;
  for (size_t line = 0; line < max_lines && at != std::string::npos; ++line) {
    at = text.find('\n', at);
    if (at != std::string::npos) ++at;
  }
  return at == std::string::npos ? text : text.substr(0, at);
}

std::vector<const char*> c_strings(const std::vector<std::string>& strings) {
  std::vector<const char*> pointers;
  for (const std::string& s : strings) pointers.push_back(s.c_str());
  return pointers;
}

// The plugin file a build would load, found without loading it; std::nullopt with the reason
// when generated code is built by the system compiler.
std::optional<fs::path> plugin_file(std::string& why_not) {
  for (const char* variable : {"KILN_CXX", "CXX"}) {
    const char* value = std::getenv(variable);
    if (value != nullptr && *value != '\0') {
      why_not = std::string("$") + variable + " names a compiler (" + value + ")";
      return std::nullopt;
    }
  }
  std::string tried;
  for (const fs::path& candidate : plugin_candidates()) {
    std::error_code error;
    if (fs::is_regular_file(candidate, error)) return candidate;
    tried += (tried.empty() ? "" : ", ") + candidate.string();
  }
  why_not = tried.empty() ? "Kiln was built without Clang's libraries" : "no plugin was found (tried " + tried + ")";
  return std::nullopt;
}

}  // namespace

const InProcessCompiler* in_process_compiler() {
  static std::once_flag once;
  static std::optional<InProcessCompiler> compiler;
  std::call_once(once, [] {
    std::string why_not;
    std::optional<fs::path> file = plugin_file(why_not);
    if (file) {
      // RTLD_NODELETE: LLVM's static destructors must not run while another thread compiles.
      void* handle = dlopen(file->c_str(), RTLD_NOW | RTLD_LOCAL | RTLD_NODELETE);
      if (handle == nullptr) {
        const char* reason = dlerror();
        why_not = file->string() + " cannot be loaded (" + (reason != nullptr ? reason : "unknown reason") + ")";
      } else {
        auto abi = reinterpret_cast<int (*)()>(dlsym(handle, "kiln_clang_abi"));
        auto unavailable = reinterpret_cast<const char* (*)()>(dlsym(handle, "kiln_clang_unavailable"));
        auto identity = reinterpret_cast<const char* (*)()>(dlsym(handle, "kiln_clang_identity"));
        InProcessCompiler loaded;
        loaded.build_ = reinterpret_cast<InProcessCompiler::Build>(dlsym(handle, "kiln_clang_build"));
        loaded.make_pch_ = reinterpret_cast<InProcessCompiler::MakePch>(dlsym(handle, "kiln_clang_make_pch"));
        loaded.link_ = reinterpret_cast<InProcessCompiler::Link>(dlsym(handle, "kiln_clang_link"));
        const char* reason = nullptr;
        if (abi == nullptr || unavailable == nullptr || identity == nullptr || loaded.build_ == nullptr ||
            loaded.make_pch_ == nullptr || loaded.link_ == nullptr || abi() != KILN_CLANG_PLUGIN_ABI) {
          why_not = file->string() + " is of another interface version";
        } else if ((reason = unavailable()) != nullptr) {
          why_not = file->string() + " cannot build here: " + reason;
        } else {
          loaded.handle_ = handle;
          loaded.identity_ = std::string(identity()) + ", " + file_identity(*file);
          loaded.description_ = "the in-process compiler (" + std::string(identity()) + ")";
          compiler = std::move(loaded);
          log("cache", "generated code is built by " + compiler->description() + ", loaded from " + file->string());
          return;
        }
        dlclose(handle);
      }
    }
    log("cache", "generated code is built by the system compiler (" + cxx_command() + "), not in process: " + why_not);
  });
  return compiler ? &*compiler : nullptr;
}

void InProcessCompiler::build_shared(const std::vector<std::string>& texts, const fs::path& source_name,
                                     const fs::path& kept_source, const std::vector<std::string>& flags,
                                     const std::optional<fs::path>& pch, const std::vector<std::string>& link_inputs,
                                     const fs::path& output) const {
  const std::string name = source_name.string(), pch_path = pch ? pch->string() : "";
  const std::vector<const char*> flag_pointers = c_strings(flags), input_pointers = c_strings(link_inputs);
  const std::string output_path = output.string();
  // Unit i's object and log; one unit is compiled and linked in one call.
  const size_t units = texts.size();
  std::vector<std::string> objects(units), logs(units, std::string(64 * 1024, '\0'));
  std::vector<int> statuses(units, KILN_CLANG_FAILED);
  for (size_t i = 0; i < units; ++i)
    objects[i] = (output.parent_path() / ("module_" + std::to_string(i) + ".o")).string();
  auto compile = [&](size_t i) {
    KilnClangBuild build = {name.c_str(),
                            texts[i].data(),
                            texts[i].size(),
                            flag_pointers.data(),
                            int(flag_pointers.size()),
                            pch ? pch_path.c_str() : nullptr,
                            objects[i].c_str(),
                            units == 1 ? output_path.c_str() : nullptr,
                            input_pointers.data(),
                            int(input_pointers.size()),
                            logs[i].data(),
                            logs[i].size()};
    statuses[i] = build_(&build);
    logs[i].resize(logs[i].find('\0'));
  };
  {
    std::vector<std::thread> threads;
    for (size_t i = 1; i < units; ++i) threads.emplace_back(compile, i);
    compile(0);
    for (std::thread& thread : threads) thread.join();
  }
  int status = KILN_CLANG_OK;
  std::string log;
  for (size_t i = 0; i < units && status == KILN_CLANG_OK; ++i) {
    status = statuses[i];
    log = logs[i];
  }
  if (status == KILN_CLANG_OK && units > 1) {
    std::vector<const char*> object_pointers = c_strings(objects);
    log.assign(64 * 1024, '\0');
    status = link_(object_pointers.data(), int(object_pointers.size()), output_path.c_str(), input_pointers.data(),
                   int(input_pointers.size()), log.data(), log.size());
    log.resize(log.find('\0'));
  }
  std::error_code ignored;
  for (const std::string& object : objects) fs::remove(object, ignored);
  if (status != KILN_CLANG_OK) report(status, log, kept_source, output);
}

void InProcessCompiler::report(int status, const std::string& log, const fs::path& kept_source,
                               const fs::path& output) const {
  const fs::path log_file = output.parent_path() / "compile.log";
  { std::ofstream(log_file) << log; }
  if (status == KILN_CLANG_SOURCE_ERROR)
    report_rejected_code(description_, "", kept_source, log_file, read_head(log, 20), /*copy_kept=*/true);
  fail(description_, " failed", status == KILN_CLANG_LINK_ERROR ? " to link " : " on ", output.filename().string(), ":\n",
       read_head(log, 20));
}

void InProcessCompiler::make_pch(const std::string& header, const std::string& header_name,
                                 const std::vector<std::string>& flags, const fs::path& pch) const {
  std::vector<const char*> flag_pointers = c_strings(flags);
  std::string log(64 * 1024, '\0');
  const std::string pch_path = pch.string();
  int status = make_pch_(header_name.c_str(), header.data(), header.size(), flag_pointers.data(),
                         int(flag_pointers.size()), pch_path.c_str(), log.data(), log.size());
  log.resize(log.find('\0'));
  if (status != KILN_CLANG_OK) fail(description_, " could not precompile ", header_name, ":\n", read_head(log, 20));
}

void InProcessCompiler::compile_object(const std::string& text, const std::string& source_name,
                                       const std::vector<std::string>& flags, const fs::path& object) const {
  const std::vector<const char*> flag_pointers = c_strings(flags);
  const std::string object_path = object.string();
  std::string log(64 * 1024, '\0');
  KilnClangBuild build = {source_name.c_str(), text.data(), text.size(), flag_pointers.data(), int(flag_pointers.size()),
                          nullptr, object_path.c_str(), nullptr, nullptr, 0, log.data(), log.size()};
  int status = build_(&build);
  log.resize(log.find('\0'));
  if (status != KILN_CLANG_OK) fail(description_, " could not compile ", source_name, ":\n", read_head(log, 20));
}

bool in_process_compiler_chosen() {
  std::string why_not;
  return plugin_file(why_not).has_value();
}

std::string generated_code_compiler() {
  std::string why_not;
  std::optional<fs::path> file = plugin_file(why_not);
  return file ? "in process: " + file_identity(*file) : cxx_identity();
}

std::string precompiled_header_key(const InProcessCompiler& compiler, const std::string& fixed_text,
                                   const std::vector<std::string>& flags) {
  std::string content = "kiln precompiled prelude 2 (prelude.pch, runner.o)\ncompiler " + compiler.identity() + "\nflags";
  for (const std::string& flag : flags) content += " " + flag;
  content += "\n" + fixed_text;
  Checksum64 a(0), b(0x9E3779B97F4A7C15ULL);
  a.update(content.data(), content.size());
  b.update(content.data(), content.size());
  return checksum_hex(a.digest()) + checksum_hex(b.digest());
}

}  // namespace kiln::compiler
