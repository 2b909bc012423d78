// The .pt2 conformance results: one line per case (written by each shard, read back by the
// summary), the allowlist of known failures (allowlist.txt: `case_name  # reason`), the report
// (pass / run per OpInfo entry and per ATen target, samples torch.export refused, unsupported
// targets, Core ATen coverage) and the verdict.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "tests/pt2_conformance/pt2_case_run.h"

namespace kiln::pt2_conformance {

struct CaseResult {
  std::string name;  // "add/3/training"
  std::string op;    // OpInfo entry
  std::vector<std::string> targets;
  CaseOutcome outcome;
};

// Results file: `name<TAB>op<TAB>status<TAB>targets (spaces)<TAB>detail` per line.
void write_results(const fs::path& path, const std::vector<CaseResult>& results);
std::vector<CaseResult> read_results(const fs::path& path);

// Case name -> reason. Blank lines and lines starting with '#' are comments; an entry without
// a reason, or listed twice, is a kiln::Error naming the line.
using Allowlist = std::map<std::string, std::string>;
Allowlist read_allowlist(const fs::path& path);

std::string conformance_report(const std::vector<CaseResult>& results, const std::vector<OpInfoSkips>& skips,
                               const std::vector<std::string>& core_aten_ops, const std::vector<std::string>& supported,
                               const Allowlist& allowlist);

// The fraction of `core_aten_ops` that `supported` converts.
double core_aten_coverage(const std::vector<std::string>& core_aten_ops, const std::vector<std::string>& supported);

// What makes the run fail, one line each: a failure that is not allowlisted, an allowlisted
// case that passed or did not run.
std::vector<std::string> allowlist_violations(const std::vector<CaseResult>& results, const Allowlist& allowlist);

}  // namespace kiln::pt2_conformance
