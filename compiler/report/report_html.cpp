// `kiln report`'s page. See compiler/report/report_html.h.
#include "compiler/report/report_html.h"

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <sstream>
#include <vector>

#include "compiler/report/report_pictures.h"

namespace kiln::compiler {

namespace {

constexpr const char* kReportStyle = R"(
body { font-family: system-ui, sans-serif; margin: 0 2em 4em 2em; color: #212529; }
h1 { font-size: 1.5em; margin-top: 1em; }
h2 { border-bottom: 1px solid #ced4da; padding-bottom: 0.2em; margin-top: 2em; }
h3 { margin-bottom: 0.3em; font-family: monospace; }
nav ul { list-style: none; padding: 0; display: flex; flex-wrap: wrap; gap: 1em; }
table { border-collapse: collapse; margin: 0.5em 0; }
td, th { border: 1px solid #dee2e6; padding: 0.2em 0.6em; text-align: left; vertical-align: top; }
th { background: #f1f3f5; }
td.number { text-align: right; font-variant-numeric: tabular-nums; }
pre { background: #f8f9fa; border: 1px solid #e9ecef; padding: 0.6em; overflow-x: auto; font-size: 0.85em; }
code, .mono { font-family: monospace; }
.bar { background: #74c0fc; height: 0.8em; display: inline-block; }
.hit { color: #2b8a3e; font-weight: bold; }
.miss { color: #e67700; font-weight: bold; }
.problem { color: #c92a2a; }
.picture { overflow-x: auto; }
.picture svg { max-width: 100%; height: auto; }
details > summary { cursor: pointer; margin: 0.3em 0; }
)";

constexpr const char* kReportScript = R"(
(function () {
  var toggles = document.getElementById('toggles');
  function setAll(open) {
    var all = document.querySelectorAll('details');
    for (var i = 0; i < all.length; ++i) all[i].open = open;
  }
  document.getElementById('expand-all').addEventListener('click', function () { setAll(true); });
  document.getElementById('collapse-all').addEventListener('click', function () { setAll(false); });
  toggles.hidden = false;
  var ran = document.createElement('span');
  ran.id = 'report-script-ran';
  ran.hidden = true;
  document.body.appendChild(ran);
})();
)";

struct SectionTitle {
  const char* id;
  const char* title;
};

constexpr SectionTitle kSections[] = {
    {"compile", "The model and the compile"},
    {"guards", "Guards"},
    {"times", "Times"},
    {"stages", "Stages"},
    {"kernels", "Kernels"},
    {"memory", "Memory plan"},
    {"warnings", "Fallbacks and warnings"},
};

std::string report_milliseconds(double ms) {
  char text[32];
  std::snprintf(text, sizeof text, "%.2f ms", ms);
  return text;
}

std::string report_bytes(int64_t bytes) {
  std::string text = std::to_string(bytes) + " bytes";
  if (bytes >= 10 * 1024) {
    char kib[32];
    std::snprintf(kib, sizeof kib, " (%.1f KiB)", double(bytes) / 1024.0);
    text += kib;
  }
  return text;
}

// A name usable inside an id attribute: letters, digits, '-' and '_'.
std::string report_id_part(const std::string& name) {
  std::string id;
  for (char c : name) id += std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '-' ? c : '_';
  return id;
}

void open_report_section(std::ostringstream& html, const std::string& id) {
  const char* title = "";
  for (const SectionTitle& s : kSections)
    if (id == s.id) title = s.title;
  html << "<section id=\"" << id << "\">\n<h2>" << title << "</h2>\n";
}

void report_row(std::ostringstream& html, const std::string& name, const std::string& value_html) {
  html << "<tr><th>" << escape_html(name) << "</th><td>" << value_html << "</td></tr>\n";
}

void compile_section(std::ostringstream& html, const CompileReport& r) {
  open_report_section(html, "compile");
  html << "<table>\n";
  report_row(html, "model", "<code>" + escape_html(r.model) + "</code> (" + std::to_string(r.graph_nodes) + " nodes as loaded)");
  report_row(html, "target", "<code>" + escape_html(r.target) + "</code>");
  report_row(html, "options", r.options.empty() ? "(none)" : "<code>" + escape_html(r.options) + "</code>");
  report_row(html, "Kiln version", escape_html(r.kiln_version));
  if (r.result) {
    report_row(html, "cache key", "<code>" + escape_html(r.result->key) + "</code>");
    report_row(html, "cache", r.result->cache_hit ? "<span class=\"hit\">hit</span> (the artifact was already built)"
                                           : "<span class=\"miss\">miss</span> (built now and stored)");
    report_row(html, "artifact", "<code>" + escape_html(r.result->artifact_dir.string()) + "</code>");
    report_row(html, "kernels", std::to_string(r.result->kernel_count) + "; " + escape_html(r.result->details));
    report_row(html, "total time", report_milliseconds(r.total_milliseconds));
  } else if (!r.compile_error.empty()) {
    report_row(html, "compile", "<span class=\"problem\">failed: " + escape_html(r.compile_error) + "</span>");
  } else {
    report_row(html, "compile", "not compiled (target none: the stages stop after scheduling)");
  }
  html << "</table>\n</section>\n";
}

void guards_section(std::ostringstream& html, const CompileReport& r) {
  open_report_section(html, "guards");
  html << "<p>What the compiled artifact checks on every call, before any kernel runs (a failed guard names "
          "itself and the values):</p>\n<ul>\n";
  for (const std::string& guard : r.guards) html << "<li><code>" << escape_html(guard) << "</code></li>\n";
  html << "</ul>\n</section>\n";
}

void report_times_table(std::ostringstream& html, const std::vector<std::pair<std::string, double>>& times) {
  double longest = 0;
  for (const auto& [stage, ms] : times) longest = std::max(longest, ms);
  html << "<table>\n<tr><th>stage</th><th>time</th><th></th></tr>\n";
  for (const auto& [stage, ms] : times) {
    int width = longest > 0 ? int(200.0 * ms / longest) : 0;
    html << "<tr><td class=\"mono\">" << escape_html(stage) << "</td><td class=\"number\">" << report_milliseconds(ms)
         << "</td><td><span class=\"bar\" style=\"width: " << width << "px\"></span></td></tr>\n";
  }
  html << "</table>\n";
}

void times_section(std::ostringstream& html, const CompileReport& r) {
  open_report_section(html, "times");
  if (!r.compile_times.empty()) {
    html << "<p>The compile, stage by stage (the driver's own times; total " << report_milliseconds(r.total_milliseconds)
         << "):</p>\n";
    report_times_table(html, r.compile_times);
  }
  std::vector<std::pair<std::string, double>> graph_times;
  for (const StageReport& stage : r.stages)
    if (stage.graph) graph_times.emplace_back(stage.name, stage.milliseconds);
  html << "<p>The graph stages (the pass pipeline's time to reach each, in the report's own run):</p>\n";
  report_times_table(html, graph_times);
  html << "</section>\n";
}

void stages_section(std::ostringstream& html, const CompileReport& r) {
  open_report_section(html, "stages");
  html << "<p>Each stage's text is what <code>kiln dump --stage NAME</code> prints; the last graph stage's "
          "picture is open, the others open on a click (or <i>expand all</i>).</p>\n";
  std::string last_graph;
  for (const StageReport& stage : r.stages)
    if (stage.graph) last_graph = stage.name;
  for (const StageReport& stage : r.stages) {
    std::string id = "stage-" + report_id_part(stage.name);
    html << "<section class=\"stage\" id=\"" << id << "\">\n<h3>" << escape_html(stage.name) << "</h3>\n<p>"
         << escape_html(stage.summary) << "</p>\n";
    if (stage.graph) {
      GraphPicture picture = graphviz_svg(stage.dot, id);
      if (picture.svg.empty()) {
        html << "<p class=\"problem\">No picture: " << escape_html(picture.problem) << ".</p>\n";
      } else {
        html << "<details" << (stage.name == last_graph ? " open" : "") << "><summary>graph</summary>\n<div class=\"picture\">\n"
             << picture.svg << "</div>\n</details>\n";
      }
    }
    html << "<details" << (stage.graph ? "" : " open") << "><summary>text</summary>\n<pre>" << escape_html(stage.text)
         << "</pre>\n</details>\n</section>\n";
  }
  html << "</section>\n";
}

void kernels_section(std::ostringstream& html, const CompileReport& r) {
  open_report_section(html, "kernels");
  html << "<p>" << r.kernels.size() << (r.kernels.size() == 1 ? " kernel" : " kernels")
       << ", in the order the wrapper runs them"
       << (r.target == "cuda" ? " (as lowered for cuda: the scheduled stage above is kiln dump's, lowered for cpu)" : "")
       << ".</p>\n";
  for (size_t k = 0; k < r.kernels.size(); ++k) {
    const KernelReport& kernel = r.kernels[k];
    html << "<section class=\"kernel\" id=\"kernel-" << report_id_part(kernel.name) << "\">\n<h3>" << k << ": "
         << escape_html(kernel.name) << " <small>(" << escape_html(kernel.kind) << ", " << escape_html(kernel.size)
         << ")</small></h3>\n";
    html << "<table>\n<tr><th>graph node fused</th><th>op</th><th>from</th></tr>\n";
    for (const FusedNode& node : kernel.fused)
      html << "<tr><td class=\"mono\">%" << escape_html(node.name) << "</td><td class=\"mono\">" << escape_html(node.op)
           << "</td><td>" << escape_html(node.source) << "</td></tr>\n";
    html << "</table>\n<pre>" << escape_html(kernel.loop_nest) << "</pre>\n";
    if (!kernel.source.empty())
      html << "<details><summary>generated code</summary>\n<pre>" << escape_html(kernel.source) << "</pre>\n</details>\n";
    html << "</section>\n";
  }
  if (!r.fusion_decisions.empty()) {
    html << "<h3>fusion decisions</h3>\n<ul>\n";
    for (const std::string& line : r.fusion_decisions) html << "<li>" << escape_html(line) << "</li>\n";
    html << "</ul>\n";
  }
  html << "</section>\n";
}

void memory_section(std::ostringstream& html, const CompileReport& r) {
  const MemoryReport& m = r.memory;
  open_report_section(html, "memory");
  html << "<p>Peak workspace: <b>" << report_bytes(m.peak_bytes) << "</b>";
  if (m.peak_expression != std::to_string(m.peak_bytes)) html << " (<code>" << escape_html(m.peak_expression) << "</code>)";
  html << "; without reuse " << report_bytes(m.naive_bytes) << ". " << m.blocks.size()
       << " buffers live in the workspace; inputs, outputs and parameters are the caller's.";
  if (!m.bindings.empty()) {
    html << " Drawn for";
    for (const auto& [symbol, value] : m.bindings) html << " <code>" << escape_html(symbol) << "=" << value << "</code>";
    html << " (<code>--dim</code> chooses).";
  }
  html << "</p>\n<div class=\"picture\">\n" << memory_plan_svg(m) << "</div>\n";
  html << "<table>\n<tr><th>buffer</th><th>type</th><th>offset</th><th>bytes</th><th>alive in kernels</th></tr>\n";
  for (const MemoryBlock& b : m.blocks) {
    html << "<tr><td class=\"mono\">" << escape_html(b.buffer) << "</td><td class=\"mono\">" << escape_html(b.type)
         << "</td><td class=\"number\">" << b.offset;
    if (b.offset_expression != std::to_string(b.offset)) html << " (<code>" << escape_html(b.offset_expression) << "</code>)";
    html << "</td><td class=\"number\">" << b.bytes << "</td><td>" << b.first_kernel << ".." << b.last_kernel << "</td></tr>\n";
  }
  html << "</table>\n</section>\n";
}

void warnings_section(std::ostringstream& html, const CompileReport& r) {
  open_report_section(html, "warnings");
  if (!r.compile_error.empty()) html << "<p class=\"problem\">The compile failed: " << escape_html(r.compile_error) << "</p>\n";
  if (r.fallbacks.empty()) {
    html << "<p>No fallbacks: every node runs in generated code or a library call.</p>\n";
  } else {
    html << "<p>Fallbacks:</p>\n<ul>\n";
    for (const std::string& line : r.fallbacks) html << "<li>" << escape_html(line) << "</li>\n";
    html << "</ul>\n";
  }
  if (r.warnings.empty()) {
    html << "<p>No warnings.</p>\n";
  } else {
    html << "<p>Warnings:</p>\n<ul>\n";
    for (const std::string& line : r.warnings) html << "<li>" << escape_html(line) << "</li>\n";
    html << "</ul>\n";
  }
  html << "</section>\n";
}

}  // namespace

std::string render_report_html(const CompileReport& report) {
  std::ostringstream html;
  html << "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n<title>kiln report: "
       << escape_html(report.model) << "</title>\n<style>" << kReportStyle << "</style>\n</head>\n<body>\n";
  html << "<h1>kiln report: <code>" << escape_html(report.model) << "</code></h1>\n<nav>\n<ul>\n";
  for (const SectionTitle& s : kSections) html << "<li><a href=\"#" << s.id << "\">" << s.title << "</a></li>\n";
  html << "</ul>\n<p id=\"toggles\" hidden><button id=\"expand-all\" type=\"button\">expand all</button> "
          "<button id=\"collapse-all\" type=\"button\">collapse all</button></p>\n</nav>\n";
  compile_section(html, report);
  guards_section(html, report);
  times_section(html, report);
  stages_section(html, report);
  kernels_section(html, report);
  memory_section(html, report);
  warnings_section(html, report);
  html << "<script>" << kReportScript << "</script>\n</body>\n</html>\n";
  return html.str();
}

}  // namespace kiln::compiler
