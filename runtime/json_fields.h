// JsonFields: reading the fields of a JSON file Kiln wrote (an artifact manifest, a CUDA launch
// plan) with one clear error per bad field: "<where>: field 'inputs[0].dtype' must be a dtype
// name such as "f32", got 7". Field paths are built by the caller ("steps[3]." + "grid").
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "kiln/dtype.h"

namespace kiln {

class JsonFields {
 public:
  // `where` (the file) starts every message.
  explicit JsonFields(std::string where) : where_(std::move(where)) {}
  const std::string& where() const { return where_; }

  // Throws kiln::Error: "<where>: field '<field>' must be <expected>, got <value>".
  [[noreturn]] void bad(const std::string& field, const std::string& expected, const nlohmann::json& got) const;
  // Throws kiln::Error: "<where>: <message>".
  [[noreturn]] void fail_at(const std::string& message) const;

  // Member `name` of `object`, whose path is prefix + name; missing: "field '...' is missing".
  const nlohmann::json& member(const nlohmann::json& object, const std::string& prefix, const std::string& name) const;
  std::string string(const nlohmann::json& object, const std::string& prefix, const std::string& name) const;
  int64_t integer(const nlohmann::json& object, const std::string& prefix, const std::string& name) const;
  const nlohmann::json& array(const nlohmann::json& object, const std::string& prefix, const std::string& name) const;
  const nlohmann::json& object(const nlohmann::json& object, const std::string& prefix, const std::string& name) const;
  DType dtype(const nlohmann::json& object, const std::string& prefix) const;  // member "dtype"
  std::vector<std::string> strings(const nlohmann::json& object, const std::string& prefix, const std::string& name) const;

 private:
  std::string where_;
};

}  // namespace kiln
