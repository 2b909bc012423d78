// The conformance runner's results: one line per case (written by each shard, read back by the
// summary), the per-op report, and the verdict against the allowlist.
//
// Results file: one line per case, `name<TAB>tested op<TAB>status<TAB>detail<TAB>import-time
// inputs` (tabs and line breaks in the detail become spaces; the inputs separated by spaces).
//
// The report: per tested op, the cases run and passed (and how many of the failures are
// allowlisted); then the total and the pass rate over the run cases (the cases of supported
// ops at importable opsets), and how many ran with import-time inputs; then the cases that need unsupported ops, by op, and the number
// of cases at opsets Kiln does not import.
#pragma once

#include <filesystem>
#include <string>
#include <vector>

#include "tests/onnx_conformance/allowlist.h"
#include "tests/onnx_conformance/node_test_run.h"

namespace kiln::conformance {

struct CaseResult {
  std::string name;
  std::string tested_op;
  CaseOutcome outcome;
};

void write_results(const std::filesystem::path& path, const std::vector<CaseResult>& results);
std::vector<CaseResult> read_results(const std::filesystem::path& path);

std::string conformance_report(const std::vector<CaseResult>& results, const Allowlist& allowlist);

// What makes the run fail, one line each: a failed case that is not allowlisted; an allowlisted
// case that passed (take it off the list). With `whole_run` (all the cases' results), also an
// allowlisted case that was not run at all (not a case of a supported op: take it off the list).
std::vector<std::string> allowlist_violations(const std::vector<CaseResult>& results, const Allowlist& allowlist,
                                              bool whole_run);

}  // namespace kiln::conformance
