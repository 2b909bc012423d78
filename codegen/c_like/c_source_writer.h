// CSourceWriter: indented lines of C-like source, shared by the C++ and CUDA backends.
#pragma once

#include <sstream>
#include <string>
#include <string_view>

namespace kiln::codegen {

class CSourceWriter {
 public:
  void line(const std::string& text) {
    for (int i = 0; i < indent_; ++i) out_ << "  ";
    out_ << text << "\n";
  }
  // `text {` and one level deeper; close() ends the block.
  void open(const std::string& text) {
    line(text + " {");
    ++indent_;
  }
  void close(const std::string& suffix = "") {
    --indent_;
    line("}" + suffix);
  }
  void raw(std::string_view text) { out_ << text; }
  std::string str() const { return out_.str(); }

 private:
  std::ostringstream out_;
  int indent_ = 0;
};

}  // namespace kiln::codegen
