// The conformance runner's results: one line per case (written by each shard, read back by the
// summary), the report, and the verdict against the allowlist.
//
// Results file: one line per case, tab-separated: name, tested op, status, failure class,
// interpreter passed (0/1), CPU backend passed (0/1), in today's scope (0/1), detail (tabs and
// line breaks become spaces), and the inputs the case was specialized on (separated by spaces).
//
// The report, as a user runs the models (every case counted):
//  - per tested op: cases, passed (both), passed by the interpreter, by the CPU backend, and
//    how many of the failures are allowlisted;
//  - the totals through the interpreter, through the CPU backend, and through both;
//  - the failures by class (node_test_run.h), the missing ops counted by op;
//  - today's view beside it: the cases of ops the importer converts, at the opsets it imports,
//    without element types Kiln lacks ("in scope"), and how many of those pass.
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
  bool in_scope = false;  // today's view: supported ops at an importable opset, Kiln's dtypes
  CaseOutcome outcome;
};

void write_results(const std::filesystem::path& path, const std::vector<CaseResult>& results);
std::vector<CaseResult> read_results(const std::filesystem::path& path);

std::string conformance_report(const std::vector<CaseResult>& results, const Allowlist& allowlist);

// What makes the run fail, one line each: a failed case that is not allowlisted; an allowlisted
// case that passed (take it off the list). With `whole_run` (all the cases' results), also an
// allowlisted case that is not a case at all.
std::vector<std::string> allowlist_violations(const std::vector<CaseResult>& results, const Allowlist& allowlist,
                                              bool whole_run);

}  // namespace kiln::conformance
