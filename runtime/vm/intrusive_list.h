// IntrusiveList: a doubly linked list whose links live inside the listed objects (OneFlow's
// intrusive lists). The VM keeps instructions and dependence accesses on such lists so that
// moving an instruction from list to list, or erasing it from the middle, allocates nothing and
// costs O(1). An object can sit on one list per ListHook member it has. Not thread-safe.
#pragma once

#include <cstddef>

#include "kiln/error.h"

namespace kiln::vm {

struct ListHook {
  ListHook* prev = nullptr;
  ListHook* next = nullptr;
  void* owner = nullptr;  // the object this hook is a member of, set when linked
  bool linked() const { return next != nullptr; }
};

template <typename T, ListHook T::*Hook>
class IntrusiveList {
 public:
  IntrusiveList() { head_.prev = head_.next = &head_; }
  IntrusiveList(const IntrusiveList&) = delete;
  IntrusiveList& operator=(const IntrusiveList&) = delete;

  bool empty() const { return head_.next == &head_; }
  size_t size() const { return size_; }
  T* front() const { return empty() ? nullptr : owner_of(head_.next); }
  T* back() const { return empty() ? nullptr : owner_of(head_.prev); }
  // The element after `item`, or nullptr when `item` is the last.
  T* next(const T* item) const {
    const ListHook* hook = &(item->*Hook);
    return hook->next == &head_ ? nullptr : owner_of(hook->next);
  }

  void push_back(T* item) { insert_before(&head_, item); }
  void push_front(T* item) { insert_before(head_.next, item); }
  void erase(T* item) {
    ListHook& hook = item->*Hook;
    KILN_CHECK(hook.linked(), "erasing an item that is on no list");
    hook.prev->next = hook.next;
    hook.next->prev = hook.prev;
    hook.prev = hook.next = nullptr;
    --size_;
  }
  T* pop_front() {
    T* item = front();
    if (item != nullptr) erase(item);
    return item;
  }
  // Moves every element of `other` to the end of this list, keeping their order.
  void splice_back(IntrusiveList& other) {
    if (other.empty()) return;
    ListHook* first = other.head_.next;
    ListHook* last = other.head_.prev;
    first->prev = head_.prev;
    head_.prev->next = first;
    last->next = &head_;
    head_.prev = last;
    size_ += other.size_;
    other.head_.prev = other.head_.next = &other.head_;
    other.size_ = 0;
  }

 private:
  static T* owner_of(const ListHook* hook) { return static_cast<T*>(hook->owner); }
  void insert_before(ListHook* position, T* item) {
    ListHook& hook = item->*Hook;
    KILN_CHECK(!hook.linked(), "an item is already on a list");
    hook.owner = item;
    hook.prev = position->prev;
    hook.next = position;
    position->prev->next = &hook;
    position->prev = &hook;
    ++size_;
  }

  ListHook head_;  // sentinel of a circular list
  size_t size_ = 0;
};

}  // namespace kiln::vm
