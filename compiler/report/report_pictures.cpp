// The pictures of `kiln report`'s page. See compiler/report/report_pictures.h.
#include "compiler/report/report_pictures.h"

#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "compiler/child_process.h"

namespace kiln::compiler {

namespace {

namespace fs = std::filesystem;

std::string read_scratch_file(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

std::string replace_in_svg(std::string text, const std::string& from, const std::string& to) {
  for (size_t at = text.find(from); at != std::string::npos; at = text.find(from, at + to.size())) text.replace(at, from.size(), to);
  return text;
}

// A scratch folder of its own, removed with it.
class ReportScratchFolder {
 public:
  ReportScratchFolder() {
    static std::atomic<int> counter{0};
    path_ = fs::temp_directory_path() / ("kiln-report-" + std::to_string(::getpid()) + "-" + std::to_string(counter++));
    fs::create_directories(path_);
  }
  ~ReportScratchFolder() {
    std::error_code ignored;
    fs::remove_all(path_, ignored);
  }
  ReportScratchFolder(const ReportScratchFolder&) = delete;
  ReportScratchFolder& operator=(const ReportScratchFolder&) = delete;
  const fs::path& path() const { return path_; }

 private:
  fs::path path_;
};

std::string svg_number(double value) {
  char text[32];
  std::snprintf(text, sizeof text, "%.1f", value);
  return text;
}

// A fill colour per buffer, spread around the hue circle.
std::string memory_bar_colour(size_t index) { return "hsl(" + std::to_string((index * 137) % 360) + ", 60%, 72%)"; }

}  // namespace

std::string escape_html(const std::string& text) {
  std::string out;
  out.reserve(text.size());
  for (char c : text) {
    switch (c) {
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '"': out += "&quot;"; break;
      case '\'': out += "&#39;"; break;
      default: out += c;
    }
  }
  return out;
}

GraphPicture graphviz_svg(const std::string& dot, const std::string& id_prefix) {
  ReportScratchFolder scratch;
  std::ofstream(scratch.path() / "graph.dot", std::ios::binary) << dot;
  int status = run_child_process({"dot", "-Tsvg", "graph.dot", "-o", "graph.svg"}, scratch.path(), scratch.path() / "dot.log");
  if (status == 127) return {"", "Graphviz's dot is not installed (install graphviz): the graph is shown as text only"};
  std::string svg = read_scratch_file(scratch.path() / "graph.svg");
  size_t start = svg.find("<svg");
  if (status != 0 || start == std::string::npos) {
    std::string log = read_scratch_file(scratch.path() / "dot.log");
    log = log.substr(0, log.find('\n'));
    return {"", "Graphviz's dot failed (exit " + std::to_string(status) + (log.empty() ? "" : ": " + log) + ")"};
  }
  svg = svg.substr(start);
  // Inline SVG in HTML needs no namespace declarations (and the page names no URL).
  svg = replace_in_svg(svg, " xmlns=\"http://www.w3.org/2000/svg\"", "");
  svg = replace_in_svg(svg, " xmlns:xlink=\"http://www.w3.org/1999/xlink\"", "");
  // Each picture's element ids are its own: several sit in one page.
  svg = replace_in_svg(svg, " id=\"", " id=\"" + id_prefix + "-");
  return {svg, ""};
}

std::string memory_plan_svg(const MemoryReport& memory) {
  const double left = 60, top = 20, column = std::max(24.0, std::min(80.0, 900.0 / double(std::max<size_t>(memory.kernels.size(), 1))));
  const double height = 320, width = column * double(std::max<size_t>(memory.kernels.size(), 1));
  const double peak = double(std::max<int64_t>(memory.peak_bytes, 1));
  const double scale = height / peak;
  std::ostringstream svg;
  svg << "<svg class=\"memory-plan\" width=\"" << svg_number(left + width + 20) << "\" height=\"" << svg_number(top + height + 70)
      << "\" viewBox=\"0 0 " << svg_number(left + width + 20) << " " << svg_number(top + height + 70) << "\" role=\"img\">\n";
  svg << "<title>memory plan: workspace offsets over kernels</title>\n";
  // Axes: kernels along x, bytes down y (offset 0 at the top, as an address grows).
  svg << "<rect x=\"" << left << "\" y=\"" << top << "\" width=\"" << svg_number(width) << "\" height=\"" << height
      << "\" fill=\"#f8f9fa\" stroke=\"#adb5bd\"/>\n";
  for (size_t k = 0; k < memory.kernels.size(); ++k) {
    double x = left + column * double(k);
    svg << "<text x=\"" << svg_number(x + column / 2) << "\" y=\"" << svg_number(top + height + 14)
        << "\" font-size=\"10\" text-anchor=\"middle\">" << k << "<title>" << escape_html(memory.kernels[k]) << "</title></text>\n";
  }
  svg << "<text x=\"" << svg_number(left + width / 2) << "\" y=\"" << svg_number(top + height + 32)
      << "\" font-size=\"11\" text-anchor=\"middle\">kernel (the order the wrapper runs them)</text>\n";
  svg << "<text x=\"" << svg_number(left - 6) << "\" y=\"" << svg_number(top + 4) << "\" font-size=\"10\" text-anchor=\"end\">0</text>\n";
  svg << "<text x=\"" << svg_number(left - 6) << "\" y=\"" << svg_number(top + height) << "\" font-size=\"10\" text-anchor=\"end\">"
      << memory.peak_bytes << "</text>\n";
  svg << "<text x=\"" << svg_number(left - 6) << "\" y=\"" << svg_number(top + height + 12)
      << "\" font-size=\"10\" text-anchor=\"end\">bytes</text>\n";
  for (size_t i = 0; i < memory.blocks.size(); ++i) {
    const MemoryBlock& b = memory.blocks[i];
    double x = left + column * double(b.first_kernel) + 1;
    double w = column * double(b.last_kernel - b.first_kernel + 1) - 2;
    double y = top + double(b.offset) * scale;
    double h = std::max(1.0, double(b.bytes) * scale);
    svg << "<g class=\"buffer\"><rect x=\"" << svg_number(x) << "\" y=\"" << svg_number(y) << "\" width=\"" << svg_number(w)
        << "\" height=\"" << svg_number(h) << "\" fill=\"" << memory_bar_colour(i) << "\" stroke=\"#495057\" stroke-width=\"0.5\"/>";
    if (h >= 11 && w >= 7.0 * double(b.buffer.size()))
      svg << "<text x=\"" << svg_number(x + 3) << "\" y=\"" << svg_number(y + std::min(h, 24.0) / 2 + 4) << "\" font-size=\"10\">"
          << escape_html(b.buffer) << "</text>";
    svg << "<title>" << escape_html(b.buffer + " " + b.type + ": offset " + std::to_string(b.offset) + ", " +
                                    std::to_string(b.bytes) + " bytes, alive in kernels " + std::to_string(b.first_kernel) +
                                    ".." + std::to_string(b.last_kernel))
        << "</title></g>\n";
  }
  svg << "</svg>\n";
  return svg.str();
}

}  // namespace kiln::compiler
