// The pictures of `kiln report`'s page, as inline SVG: each graph stage drawn by Graphviz's
// `dot` (run as a child process; Kiln already writes the dot text, `kiln dump --format dot`, and
// dot's layered layout of a few hundred nodes is better than anything small we could write), and
// the memory plan drawn here: each workspace buffer a bar over the kernels it is alive across
// (x) at its byte offset (y).
#pragma once

#include <string>

#include "compiler/report/compile_report.h"

namespace kiln::compiler {

// What running `dot -Tsvg` on some dot text gave: the <svg> element (without the XML prolog, so it
// can sit inside HTML; its element ids start with `id_prefix`, so that several pictures share a
// page), or why there is none (`dot` not installed, or it failed).
struct GraphPicture {
  std::string svg;
  std::string problem;  // one line when svg is empty
};
GraphPicture graphviz_svg(const std::string& dot, const std::string& id_prefix);

// The memory plan as an <svg> element: bars over kernel index and byte offset, with a tooltip
// (<title>) per buffer and the peak marked. An empty plan draws an empty axis.
std::string memory_plan_svg(const MemoryReport& memory);

// `text` with &, <, >, " and ' as HTML character references.
std::string escape_html(const std::string& text);

}  // namespace kiln::compiler
