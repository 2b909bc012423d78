// The ranks' agreement check. See compiler/distributed/rank_agreement.h.
#include "compiler/distributed/rank_agreement.h"

#include <algorithm>
#include <cstring>
#include <sstream>

#include "kiln/error.h"
#include "runtime/checksum.h"

namespace kiln::compiler {

namespace {

// Every rank's `text`, in rank order (a collective).
std::vector<std::string> all_gather_text(distributed::ProcessGroup& group, const std::string& text) {
  const Tensor lengths = group.all_gather(Tensor::full({}, double(text.size()), DType::i64));
  int64_t longest = 0;
  for (int rank = 0; rank < group.world_size(); ++rank) longest = std::max(longest, lengths.flat_int(rank));
  Tensor padded = Tensor::zeros({longest}, DType::u8);
  if (!text.empty()) std::memcpy(padded.data_ptr(), text.data(), text.size());
  const Tensor gathered = group.all_gather(padded);
  std::vector<std::string> texts;
  for (int rank = 0; rank < group.world_size(); ++rank) {
    const size_t length = size_t(lengths.flat_int(rank));
    texts.push_back(length ? std::string(static_cast<const char*>(gathered.data_ptr()) + rank * longest, length) : "");
  }
  return texts;
}

std::vector<std::string> lines_of(const std::string& text) {
  std::vector<std::string> lines;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  return lines;
}

std::string quoted(const std::string& line) {
  constexpr size_t kLongest = 160;
  std::string trimmed = line.substr(line.find_first_not_of(' ') == std::string::npos ? 0 : line.find_first_not_of(' '));
  if (trimmed.size() > kLongest) trimmed = trimmed.substr(0, kLongest) + "...";
  return "'" + trimmed + "'";
}

}  // namespace

void check_ranks_agree(distributed::ProcessGroup& group, const std::vector<RankDescription>& descriptions,
                       const std::string& context) {
  Tensor digests = Tensor::zeros({int64_t(descriptions.size())}, DType::u64);
  for (size_t i = 0; i < descriptions.size(); ++i) digests.data<uint64_t>()[i] = checksum64(descriptions[i].text);
  const Tensor gathered = group.all_gather(digests);
  const uint64_t* all = gathered.data<uint64_t>();
  const size_t count = descriptions.size();
  for (size_t i = 0; i < count; ++i) {
    int differing = -1;
    for (int rank = 1; rank < group.world_size() && differing < 0; ++rank)
      if (all[size_t(rank) * count + i] != all[i]) differing = rank;
    if (differing < 0) continue;
    // Every rank saw the same digests, so every rank gathers this text.
    const std::vector<std::string> texts = all_gather_text(group, descriptions[i].text);
    const std::vector<std::string> first = lines_of(texts[0]), other = lines_of(texts[size_t(differing)]);
    size_t line = 0;
    while (line < first.size() && line < other.size() && first[line] == other[line]) ++line;
    const std::string theirs = line < other.size() ? quoted(other[line]) : "nothing more";
    const std::string ours = line < first.size() ? quoted(first[line]) : "nothing more";
    fail(context, ": the ranks disagree on ", descriptions[i].what, ": at line ", line + 1, " rank ", differing,
         " has ", theirs, " where rank 0 has ", ours, " (every rank must build the same training)");
  }
}

}  // namespace kiln::compiler
