// Results files, the report and the allowlist verdict (see conformance_report.h).
#include "tests/onnx_conformance/conformance_report.h"

#include <cstdio>
#include <map>
#include <set>
#include <sstream>

#include "frontends/onnx/onnx_model_file.h"
#include "runtime/atomic_file.h"
#include "kiln/error.h"
#include "tests/onnx_conformance/onnx_tolerance.h"

namespace kiln::conformance {

namespace {

constexpr size_t kResultFields = 9;

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

std::string count_line(const char* what, size_t part, size_t whole) {
  return "  " + std::string(what) + std::to_string(part) + "/" + std::to_string(whole) + " (" + percent(part, whole) + ")\n";
}

void report_by_op(std::ostringstream& out, const std::vector<CaseResult>& results, const Allowlist& allowlist) {
  struct OpCount {
    size_t cases = 0, passed = 0, interpreter = 0, cpu = 0, allowlisted = 0;
  };
  std::map<std::string, OpCount> by_op;
  for (const CaseResult& result : results) {
    OpCount& count = by_op[result.tested_op];
    bool ok = result.outcome.status == CaseStatus::passed;
    ++count.cases;
    count.passed += ok;
    count.interpreter += result.outcome.interpreter_passed;
    count.cpu += result.outcome.cpu_passed;
    count.allowlisted += !ok && allowlist.count(result.name);
  }
  char line[200];
  std::snprintf(line, sizeof line, "  %-28s %7s %7s %7s %7s %12s\n", "op", "passed", "cases", "interp", "cpu", "allowlisted");
  out << line;
  for (const auto& [op, count] : by_op) {
    std::snprintf(line, sizeof line, "  %-28s %7zu %7zu %7zu %7zu %12zu%s\n", op.c_str(), count.passed, count.cases,
                  count.interpreter, count.cpu, count.allowlisted,
                  count.passed + count.allowlisted < count.cases ? "  <- unexpected failures" : "");
    out << line;
  }
}

void report_failures_by_class(std::ostringstream& out, const std::vector<CaseResult>& results) {
  std::map<FailureClass, std::vector<const CaseResult*>> by_class;
  for (const CaseResult& result : results)
    if (result.outcome.status == CaseStatus::failed) by_class[result.outcome.failure].push_back(&result);
  out << "failures by class:\n";
  for (const auto& [failure, cases] : by_class) {
    out << "  " << failure_class_name(failure) << " (" << cases.size() << "): " << failure_class_summary(failure) << "\n";
    if (failure == FailureClass::unsupported_op || failure == FailureClass::unsupported_type) {
      std::map<std::string, std::vector<std::string>> by_part;  // missing op or type -> cases
      for (const CaseResult* result : cases) {
        std::istringstream parts(result->outcome.detail);
        for (std::string part; parts >> part;) by_part[part].push_back(result->name);
      }
      for (const auto& [part, names] : by_part) {
        out << "    " << part << " (" << names.size() << "):";
        for (const std::string& name : names) out << ' ' << name;
        out << '\n';
      }
      continue;
    }
    for (const CaseResult* result : cases) out << "    " << result->name << ": " << result->outcome.detail.substr(0, 160) << "\n";
  }
}

}  // namespace

void write_results(const std::filesystem::path& path, const std::vector<CaseResult>& results) {
  std::ostringstream out;
  for (const CaseResult& result : results) {
    const CaseOutcome& outcome = result.outcome;
    out << result.name << '\t' << result.tested_op << '\t' << status_name(outcome.status) << '\t'
        << failure_class_name(outcome.failure) << '\t' << outcome.interpreter_passed << '\t' << outcome.cpu_passed << '\t'
        << result.in_scope << '\t' << one_line(outcome.detail) << '\t';
    for (size_t k = 0; k < outcome.specialized_inputs.size(); ++k) out << (k ? " " : "") << outcome.specialized_inputs[k];
    out << '\n';
  }
  write_file_atomically(path.string(), out.str());
}

std::vector<CaseResult> read_results(const std::filesystem::path& path) {
  std::vector<CaseResult> results;
  std::istringstream lines(read_file(path.string()));
  std::string line;
  auto flag = [](const std::string& field) -> std::optional<bool> {
    if (field == "0" || field == "1") return field == "1";
    return std::nullopt;
  };
  for (int number = 1; std::getline(lines, line); ++number) {
    std::vector<std::string> fields = split_tabs(line);
    bool complete = fields.size() == kResultFields;
    std::optional<CaseStatus> status = complete ? status_from_name(fields[2]) : std::nullopt;
    std::optional<FailureClass> failure = complete ? failure_class_from_name(fields[3]) : std::nullopt;
    std::optional<bool> interpreter = complete ? flag(fields[4]) : std::nullopt;
    std::optional<bool> cpu = complete ? flag(fields[5]) : std::nullopt;
    std::optional<bool> in_scope = complete ? flag(fields[6]) : std::nullopt;
    if (!status || !failure || !interpreter || !cpu || !in_scope) fail(path.string(), ":", number, ": not a conformance result line");
    CaseResult result{fields[0], fields[1], *in_scope, {}};
    result.outcome = {*status, *failure, *interpreter, *cpu, fields[7], {}};
    std::istringstream names(fields[8]);
    for (std::string name; names >> name;) result.outcome.specialized_inputs.push_back(name);
    results.push_back(std::move(result));
  }
  return results;
}

std::string conformance_report(const std::vector<CaseResult>& results, const Allowlist& allowlist) {
  size_t passed = 0, interpreter = 0, cpu = 0, allowlisted = 0, specialized = 0, in_scope = 0, in_scope_passed = 0;
  for (const CaseResult& result : results) {
    bool ok = result.outcome.status == CaseStatus::passed;
    passed += ok;
    interpreter += result.outcome.interpreter_passed;
    cpu += result.outcome.cpu_passed;
    allowlisted += !ok && allowlist.count(result.name);
    specialized += ok && !result.outcome.specialized_inputs.empty();
    in_scope += result.in_scope;
    in_scope_passed += result.in_scope && ok;
  }
  std::ostringstream out;
  out << "ONNX backend node tests as a user runs them (every input fed at run time, outputs by their ONNX names; rtol "
      << kOnnxRtol << ", atol " << kOnnxAtol << "):\n";
  report_by_op(out, results, allowlist);
  size_t total = results.size();
  out << "total, of every case:\n"
      << count_line("interpreter:              ", interpreter, total) << count_line("CPU backend:              ", cpu, total)
      << count_line("both (a case passes):     ", passed, total);
  out << "  " << specialized << " passing cases ran specialized on the values of shape-deciding inputs; "
      << total - passed - allowlisted << " unexpected failures, " << allowlisted << " allowlisted\n";
  report_failures_by_class(out, results);
  out << "today's view (cases of ops the importer converts, at opsets " << frontends::kMinOnnxOpset << ".."
      << frontends::kMaxOnnxOpset << ", with Kiln's dtypes): " << in_scope_passed << "/" << in_scope << " pass ("
      << percent(in_scope_passed, in_scope) << ")\n";
  return out.str();
}

std::vector<std::string> allowlist_violations(const std::vector<CaseResult>& results, const Allowlist& allowlist,
                                              bool whole_run) {
  std::vector<std::string> violations;
  std::set<std::string> seen;
  for (const CaseResult& result : results) {
    seen.insert(result.name);
    bool listed = allowlist.count(result.name) > 0;
    if (result.outcome.status == CaseStatus::failed && !listed)
      violations.push_back(result.name + " (" + result.tested_op + ") fails [" + failure_class_name(result.outcome.failure) +
                           "]: " + result.outcome.detail);
    if (result.outcome.status == CaseStatus::passed && listed)
      violations.push_back(result.name + " passes now: take it off the allowlist");
  }
  if (whole_run)
    for (const auto& [name, reason] : allowlist)
      if (!seen.count(name)) violations.push_back(name + " is allowlisted but is not a case: take it off the allowlist");
  return violations;
}

}  // namespace kiln::conformance
