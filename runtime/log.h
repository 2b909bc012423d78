// KILN_LOG: the one place that knows the log channels and reads the variable, like PyTorch's
// TORCH_LOGS. KILN_LOG is a comma list of channel names ("recompiles,guards"); "all" turns on
// every channel. A name that is not a channel is a warning on stderr listing the known ones
// (once per distinct value of the variable). Messages go to stderr as "kiln[channel]: message".
//
// The channels and who writes them:
//   recompiles    kiln::compile(fn): why a call traced again (the failing guard, old and new value)
//   guards        kiln::compile(fn): every guard of a variant when it is compiled
//   graph_breaks  kiln::compile(fn): each break of a traced function with its source location
//   dynamic       kiln::compile(fn): each dim made dynamic, each size specialized; the ONNX
//                 importer: two dynamic dims an op needs equal, made one symbol
//   cache         the compile driver: compile cache hits and misses, per graph
//   passes        the pass manager: each pass run and what it changed
//   fusion        the scheduler: each decision that kept two nodes apart, and why
//   batch_split   the compile driver: whether a graph's batch runs as chunks side by side, or why not
//   post_ops      the cpu emitter: each convolution's clamp or relu, as oneDNN's post-op or Kiln's loop, and why
//   distributed   data-parallel training: the backward's stages and the gradient buckets each completes
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace kiln {

// The channel names, in the order above.
const std::vector<std::string_view>& log_channels();

// Whether KILN_LOG (read now, so a test can set it) enables `channel` (a name of log_channels();
// another name is an internal error).
bool log_enabled(std::string_view channel);

// Reads KILN_LOG now and warns about names that are not channels (the CLI calls it first, so
// that every command reports a misspelt channel, including those that log nothing).
void check_log_environment();

// Writes "kiln[channel]: message" to stderr when the channel is enabled.
void log(std::string_view channel, const std::string& message);

}  // namespace kiln
