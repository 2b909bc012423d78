// The contract of a fuzz input (fuzz_target.h) and the list of targets.
#include "tests/fuzz/fuzz_target.h"

#include <exception>
#include <typeinfo>

#include "kiln/error.h"
#include "runtime/message_text.h"
#include "tests/fuzz/targets/fuzz_targets.h"

namespace kiln::fuzz {

const std::vector<FuzzTarget>& fuzz_targets() {
  static const std::vector<FuzzTarget> targets = {
      {"text_parser", "fuzz.kiln", fuzz_text_parser},
      {"json_reader", "fuzz.json", fuzz_json_reader},
      {"safetensors_reader", "fuzz.safetensors", fuzz_safetensors_reader},
      {"npy_reader", "fuzz.npy", fuzz_npy_reader},
      {"onnx_importer", "fuzz.onnx", fuzz_onnx_importer},
      {"cache_entry", "entry", fuzz_cache_entry},
      {"run_graph", "fuzz.kiln", fuzz_run_graph},
      {"expression_parser", "expression", fuzz_expression_parser},
  };
  return targets;
}

const FuzzTarget* find_fuzz_target(std::string_view name) {
  for (const FuzzTarget& target : fuzz_targets())
    if (target.name == name) return &target;
  return nullptr;
}

namespace {

std::string message_problem(const FuzzTarget& target, const std::string& message) {
  if (message.empty()) return "an empty message";
  if (!is_printable(message)) return "a message that is not one printable line";
  if (message.size() > kMaxMessageBytes)
    return "a message of " + std::to_string(message.size()) + " bytes (more than " +
           std::to_string(kMaxMessageBytes) + ")";
  if (message.find(target.message_names) == std::string::npos)
    return "a message that does not name '" + target.message_names + "'";
  return "";
}

}  // namespace

FuzzVerdict check_fuzz_input(const FuzzTarget& target, std::string_view input) {
  FuzzVerdict verdict;
  try {
    target.run(input);
  } catch (const Error& error) {
    verdict.user_error = true;
    std::string problem = message_problem(target, error.what());
    if (!problem.empty()) verdict.bug = "kiln::Error with " + problem + ": " + excerpt(error.what(), 400);
  } catch (const InternalError& error) {
    verdict.bug = std::string("internal error: ") + error.what();
  } catch (const FuzzPropertyFailure& error) {
    verdict.bug = std::string("property failed: ") + error.what();
  } catch (const std::exception& error) {
    verdict.bug = std::string("exception ") + typeid(error).name() + ": " + excerpt(error.what(), 400);
  } catch (...) {
    verdict.bug = "an exception that is not a std::exception";
  }
  return verdict;
}

}  // namespace kiln::fuzz
