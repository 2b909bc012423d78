// Record and wait: an event's dependence object, written by records and read by waits.
#include "runtime/vm/event.h"

#include "kiln/error.h"

namespace kiln::vm {

RecordEvent::RecordEvent(EventPtr event) : event_(std::move(event)) {
  if (event_ == nullptr) fail("record event: the event is null");
  add_event_operand(event_->dependence(), AccessKind::write);
}

void RecordEvent::compute(ExecuteContext& context) {
  (void)context;
  event_->mark_recorded();
}

WaitEvent::WaitEvent(EventPtr event) : event_(std::move(event)) {
  if (event_ == nullptr) fail("wait event: the event is null");
  add_event_operand(event_->dependence(), AccessKind::read);
}

}  // namespace kiln::vm
