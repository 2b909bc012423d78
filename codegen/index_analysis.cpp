// Affine forms of index expressions (codegen/index_analysis.h).
#include "codegen/index_analysis.h"

#include <algorithm>
#include <map>
#include <set>
#include <string>

#include "kiln/error.h"

namespace kiln::codegen {

namespace {

std::string symbol_name(const SymInt& var) {
  KILN_CHECK(var.is_symbol(), "index analysis: ", var.to_string(), " is not a bare symbol");
  return var.free_symbols().front();
}

}  // namespace

std::optional<AffineIndex> affine_form(const SymInt& index, const std::vector<SymInt>& vars) {
  std::vector<std::string> names;
  std::map<std::string, SymInt> zeros;
  for (const SymInt& var : vars) {
    names.push_back(symbol_name(var));
    zeros[names.back()] = SymInt(0);
  }
  AffineIndex form;
  form.offset = index.substitute(zeros);
  SymInt rebuilt = form.offset;
  std::set<std::string> var_names(names.begin(), names.end());
  for (size_t i = 0; i < vars.size(); ++i) {
    std::map<std::string, SymInt> unit = zeros;
    unit[names[i]] = SymInt(1);
    SymInt coefficient = index.substitute(unit) - form.offset;
    for (const std::string& symbol : coefficient.free_symbols())
      if (var_names.count(symbol)) return std::nullopt;
    rebuilt = rebuilt + coefficient * vars[i];
    form.coefficients.push_back(std::move(coefficient));
  }
  // The offset must not hide a var either (x0 // x0 folds to 1, but nothing else should leave one).
  for (const std::string& symbol : form.offset.free_symbols())
    if (var_names.count(symbol)) return std::nullopt;
  if (!(rebuilt == index)) return std::nullopt;
  return form;
}

bool depends_on(const SymInt& index, const SymInt& var) {
  std::string name = symbol_name(var);
  std::vector<std::string> symbols = index.free_symbols();
  return std::find(symbols.begin(), symbols.end(), name) != symbols.end();
}

}  // namespace kiln::codegen
