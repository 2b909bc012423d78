// HostCallback: run the host function, and say how it went to whoever waits.
#include "runtime/vm/host_callback.h"

#include "kiln/error.h"
#include "runtime/vm/errors.h"

namespace kiln::vm {

HostCallback::HostCallback(const BufferPtr& buffer, AccessKind kind, HostFn fn, HostDoneFn done)
    : fn_(std::move(fn)), done_(std::move(done)) {
  if (!fn_) fail("a host callback has no function to call");
  add_operand(buffer, kind);
}

void HostCallback::execute(ExecuteContext& context) {
  std::exception_ptr own_error;  // raised by this callback
  std::exception_ptr inherited;  // left on the buffer by an earlier failed instruction
  clear_failures_of_allocated();
  inherited = operand_failure();
  if (inherited == nullptr) {  // else skipped: the buffer's contents are invalid
    if (prepare_error_ != nullptr) {
      own_error = attribute_failure(context.describe(*this), prepare_error_);
    } else {
      try {
        fn_(*operands_[0].storage);
      } catch (...) {
        own_error = attribute_failure(context.describe(*this), std::current_exception());
      }
    }
  }
  if (own_error != nullptr) mark_written_failed(own_error);
  drop_memory();
  if (done_) {
    done_(own_error != nullptr ? own_error : inherited);
  } else if (own_error != nullptr) {
    context.report(own_error);
  }
}

}  // namespace kiln::vm
