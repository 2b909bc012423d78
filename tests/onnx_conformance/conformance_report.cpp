// Results files, the per-op report and the allowlist verdict (see conformance_report.h).
#include "tests/onnx_conformance/conformance_report.h"

#include <cstdio>
#include <map>
#include <set>
#include <sstream>

#include "frontends/onnx/onnx_model_file.h"
#include "runtime/atomic_file.h"
#include "runtime/error.h"

namespace kiln::conformance {

namespace {

std::string one_line(std::string text) {
  for (char& c : text)
    if (c == '\t' || c == '\n' || c == '\r') c = ' ';
  return text;
}

std::vector<std::string> split_tabs(const std::string& line) {
  std::vector<std::string> fields;
  size_t begin = 0;
  for (size_t tab; (tab = line.find('\t', begin)) != std::string::npos; begin = tab + 1)
    fields.push_back(line.substr(begin, tab - begin));
  fields.push_back(line.substr(begin));
  return fields;
}

std::string percent(size_t part, size_t whole) {
  char text[32];
  std::snprintf(text, sizeof text, "%.1f%%", whole ? 100.0 * double(part) / double(whole) : 0.0);
  return text;
}

}  // namespace

void write_results(const std::filesystem::path& path, const std::vector<CaseResult>& results) {
  std::ostringstream out;
  for (const CaseResult& result : results) {
    out << result.name << '\t' << result.tested_op << '\t' << status_name(result.outcome.status) << '\t'
        << one_line(result.outcome.detail) << '\t';
    for (size_t k = 0; k < result.outcome.import_time_inputs.size(); ++k)
      out << (k ? " " : "") << result.outcome.import_time_inputs[k];
    out << '\n';
  }
  write_file_atomically(path.string(), out.str());
}

std::vector<CaseResult> read_results(const std::filesystem::path& path) {
  std::vector<CaseResult> results;
  std::istringstream lines(read_file(path.string()));
  std::string line;
  for (int number = 1; std::getline(lines, line); ++number) {
    std::vector<std::string> fields = split_tabs(line);
    std::optional<CaseStatus> status = fields.size() == 5 ? status_from_name(fields[2]) : std::nullopt;
    if (!status) fail(path.string(), ":", number, ": not a conformance result line");
    std::vector<std::string> import_time_inputs;
    std::istringstream names(fields[4]);
    for (std::string name; names >> name;) import_time_inputs.push_back(name);
    results.push_back({fields[0], fields[1], {*status, fields[3], import_time_inputs}});
  }
  return results;
}

std::string conformance_report(const std::vector<CaseResult>& results, const Allowlist& allowlist) {
  struct OpCount {
    size_t run = 0, passed = 0, allowlisted = 0;
  };
  std::map<std::string, OpCount> by_op;
  std::map<std::string, std::vector<std::string>> unsupported;  // missing op -> cases
  size_t run = 0, passed = 0, allowlisted = 0, not_applicable = 0, needing_unsupported = 0, specialized = 0;
  for (const CaseResult& result : results) {
    switch (result.outcome.status) {
      case CaseStatus::passed:
      case CaseStatus::failed: {
        OpCount& count = by_op[result.tested_op];
        bool ok = result.outcome.status == CaseStatus::passed;
        bool listed = !ok && allowlist.count(result.name);
        ++count.run, ++run;
        specialized += !result.outcome.import_time_inputs.empty();
        count.passed += ok, passed += ok;
        count.allowlisted += listed, allowlisted += listed;
        break;
      }
      case CaseStatus::unsupported: {
        ++needing_unsupported;
        std::istringstream ops(result.outcome.detail);
        for (std::string op; ops >> op;) unsupported[op].push_back(result.name);
        break;
      }
      case CaseStatus::not_applicable: ++not_applicable; break;
    }
  }
  std::ostringstream out;
  out << "ONNX backend node tests, cases of supported ops (interpreter and CPU backend, rtol 1e-3, atol 1e-7):\n";
  char line[160];
  std::snprintf(line, sizeof line, "  %-28s %8s %8s %12s\n", "op", "passed", "run", "allowlisted");
  out << line;
  for (const auto& [op, count] : by_op) {
    std::snprintf(line, sizeof line, "  %-28s %8zu %8zu %12zu%s\n", op.c_str(), count.passed, count.run,
                  count.allowlisted, count.passed + count.allowlisted < count.run ? "  <- unexpected failures" : "");
    out << line;
  }
  out << "total: " << passed << "/" << run << " cases of supported ops pass (" << percent(passed, run) << "), "
      << allowlisted << " allowlisted failures, " << run - passed - allowlisted << " unexpected failures; " << specialized
      << " of them ran with inputs that Kiln needs at import time given as constants\n";
  out << needing_unsupported << " cases need ops the importer does not convert or element types Kiln has no dtype for"
      << " (not run):\n";
  for (const auto& [op, cases] : unsupported) {
    out << "  " << op << " (" << cases.size() << "):";
    for (const std::string& name : cases) out << ' ' << name;
    out << '\n';
  }
  out << not_applicable << " cases are at opsets outside " << frontends::kMinOnnxOpset << ".." << frontends::kMaxOnnxOpset << " (not applicable)\n";
  return out.str();
}

std::vector<std::string> allowlist_violations(const std::vector<CaseResult>& results, const Allowlist& allowlist,
                                              bool whole_run) {
  std::vector<std::string> violations;
  std::set<std::string> run;
  for (const CaseResult& result : results) {
    bool listed = allowlist.count(result.name) > 0;
    if (result.outcome.status == CaseStatus::failed) {
      run.insert(result.name);
      if (!listed) violations.push_back(result.name + " (" + result.tested_op + ") fails: " + result.outcome.detail);
    } else if (result.outcome.status == CaseStatus::passed) {
      run.insert(result.name);
      if (listed) violations.push_back(result.name + " passes now: take it off the allowlist");
    }
  }
  if (whole_run)
    for (const auto& [name, reason] : allowlist)
      if (!run.count(name))
        violations.push_back(name + " is allowlisted but is not a run case (no such case, or its ops or opset are "
                                    "not supported): take it off the allowlist");
  return violations;
}

}  // namespace kiln::conformance
