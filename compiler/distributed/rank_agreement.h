// The check data-parallel training makes at set-up that every rank builds the same training: the
// ranks all-gather a checksum of each description (the model's graphs, the parameters' names,
// dtypes and shapes, the optimizer's options) and compare them; where one differs, they gather
// that description's text and every rank throws the same kiln::Error, naming the first line in
// which a rank differs from rank 0 (rather than averaging mismatched gradients, or hanging when
// the buffers' sizes differ).
#pragma once

#include <string>
#include <vector>

#include "kiln/distributed.h"

namespace kiln::compiler {

struct RankDescription {
  std::string what;  // "the parameters (names, dtypes, shapes)": for the message
  std::string text;  // one item per line
};

// A collective: every rank calls it with descriptions of the same kinds in the same order.
// `context` starts the message ("compile_training (data_parallel)").
void check_ranks_agree(distributed::ProcessGroup& group, const std::vector<RankDescription>& descriptions,
                       const std::string& context);

}  // namespace kiln::compiler
