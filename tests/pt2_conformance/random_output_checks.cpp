// The property checks of random and uninitialized outputs (see random_output_checks.h).
#include "tests/pt2_conformance/random_output_checks.h"

#include <algorithm>
#include <cmath>
#include <optional>
#include <sstream>
#include <vector>

#include "tests/pt2_conformance/pt2_case_run.h"

namespace kiln::pt2_conformance {

namespace {

// The tolerance of a value against an affine map fitted from float32 data.
constexpr double kMapTolerance = 1e-4;

std::string shape_and_dtype_difference(const Tensor& expected, const Tensor& actual) {
  std::ostringstream out;
  DType expected_dtype = expected.dtype() == DType::f32 && actual.dtype() == DType::bf16 ? DType::bf16 : expected.dtype();
  if (expected_dtype != actual.dtype()) out << "dtype " << dtype_name(actual.dtype()) << ", expected " << dtype_name(expected.dtype());
  else if (expected.sizes() != actual.sizes())
    out << "shape " << sizes_to_string(actual.sizes()) << ", expected " << sizes_to_string(expected.sizes());
  return out.str();
}

std::vector<double> values_of(const Tensor& tensor) {
  Tensor t = tensor.contiguous();
  std::vector<double> values(static_cast<size_t>(t.numel()));
  for (int64_t i = 0; i < t.numel(); ++i) values[size_t(i)] = t.flat_double(i);
  return values;
}

// The first element (in words) whose value fails `ok`, else empty.
template <typename Predicate>
std::string every_value(const Tensor& actual, const char* property, Predicate ok) {
  std::vector<double> values = values_of(actual);
  for (size_t i = 0; i < values.size(); ++i)
    if (!ok(values[i])) {
      std::ostringstream out;
      out.precision(9);
      out << "element " << i << " is " << values[i] << ", not " << property;
      return out.str();
    }
  return "";
}

// The sample's one input, checked to have the output's shape; nullopt (with `problem` set) else.
std::optional<std::vector<double>> the_input(const std::map<std::string, Tensor>& inputs, const Tensor& actual, std::string& problem) {
  if (inputs.size() != 1) {
    problem = "the property check needs the sample's one input, but it has " + std::to_string(inputs.size());
    return std::nullopt;
  }
  const Tensor& input = inputs.begin()->second;
  if (input.sizes() != actual.sizes()) {
    problem = "the input's shape " + sizes_to_string(input.sizes()) + " is not the output's " + sizes_to_string(actual.sizes());
    return std::nullopt;
  }
  return values_of(input);
}

struct AffineMap {
  double scale = 0, shift = 0;
};

bool follows(const AffineMap& map, const std::vector<double>& x, const std::vector<double>& y, size_t begin, size_t count) {
  for (size_t i = begin; i < begin + count; ++i)
    if (std::fabs(y[i] - (map.scale * x[i] + map.shift)) > kMapTolerance * (1 + std::fabs(y[i]))) return false;
  return true;
}

// The affine map y = scale * x + shift of one slice, from its smallest and largest x; nullopt
// when the slice's x do not spread enough to determine it.
std::optional<AffineMap> fit(const std::vector<double>& x, const std::vector<double>& y, size_t begin, size_t count) {
  size_t low = begin, high = begin;
  for (size_t i = begin; i < begin + count; ++i) {
    if (x[i] < x[low]) low = i;
    if (x[i] > x[high]) high = i;
  }
  if (count == 0 || x[high] - x[low] < 1e-2) return std::nullopt;
  AffineMap map;
  map.scale = (y[high] - y[low]) / (x[high] - x[low]);
  map.shift = y[low] - map.scale * x[low];
  return map;
}

bool same_map(const AffineMap& a, const AffineMap& b) {
  return std::fabs(a.scale - b.scale) <= kMapTolerance * (1 + std::fabs(b.scale)) &&
         std::fabs(a.shift - b.shift) <= kMapTolerance * (1 + std::fabs(b.shift));
}

std::string feature_mask_difference(const Tensor& expected, const Tensor& actual, const std::map<std::string, Tensor>& inputs) {
  std::string problem;
  std::optional<std::vector<double>> x = the_input(inputs, actual, problem);
  if (!x) return problem;
  if (actual.dim() < 2) return "a feature dropout's output has at least 2 dims (N, C, ...), this one " + sizes_to_string(actual.sizes());
  std::vector<double> theirs = values_of(expected), ours = values_of(actual);
  size_t slices = size_t(actual.size(0) * actual.size(1));
  size_t count = slices == 0 ? 0 : theirs.size() / slices;
  std::vector<AffineMap> maps;  // the maps PyTorch's slices show
  for (size_t s = 0; s < slices; ++s) {
    std::optional<AffineMap> map = fit(*x, theirs, s * count, count);
    if (!map) continue;
    if (!follows(*map, *x, theirs, s * count, count)) return "PyTorch's slice " + std::to_string(s) + " is not an affine map of the input";
    bool known = false;
    for (const AffineMap& m : maps) known = known || same_map(m, *map);
    if (!known) maps.push_back(*map);
  }
  if (maps.empty() || maps.size() > 2)
    return "PyTorch's output shows " + std::to_string(maps.size()) + " maps of the input's (N, C) slices, not one or two";
  std::vector<bool> used(maps.size(), false);
  for (size_t s = 0; s < slices; ++s) {
    bool matched = false;
    for (size_t m = 0; m < maps.size() && !matched; ++m)
      if (follows(maps[m], *x, ours, s * count, count)) matched = used[m] = true;
    if (!matched) return "(N, C) slice " + std::to_string(s) + " is neither kept nor dropped as PyTorch's slices are";
  }
  if (maps.size() == 2 && !(used[0] && used[1])) return "every (N, C) slice takes the same choice; PyTorch's keep some and drop others";
  return "";
}

std::string random_slope_difference(const Tensor& actual, const std::map<std::string, Tensor>& inputs, double atol, double rtol) {
  std::string problem;
  std::optional<std::vector<double>> x = the_input(inputs, actual, problem);
  if (!x) return problem;
  std::vector<double> ours = values_of(actual);
  double lowest = 2, highest = -1;
  size_t negatives = 0;
  for (size_t i = 0; i < ours.size(); ++i) {
    double xi = (*x)[i], y = ours[i];
    std::ostringstream out;
    out.precision(9);
    if (std::isnan(xi)) {
      if (!std::isnan(y)) out << "element " << i << " is " << y << " for a NaN input";
    } else if (xi >= 0) {
      if (std::fabs(y - xi) > atol + rtol * std::fabs(xi)) out << "element " << i << " is " << y << ", expected the input " << xi;
    } else {
      double slope = y / xi;
      if (!(slope >= -1e-6 && slope <= 1 + 1e-6))
        out << "element " << i << " is " << y << ": a slope of " << slope << " on " << xi << ", not in [0, 1]";
      lowest = std::min(lowest, slope), highest = std::max(highest, slope);
      ++negatives;
    }
    if (!out.str().empty()) return out.str();
  }
  if (negatives >= 4 && highest - lowest < 1e-6) return "all " + std::to_string(negatives) + " negative elements have the same slope";
  return "";
}

}  // namespace

OutputCheck output_check(const std::string& op) {
  static const std::map<std::string, OutputCheck> checks = {
      {"empty", OutputCheck::shape_and_dtype},
      {"empty_like", OutputCheck::shape_and_dtype},
      {"empty_permuted", OutputCheck::shape_and_dtype},
      {"empty_strided", OutputCheck::shape_and_dtype},
      {"new_empty", OutputCheck::shape_and_dtype},
      {"new_empty_strided", OutputCheck::shape_and_dtype},
      {"rand_like", OutputCheck::unit_interval},
      {"randn_like", OutputCheck::finite},
      {"bernoulli", OutputCheck::zero_or_one},
      {"nn.functional.dropout2d", OutputCheck::feature_mask},
      {"nn.functional.dropout3d", OutputCheck::feature_mask},
      {"nn.functional.feature_alpha_dropout.with_train", OutputCheck::feature_mask},
      {"nn.functional.rrelu", OutputCheck::random_slope},
  };
  auto found = checks.find(op);
  return found == checks.end() ? OutputCheck::values : found->second;
}

std::string check_output(OutputCheck check, const Tensor& expected, const Tensor& actual,
                         const std::map<std::string, Tensor>& inputs, double atol, double rtol) {
  std::string exact = difference(expected, actual, atol, rtol);
  if (exact.empty() || check == OutputCheck::values) return exact;
  if (std::string problem = shape_and_dtype_difference(expected, actual); !problem.empty()) return problem;
  switch (check) {
    case OutputCheck::unit_interval:
      return every_value(actual, "in [0, 1)", [](double v) { return v >= 0 && v < 1; });
    case OutputCheck::finite:
      return every_value(actual, "finite", [](double v) { return std::isfinite(v); });
    case OutputCheck::zero_or_one:
      return every_value(actual, "0 or 1", [](double v) { return v == 0 || v == 1; });
    case OutputCheck::feature_mask:
      return feature_mask_difference(expected, actual, inputs);
    case OutputCheck::random_slope:
      return random_slope_difference(actual, inputs, atol, rtol);
    default:
      return "";  // shape_and_dtype: checked above
  }
}

}  // namespace kiln::pt2_conformance
