// Compiled graphs of a function with graph breaks, by structure (compiler/function/segment_cache.h).
#include "compiler/function/segment_cache.h"

#include "ir/printer.h"

namespace kiln::compiler {

SegmentCache::Lookup SegmentCache::get(const ir::Graph& graph, const CompileOptions& options) {
  std::string key = ir::print_graph(graph);
  std::lock_guard<std::mutex> lock(mutex_);
  auto found = models_.find(key);
  if (found != models_.end()) return {found->second.get(), false};
  if (models_.size() >= capacity_) return {nullptr, false};
  auto model = std::make_unique<CompiledModel>(compile(graph, options));
  CompiledModel* raw = model.get();
  models_.emplace(std::move(key), std::move(model));
  return {raw, true};
}

size_t SegmentCache::size() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return models_.size();
}

}  // namespace kiln::compiler
