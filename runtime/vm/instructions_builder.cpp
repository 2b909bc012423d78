// InstructionsBuilder: one policy per call, checked, appended to the list.
#include "runtime/vm/instructions_builder.h"

#include "kiln/error.h"
#include "runtime/vm/barrier.h"
#include "runtime/vm/memory_instructions.h"
#include "runtime/vm/virtual_machine.h"

namespace kiln::vm {

void InstructionsBuilder::check_stream(const Stream& stream) const {
  if (!vm_.owns(stream)) fail("stream '", stream.name(), "' belongs to another VM");
}

void InstructionsBuilder::check_buffers(BufferList buffers) const {
  for (const BufferPtr& buffer : buffers) {
    if (buffer == nullptr) fail("a null buffer was passed to the VM");
    if (!vm_.owns(buffer->home_stream())) {
      fail(buffer->describe(), " belongs to another VM (its home stream is '",
           buffer->home_stream().name(), "')");
    }
  }
}

void InstructionsBuilder::append(Stream& stream, std::unique_ptr<InstructionPolicy> policy) {
  check_stream(stream);
  KILN_CHECK(policy != nullptr);
  instructions_.push_back(PendingInstruction{&stream, std::move(policy)});
}

void InstructionsBuilder::kernel(Stream& stream, std::string name, BufferList inputs,
                                 BufferList outputs, CallFn fn) {
  check_buffers(inputs);
  check_buffers(outputs);
  append(stream, std::make_unique<KernelCall>(std::move(name), inputs, outputs, std::move(fn)));
}

void InstructionsBuilder::run_graph(Stream& stream, std::string name, BufferList inputs,
                                    BufferList outputs, BufferList parameters, CallFn fn) {
  check_buffers(inputs);
  check_buffers(outputs);
  check_buffers(parameters);
  append(stream, std::make_unique<GraphRun>(std::move(name), inputs, outputs, parameters,
                                            std::move(fn)));
}

void InstructionsBuilder::allocate(const BufferPtr& buffer) {
  check_buffers({buffer});
  append(buffer->home_stream(), std::make_unique<AllocateBuffer>(buffer));
}

void InstructionsBuilder::release(const BufferPtr& buffer) {
  check_buffers({buffer});
  append(buffer->home_stream(), std::make_unique<ReleaseBuffer>(buffer));
}

void InstructionsBuilder::host_callback(const BufferPtr& buffer, AccessKind kind, HostFn fn,
                                        HostDoneFn done) {
  check_buffers({buffer});
  append(vm_.host_stream(),
         std::make_unique<HostCallback>(buffer, kind, std::move(fn), std::move(done)));
}

void InstructionsBuilder::record_event(Stream& stream, const EventPtr& event) {
  append(stream, std::make_unique<RecordEvent>(event));
}

void InstructionsBuilder::wait_event(Stream& stream, const EventPtr& event) {
  append(stream, std::make_unique<WaitEvent>(event));
}

void InstructionsBuilder::barrier(std::function<void()> fn) {
  append(vm_.host_stream(), std::make_unique<Barrier>(std::move(fn)));
}

}  // namespace kiln::vm
