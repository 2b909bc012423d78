// Dependence: OneFlow's linking rules, checked on one dependence object in isolation.
#include "runtime/vm/dependence.h"

#include <gtest/gtest.h>

#include <memory>
#include <vector>

#include "runtime/vm/instruction.h"
#include "runtime/vm/stream.h"

namespace kiln::vm {
namespace {

class Nothing final : public InstructionPolicy {
 public:
  const char* kind() const override { return "nothing"; }
};

class DependenceRules : public ::testing::Test {
 protected:
  DependenceRules()
      : stream_("s", 0, std::make_unique<CpuStreamPolicy>(),
                std::make_shared<BinAllocator>(std::make_shared<CpuMemoryBackend>())) {
    for (int i = 0; i < 8; ++i) {
      instructions_.push_back(std::make_unique<Instruction>(stream_, std::make_unique<Nothing>()));
      accesses_[i].instruction = instructions_.back().get();
      accesses_[i].dependence = &dependence_;
    }
  }
  ~DependenceRules() override {
    for (auto& access : accesses_) dependence_.forget(access);
  }

  // Consumes access `i` as `kind`; answers the indices of the instructions it links after.
  std::vector<int> consume(int i, AccessKind kind) {
    accesses_[i].kind = kind;
    std::vector<int> linked;
    dependence_.consume(accesses_[i], [&](Instruction* earlier) {
      for (int k = 0; k < 8; ++k) {
        if (instructions_[k].get() == earlier) linked.push_back(k);
      }
    });
    return linked;
  }

  Stream stream_;
  Dependence dependence_;
  std::vector<std::unique_ptr<Instruction>> instructions_;
  DependenceAccess accesses_[8];
};

using Links = std::vector<int>;

TEST_F(DependenceRules, AReadLinksAfterTheLastWriteOnly) {
  EXPECT_EQ(consume(0, AccessKind::write), Links{});
  EXPECT_EQ(consume(1, AccessKind::read), Links{0});
  EXPECT_EQ(consume(2, AccessKind::read), Links{0});  // not after the other reader
}

TEST_F(DependenceRules, AWriteLinksAfterEveryEarlierAccessThenStandsAlone) {
  consume(0, AccessKind::write);
  consume(1, AccessKind::read);
  consume(2, AccessKind::read);
  EXPECT_EQ(consume(3, AccessKind::write), (Links{0, 1, 2}));
  EXPECT_EQ(consume(4, AccessKind::read), Links{3});
  EXPECT_EQ(consume(5, AccessKind::write), (Links{3, 4}));  // not 0-2: 3 already follows them
}

TEST_F(DependenceRules, ReleasedAccessesOrderNothing) {
  consume(0, AccessKind::write);
  consume(1, AccessKind::read);
  dependence_.forget(accesses_[0]);                    // the writer was released
  EXPECT_EQ(consume(2, AccessKind::read), Links{});    // readers run together
  dependence_.forget(accesses_[1]);
  EXPECT_EQ(consume(3, AccessKind::write), Links{2});  // the write follows the live reader
}

TEST_F(DependenceRules, ReadsWithNoEarlierWriteAreFree) {
  EXPECT_EQ(consume(0, AccessKind::read), Links{});
  EXPECT_EQ(consume(1, AccessKind::read), Links{});
  EXPECT_EQ(consume(2, AccessKind::write), (Links{0, 1}));
}

}  // namespace
}  // namespace kiln::vm
