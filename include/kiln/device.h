// Where a tensor lives: the CPU or a CUDA device by index. Printed and parsed as "cpu", "cuda:0".
#pragma once

#include <string>
#include <string_view>

namespace kiln {

enum class DeviceType : uint8_t { cpu, cuda };

struct Device {
  DeviceType type = DeviceType::cpu;
  int index = 0;

  static Device cpu() { return {DeviceType::cpu, 0}; }
  static Device cuda(int index = 0) { return {DeviceType::cuda, index}; }
  bool is_cpu() const { return type == DeviceType::cpu; }
  std::string to_string() const;
  friend bool operator==(const Device&, const Device&) = default;
};

// Parses "cpu", "cuda", "cuda:N"; throws kiln::Error naming the text otherwise.
Device parse_device(std::string_view text);

}  // namespace kiln
