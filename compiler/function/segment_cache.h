// The compiled graphs of a kiln::compile(fn) whose function has graph breaks: the function is
// traced on every call (its C++ control flow runs natively), and each graph it records (the
// graph up to a break, and the final one) is compiled once and found again by its structure
// (its printed text: ops, types, constants and names), as a LazyTensor-style runtime does.
// A cache holds at most `capacity` graphs (the recompile limit): past it a new graph is not
// compiled, and its caller runs it in the interpreter.
#pragma once

#include <map>
#include <memory>
#include <mutex>
#include <string>

#include "compiler/compile_driver.h"

namespace kiln::compiler {

class SegmentCache {
 public:
  explicit SegmentCache(size_t capacity) : capacity_(capacity) {}

  struct Lookup {
    CompiledModel* model = nullptr;  // nullptr: a miss with the cache full
    bool compiled = false;           // a new graph (a miss): compiled now
  };
  // The compiled model of `graph` (which has its output node), compiling it on a miss.
  Lookup get(const ir::Graph& graph, const CompileOptions& options);
  size_t size() const;

 private:
  size_t capacity_;
  mutable std::mutex mutex_;
  std::map<std::string, std::unique_ptr<CompiledModel>> models_;
};

}  // namespace kiln::compiler
