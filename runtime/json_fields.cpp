// Reading fields of Kiln's JSON files with field-by-field errors. See runtime/json_fields.h.
#include "runtime/json_fields.h"

#include <optional>

#include "kiln/error.h"
#include "runtime/json_brief.h"

namespace kiln {

using nlohmann::json;

void JsonFields::bad(const std::string& field, const std::string& expected, const json& got) const {
  fail(where_, ": field '", field, "' must be ", expected, ", got ", json_brief(got));
}

void JsonFields::fail_at(const std::string& message) const { fail(where_, ": ", message); }

const json& JsonFields::member(const json& object, const std::string& prefix, const std::string& name) const {
  auto found = object.find(name);
  if (found == object.end()) fail(where_, ": field '", prefix, name, "' is missing");
  return *found;
}

std::string JsonFields::string(const json& object, const std::string& prefix, const std::string& name) const {
  const json& value = member(object, prefix, name);
  if (!value.is_string()) bad(prefix + name, "a string", value);
  return value.get<std::string>();
}

int64_t JsonFields::integer(const json& object, const std::string& prefix, const std::string& name) const {
  const json& value = member(object, prefix, name);
  if (!value.is_number_integer()) bad(prefix + name, "an integer", value);
  return value.get<int64_t>();
}

const json& JsonFields::array(const json& object, const std::string& prefix, const std::string& name) const {
  const json& value = member(object, prefix, name);
  if (!value.is_array()) bad(prefix + name, "an array", value);
  return value;
}

const json& JsonFields::object(const json& object, const std::string& prefix, const std::string& name) const {
  const json& value = member(object, prefix, name);
  if (!value.is_object()) bad(prefix + name, "an object", value);
  return value;
}

DType JsonFields::dtype(const json& object, const std::string& prefix) const {
  const json& value = member(object, prefix, "dtype");
  std::optional<DType> parsed = value.is_string() ? parse_dtype(value.get<std::string>()) : std::nullopt;
  if (!parsed) bad(prefix + "dtype", "a dtype name such as \"f32\"", value);
  return *parsed;
}

std::vector<std::string> JsonFields::strings(const json& object, const std::string& prefix, const std::string& name) const {
  std::vector<std::string> result;
  const json& values = array(object, prefix, name);
  for (size_t i = 0; i < values.size(); ++i) {
    if (!values[i].is_string()) bad(prefix + name + "[" + std::to_string(i) + "]", "a string", values[i]);
    result.push_back(values[i].get<std::string>());
  }
  return result;
}

}  // namespace kiln
