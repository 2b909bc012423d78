// `--batch-chunks N` (kiln run, kiln bench): a count past 64 is refused as a usage error; chunks
// that a model cannot run as (they do not divide its batch) leave its batch whole, with a warning
// that says why, and the results are still right.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <fstream>
#include <string>

#include "cli_runner.h"

namespace kiln {
namespace {

using cli_test::CliResult;
using ::testing::HasSubstr;

class BatchChunksFlag : public cli_test::KilnCliTest {
 protected:
  // A relu of a [4, 3] batch, as IR text.
  std::string model() const {
    const std::string path = (dir_ / "relu.kiln").string();
    std::ofstream(path) << "graph():\n"
                           "    %x : f32[4, 3] = placeholder[target=x]\n"
                           "    %y = call_function[target=relu](args = (%x,), kwargs = {})\n"
                           "    return (y,)\n";
    return path;
  }
};

TEST_F(BatchChunksFlag, MoreThan64ChunksAreAUsageError) {
  for (const char* command : {"run", "bench"}) {
    SCOPED_TRACE(command);
    cli_test::expect_usage_error(kiln(std::string(command) + " " + model() + " --target cpu --random-inputs 0 --batch-chunks 65"),
                                 "--batch-chunks");
  }
}

TEST_F(BatchChunksFlag, ChunksThatDoNotDivideTheBatchLeaveItWholeWithAWarning) {
  CliResult result = kiln("run " + model() + " --target cpu --check --random-inputs 0 --batch-chunks 3");
  EXPECT_EQ(result.status, 0) << result.err;
  EXPECT_THAT(result.err, HasSubstr("kiln: warning: the batch runs whole, not in the 3 chunks asked for: 3 chunks do not "
                                    "divide its batch of 4"));
  EXPECT_THAT(result.out, HasSubstr("check y: max abs err 0"));
}

}  // namespace
}  // namespace kiln
