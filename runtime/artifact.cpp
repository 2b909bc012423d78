// What every loaded artifact shares: the fallback callback's checks. See runtime/artifact.h.
#include "runtime/artifact.h"

namespace kiln {

void call_fallback_handler(const FallbackHandler& handler, int fallback_index, const std::vector<Tensor>& inputs,
                           const std::vector<Tensor>& outputs) {
  if (!handler) fail("no fallback handler was given");
  std::vector<Tensor> results = outputs;
  handler(fallback_index, inputs, results);
  if (results.size() != outputs.size())
    fail("the handler left ", results.size(), " outputs, the node has ", outputs.size());
  for (size_t i = 0; i < results.size(); ++i) {
    if (results[i].defined() && results[i].data_ptr() == outputs[i].data_ptr()) continue;  // written in place
    if (!results[i].defined()) fail("the handler left output #", i, " undefined");
    if (results[i].sizes() != outputs[i].sizes() || results[i].dtype() != outputs[i].dtype())
      fail("the handler returned output #", i, " as ", dtype_name(results[i].dtype()), sizes_to_string(results[i].sizes()),
           ", expected ", dtype_name(outputs[i].dtype()), sizes_to_string(outputs[i].sizes()));
    outputs[i].copy_from(results[i]);
  }
}

}  // namespace kiln
