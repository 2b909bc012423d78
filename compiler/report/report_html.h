// `kiln report`'s page: one self-contained HTML file (the style and a small script inline; no URL,
// nothing fetched) showing a CompileReport (compiler/report/compile_report.h), in sections whose
// ids are fixed:
//   compile   the model and the compile: file, target, options, Kiln version, cache key and
//             hit or miss, total time
//   guards    what the compiled artifact checks on every call
//   times     the driver's stages and the graph stages, with their times
//   stages    each stage (section stage-NAME): its text as `kiln dump --stage NAME` prints it,
//             and the graph stages also as pictures (Graphviz's dot)
//   kernels   each kernel (section kernel-NAME): what it fuses, its loops, its generated code
//   memory    the memory plan as a picture, with the peak
//   warnings  fallbacks and what the compile warned about
// The script only adds "expand all / collapse all" and, once it has run, an element with id
// report-script-ran (the browser test's sign that the page's script ran without an exception).
#pragma once

#include <string>

#include "compiler/report/compile_report.h"

namespace kiln::compiler {

std::string render_report_html(const CompileReport& report);

}  // namespace kiln::compiler
