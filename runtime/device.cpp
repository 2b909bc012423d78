// Printing and parsing of devices.
#include "kiln/device.h"

#include <charconv>

#include "kiln/error.h"

namespace kiln {

std::string Device::to_string() const {
  if (type == DeviceType::cpu) return "cpu";
  return "cuda:" + std::to_string(index);
}

Device parse_device(std::string_view text) {
  if (text == "cpu") return Device::cpu();
  if (text == "cuda") return Device::cuda(0);
  if (text.starts_with("cuda:")) {
    std::string_view digits = text.substr(5);
    int index = -1;
    auto [end, error] = std::from_chars(digits.data(), digits.data() + digits.size(), index);
    if (error == std::errc() && end == digits.data() + digits.size() && index >= 0 && !digits.empty())
      return Device::cuda(index);
  }
  fail("unknown device '", text, "' (expected cpu, cuda or cuda:N)");
}

}  // namespace kiln
