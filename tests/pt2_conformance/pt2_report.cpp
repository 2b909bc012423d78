// Results files, the allowlist, the report and the verdict of the .pt2 conformance suite.
#include "tests/pt2_conformance/pt2_report.h"

#include <algorithm>
#include <fstream>
#include <iomanip>
#include <set>
#include <sstream>

#include "runtime/atomic_file.h"
#include "kiln/error.h"

namespace kiln::pt2_conformance {

namespace {

std::string one_line(std::string text) {
  for (char& c : text)
    if (c == '\t' || c == '\n' || c == '\r') c = ' ';
  return text;
}

std::vector<std::string> split(const std::string& text, char separator) {
  std::vector<std::string> parts;
  std::string part;
  std::istringstream in(text);
  while (std::getline(in, part, separator)) parts.push_back(part);
  if (!text.empty() && text.back() == separator) parts.emplace_back();
  return parts;
}

std::string trimmed(const std::string& text) {
  size_t begin = text.find_first_not_of(" \t"), end = text.find_last_not_of(" \t\r");
  return begin == std::string::npos ? "" : text.substr(begin, end - begin + 1);
}

std::string percent(int passed, int run) {
  std::ostringstream out;
  out << std::fixed << std::setprecision(1) << (run ? 100.0 * passed / run : 100.0) << "%";
  return out.str();
}

}  // namespace

void write_results(const fs::path& path, const std::vector<CaseResult>& results) {
  std::string text;
  for (const CaseResult& result : results) {
    std::string targets;
    for (const std::string& target : result.targets) targets += (targets.empty() ? "" : " ") + target;
    text += result.name + "\t" + result.op + "\t" + status_name(result.outcome.status) + "\t" + targets + "\t" +
            one_line(result.outcome.detail) + "\n";
  }
  write_file_atomically(path.string(), text);
}

std::vector<CaseResult> read_results(const fs::path& path) {
  std::ifstream file(path);
  if (!file) fail("cannot read '", path.string(), "'");
  std::vector<CaseResult> results;
  std::string line;
  while (std::getline(file, line)) {
    std::vector<std::string> fields = split(line, '\t');
    if (fields.size() != 5) fail("'", path.string(), "': malformed result line: ", line);
    CaseResult result{fields[0], fields[1], {}, {status_from_name(fields[2]), fields[4]}};
    for (const std::string& target : split(fields[3], ' '))
      if (!target.empty()) result.targets.push_back(target);
    results.push_back(std::move(result));
  }
  return results;
}

Allowlist read_allowlist(const fs::path& path) {
  std::ifstream file(path);
  if (!file) fail("cannot read the allowlist '", path.string(), "'");
  Allowlist allowlist;
  std::string line;
  for (int number = 1; std::getline(file, line); ++number) {
    std::string text = trimmed(line);
    if (text.empty() || text[0] == '#') continue;
    size_t hash = text.find('#');
    std::string name = trimmed(text.substr(0, hash));
    std::string reason = hash == std::string::npos ? "" : trimmed(text.substr(hash + 1));
    if (reason.empty()) fail(path.string(), ":", number, ": '", name, "' has no reason (write `case  # reason`)");
    if (!allowlist.emplace(name, reason).second) fail(path.string(), ":", number, ": '", name, "' is listed twice");
  }
  return allowlist;
}

double core_aten_coverage(const std::vector<std::string>& core_aten_ops, const std::vector<std::string>& supported) {
  if (core_aten_ops.empty()) return 0;
  std::set<std::string> known(supported.begin(), supported.end());
  int covered = 0;
  for (const std::string& op : core_aten_ops) covered += known.count(op) ? 1 : 0;
  return double(covered) / double(core_aten_ops.size());
}

std::string conformance_report(const std::vector<CaseResult>& results, const std::vector<OpInfoSkips>& skips,
                               const std::vector<std::string>& core_aten_ops, const std::vector<std::string>& supported,
                               const Allowlist& allowlist) {
  struct Count {
    int run = 0, passed = 0, allowlisted = 0;
  };
  std::map<std::string, Count> by_op, by_target;
  std::map<std::string, int> unsupported;  // missing target -> cases
  Count total;
  int unsupported_cases = 0;
  std::vector<const CaseResult*> diverging;
  for (const CaseResult& result : results) {
    if (result.outcome.status == CaseStatus::diverging) {
      diverging.push_back(&result);
      continue;
    }
    if (result.outcome.status == CaseStatus::unsupported) {
      ++unsupported_cases;
      for (const std::string& target : split(result.outcome.detail, ' '))
        if (!target.empty()) ++unsupported[target];
      continue;
    }
    bool passed = result.outcome.status == CaseStatus::passed;
    bool listed = !passed && allowlist.count(result.name);
    for (Count* count : {&by_op[result.op], &total}) {
      ++count->run;
      count->passed += passed;
      count->allowlisted += listed;
    }
    for (const std::string& target : result.targets) {
      Count& count = by_target[target];
      ++count.run;
      count.passed += passed;
      count.allowlisted += listed;
    }
  }
  std::ostringstream out;
  out << "== .pt2 conformance: PyTorch's OpInfo samples through torch.export, the importer, the interpreter and the CPU backend\n";
  out << "-- per OpInfo entry: passed/run (allowlisted failures)\n";
  for (const auto& [op, count] : by_op)
    out << "  " << std::left << std::setw(48) << op << " " << count.passed << "/" << count.run
        << (count.allowlisted ? " (" + std::to_string(count.allowlisted) + " allowlisted)" : "")
        << (count.passed * 100 < count.run * 95 ? "   < 95%" : "") << "\n";
  out << "-- per ATen target (a case counts for every target its program calls): passed/run\n";
  int below = 0;
  for (const auto& [target, count] : by_target) {
    bool low = count.passed * 100 < count.run * 95;
    below += low;
    out << "  " << std::left << std::setw(48) << target << " " << count.passed << "/" << count.run << " " << percent(count.passed, count.run)
        << (low ? "   < 95%" : "") << "\n";
  }
  int refused = 0, not_applicable = 0;
  for (const OpInfoSkips& skip : skips) {
    refused += skip.export_refused;
    not_applicable += skip.not_applicable;
  }
  out << "-- samples torch.export refused (not counted): " << refused << "; samples without tensor outputs or inputs, or that "
      << "eager PyTorch refused (not counted): " << not_applicable << "\n";
  out << "-- cases that fail where PyTorch itself runs the exported program to other values than eager (not counted): "
      << diverging.size() << "\n";
  for (const CaseResult* result : diverging) out << "    " << result->name << ": " << result->outcome.detail << "\n";
  out << "-- cases of programs calling targets outside the table: " << unsupported_cases << "; by target (cases):";
  std::vector<std::pair<int, std::string>> ranked;
  for (const auto& [target, count] : unsupported) ranked.emplace_back(-count, target);
  std::sort(ranked.begin(), ranked.end());
  for (size_t i = 0; i < ranked.size(); ++i) out << (i % 6 == 0 ? "\n    " : ", ") << ranked[i].second << " " << -ranked[i].first;
  out << "\n";
  std::set<std::string> known(supported.begin(), supported.end());
  std::string uncovered;
  int covered = 0;
  for (const std::string& op : core_aten_ops) {
    if (known.count(op)) ++covered;
    else uncovered += (uncovered.empty() ? "" : ", ") + op;
  }
  out << "-- Core ATen opset: the table covers " << covered << " of " << core_aten_ops.size() << " overloads ("
      << percent(covered, int(core_aten_ops.size())) << "); not covered: " << uncovered << "\n";
  out << "-- total: " << total.passed << "/" << total.run << " supported cases pass (" << percent(total.passed, total.run) << "), "
      << total.allowlisted << " failures allowlisted; " << by_target.size() << " ATen targets exercised, " << below
      << " of them below 95%\n";
  return out.str();
}

std::vector<std::string> allowlist_violations(const std::vector<CaseResult>& results, const Allowlist& allowlist) {
  std::vector<std::string> violations;
  std::set<std::string> ran;
  for (const CaseResult& result : results) {
    ran.insert(result.name);
    bool listed = allowlist.count(result.name) > 0;
    if (result.outcome.status == CaseStatus::failed && !listed)
      violations.push_back(result.name + " fails: " + result.outcome.detail);
    if (result.outcome.status == CaseStatus::passed && listed)
      violations.push_back(result.name + " passes but is allowlisted (" + allowlist.at(result.name) + "): take it off the list");
  }
  for (const auto& [name, reason] : allowlist)
    if (!ran.count(name)) violations.push_back(name + " is allowlisted but is not a case of the data: take it off the list");
  return violations;
}

}  // namespace kiln::pt2_conformance
