// Dependence: the object that orders the instructions touching one thing (OneFlow's
// "DependenceObject", once "MirroredObject"). Every buffer, every event and every stream owns
// one. It lists the accesses of lively instructions in submission order, and the scheduler
// links each new access after earlier ones by OneFlow's rules:
//  - a write links after every earlier access, then leaves only itself on the list;
//  - a read links after the write at the front of the list, if any, so readers run together.
// An instruction consumes its stream's order dependence first (as a write), then its writes,
// then its reads. Released instructions take their accesses off the lists.
// Touched by the scheduler thread only.
#pragma once

#include <cstdint>

#include "runtime/vm/intrusive_list.h"

namespace kiln::vm {

class Instruction;
class Dependence;

enum class AccessKind : uint8_t { read, write };

// One instruction's access to one dependence; lives inside the instruction.
struct DependenceAccess {
  Instruction* instruction = nullptr;
  Dependence* dependence = nullptr;
  AccessKind kind = AccessKind::read;
  ListHook hook;  // on dependence->accesses while the access may still order later ones
};

class Dependence {
 public:
  Dependence() = default;
  Dependence(const Dependence&) = delete;
  Dependence& operator=(const Dependence&) = delete;

  // Appends `access` and calls link(earlier_instruction) for every instruction it must follow.
  template <typename Link>
  void consume(DependenceAccess& access, Link&& link) {
    if (access.kind == AccessKind::write) {
      while (DependenceAccess* earlier = accesses_.pop_front()) link(earlier->instruction);
    } else if (DependenceAccess* first = accesses_.front();
               first != nullptr && first->kind == AccessKind::write) {
      link(first->instruction);
    }
    accesses_.push_back(&access);
  }
  // Takes `access` off the list if a later write has not already done so.
  void forget(DependenceAccess& access) {
    if (access.hook.linked()) accesses_.erase(&access);
  }
  bool idle() const { return accesses_.empty(); }

 private:
  IntrusiveList<DependenceAccess, &DependenceAccess::hook> accesses_;
};

}  // namespace kiln::vm
