// A compiled graph as a VM instruction. See compiler/vm_graph.h.
#include "compiler/vm_graph.h"

#include <map>

#include "kiln/error.h"

namespace kiln::compiler {

void submit_graph_run(vm::InstructionsBuilder& builder, vm::Stream& stream, std::string name,
                      std::shared_ptr<Executable> executable, std::vector<std::pair<std::string, VmTensor>> inputs,
                      std::vector<VmTensor> outputs, int num_threads) {
  KILN_CHECK(executable != nullptr, "submit_graph_run: no executable");
  std::vector<vm::BufferPtr> read, written;
  for (const auto& [placeholder, tensor] : inputs) read.push_back(tensor.buffer);
  for (const VmTensor& tensor : outputs) written.push_back(tensor.buffer);
  builder.run_graph(stream, name, read, written, {},
                    [name, executable, inputs = std::move(inputs), outputs = std::move(outputs),
                     num_threads](vm::CallContext& call) {
                      std::map<std::string, Tensor> fed;
                      for (size_t i = 0; i < inputs.size(); ++i)
                        fed[inputs[i].first] = call.input_tensor(i, inputs[i].second.sizes, inputs[i].second.dtype);
                      std::vector<Tensor> results = executable->run(fed, num_threads);
                      if (results.size() != outputs.size())
                        fail("graph run '", name, "': the graph returns ", results.size(), " outputs, ",
                             outputs.size(), " VM buffers were given for them");
                      for (size_t o = 0; o < outputs.size(); ++o) {
                        const VmTensor& out = outputs[o];
                        if (results[o].dtype() != out.dtype || results[o].sizes() != out.sizes)
                          fail("graph run '", name, "': output ", o, " is ", dtype_name(results[o].dtype()),
                               sizes_to_string(results[o].sizes()), ", its VM buffer was given for ",
                               dtype_name(out.dtype), sizes_to_string(out.sizes));
                        call.output_tensor(o, out.sizes, out.dtype).copy_from(results[o]);
                      }
                    });
}

}  // namespace kiln::compiler
