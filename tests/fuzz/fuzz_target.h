// The fuzz targets of Kiln's readers and of the whole `kiln run` path, and the contract each
// input is held to. A target is a function from bytes to nothing; for every input it must
//  - return normally (the input was read, and whatever property the target checks held), or
//  - throw one kiln::Error whose message is one printable line of at most kMaxMessageBytes
//    that names the file it read (kiln/error.h: what a user sees with exit status 1).
// Anything else is a bug: an InternalError (exit status 2), any other exception, a property
// that failed (FuzzPropertyFailure: print(parse(print(g))) differs, a reader accepts what it
// wrote back differently), or a crash, a leak or undefined behaviour the sanitizers catch.
//
// The same targets run three ways:
//  - under libFuzzer (tests/fuzz/libfuzzer_main.cpp, one executable per target, built with
//    -DKILN_FUZZ=ON by clang; scripts/fuzz TARGET [SECONDS]), where a bug aborts;
//  - in the normal test suites (corpus_replay_test.cpp), which replay every committed input of
//    tests/fuzz/corpus/<target>/ and tests/fuzz/regressions/<target>/ through check_fuzz_input;
//  - from a test that builds one input in code (the regression tests of the readers' suites).
#pragma once

#include <cstddef>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

namespace kiln::fuzz {

// A property of a target that an input broke (a bug, though no exception said so).
class FuzzPropertyFailure : public std::logic_error {
 public:
  using std::logic_error::logic_error;
};

struct FuzzTarget {
  std::string name;            // "text_parser": the folder under corpus/ and the executable fuzz_<name>
  std::string message_names;   // the file name every error message must contain
  void (*run)(std::string_view input);
};

// Every target, in a fixed order.
const std::vector<FuzzTarget>& fuzz_targets();
const FuzzTarget* find_fuzz_target(std::string_view name);

inline constexpr size_t kMaxMessageBytes = 1024;

// What one input did: empty when it kept the contract, else what went wrong.
struct FuzzVerdict {
  bool user_error = false;  // the input was refused with a kiln::Error that kept the contract
  std::string bug;          // non-empty: the contract was broken (and how)
};

FuzzVerdict check_fuzz_input(const FuzzTarget& target, std::string_view input);

}  // namespace kiln::fuzz
