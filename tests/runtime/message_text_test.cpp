// runtime/message_text.h: quoted input escaped onto one printable line and cut to a length,
// kiln::Error applying it to every message, and KILN_CHECK's internal errors naming their source.
// Expected strings are written out by hand.
#include "runtime/message_text.h"

#include <gtest/gtest.h>

#include <string>

#include "kiln/error.h"

namespace kiln {
namespace {

TEST(MessageText, ControlCharactersAndInvalidUtf8AreEscaped) {
  EXPECT_EQ(printable("a\nb\r\tc"), "a\\nb\\r\\tc");
  EXPECT_EQ(printable(std::string("x\x01\x7f\xff", 4)), "x\\x01\\x7f\\xff");
  EXPECT_EQ(printable(std::string("\0", 1)), "\\x00");
  EXPECT_EQ(printable("\xc3\xa9t\xc3\xa9 \xe4\xb8\xad"), "\xc3\xa9t\xc3\xa9 \xe4\xb8\xad");  // valid UTF-8 stays
  EXPECT_EQ(printable("\xc0\xaf"), "\\xc0\\xaf");                                 // an overlong '/'
  EXPECT_EQ(printable("\xed\xa0\x80"), "\\xed\\xa0\\x80");                        // a surrogate
  EXPECT_EQ(printable("\xe4\xb8"), "\\xe4\\xb8");                                 // a truncated sequence
  EXPECT_TRUE(is_printable("plain \xc3\xa9"));
  EXPECT_FALSE(is_printable("two\nlines"));
  EXPECT_FALSE(is_printable("\xff"));
}

TEST(MessageText, ExcerptsAreCutBetweenCharacters) {
  EXPECT_EQ(excerpt("short"), "short");
  EXPECT_EQ(excerpt(std::string(100, '('), 5), "(((((... (100 bytes)");
  EXPECT_EQ(excerpt("\xc3\xa9\xc3\xa9\xc3\xa9", 2), "\xc3\xa9\xc3\xa9... (6 bytes)");
  EXPECT_EQ(excerpt("\n\n\n", 2), "\\n\\n... (3 bytes)");
}

TEST(MessageText, EveryErrorIsOneLine) {
  EXPECT_STREQ(Error("bad input 'a\nb'").what(), "bad input 'a\\nb'");
  EXPECT_STREQ(InternalError("x\x02").what(), "x\\x02");
}

// KILN_CHECK's message names a library source as the source tree does, though the source was
// compiled from its unity batch, which includes it by a path relative to the batch.
TEST(MessageText, AnInternalErrorNamesTheSourceByItsPathInTheTree) {
  auto message = [](const char* file) {
    try {
      detail::internal_failure(file, 12, "x > 0", "x is -1");
    } catch (const InternalError& error) {
      return std::string(error.what());
    }
    return std::string("no error");
  };
  EXPECT_EQ(message("kiln_ir_unity/../../../ir/graph.cpp"), "internal error at ir/graph.cpp:12: check 'x > 0' failed: x is -1");
  EXPECT_EQ(message("ir/graph.h"), "internal error at ir/graph.h:12: check 'x > 0' failed: x is -1");
}

}  // namespace
}  // namespace kiln
