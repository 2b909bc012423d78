// Reading an .onnx file into a validated ModelProto, through ONNX's own C++ library:
//  1. the file exists and is not empty; protobuf parses it; it has a graph, an ir_version and
//     an opset for the default domain ("" or "ai.onnx") — a truncated file or garbage fails
//     here, with a message naming the file;
//  2. it imports the default domain, or only ai.onnx.ml / ai.onnx.preview.training (then Kiln's
//     structural check applies, and no shape inference); the default domain's opset is within what Kiln imports (kMinOnnxOpset..kMaxOnnxOpset); an
//     older one (1..10) is first checked by ONNX's checker, then converted to kMinOnnxOpset by
//     ONNX's own version converter (onnx::version_conversion::ConvertVersion), and the model
//     remembers the opset it came with (converted_from_opset; kiln dump --show-source shows it
//     with each node's source);
//  3. for opsets up to 17, onnx::checker::check_model passes. Debian's ONNX is 1.12, which
//     knows IR version 8 and opsets up to 17: a newer IR version is checked as IR 8 (the
//     structure the checker knows is unchanged; element types added since are refused by the
//     importer). Its checker rejects ops and attributes added in opsets 18-21 (Gelu, Split's
//     num_outputs, ...), so for those opsets Kiln checks the graph's structure itself: every
//     node input is a graph input, an initializer or an earlier node's output, no value is
//     defined twice, every graph output is defined (attributes are checked by the converters).
// Shape inference (infer_onnx_shapes) is separate so that the importer can first report
// unsupported ops: it runs only where the library knows the opset (<= 17) and adds each
// intermediate value's type to graph().value_info().
#pragma once

#include <cstdint>
#include <memory>
#include <set>
#include <string>

#include <onnx/onnx_pb.h>

namespace kiln::frontends {

inline constexpr int64_t kMinOnnxOpset = 11;
inline constexpr int64_t kMaxOnnxOpset = 21;
// The newest opset Debian's ONNX 1.12 checks and infers shapes for.
inline constexpr int64_t kMaxOnnxOpsetWithShapeInference = 17;
// The domains besides the default one whose ops the importer converts (a model may import them
// without the default domain).
inline const std::set<std::string> kOtherOnnxDomains = {"ai.onnx.ml", "ai.onnx.preview.training"};

struct OnnxModel {
  std::string path;
  std::shared_ptr<onnx::ModelProto> proto;
  int64_t opset = 0;  // of the default domain
  int64_t converted_from_opset = 0;  // the file's opset when the version converter raised it to `opset`
  bool other_domains_only = false;   // no default-domain opset: ops of kOtherOnnxDomains only
  bool shapes_inferred = false;
};

// Steps 1-3 above; throws kiln::Error naming the file (and the node at fault).
OnnxModel read_onnx_model(const std::string& path);

// ONNX shape inference (strict: a node whose types do not fit its schema is an error naming
// the node). Does nothing for opsets the library does not know; sets shapes_inferred.
void infer_onnx_shapes(OnnxModel& model);

}  // namespace kiln::frontends
