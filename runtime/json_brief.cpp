// Short JSON text of a value for error messages.
#include "runtime/json_brief.h"

#include "runtime/message_text.h"

namespace kiln {

std::string json_brief(const nlohmann::json& value, int depth) {
  if (!value.is_structured()) return excerpt(value.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace), 60);
  bool is_array = value.is_array();
  std::string text(1, is_array ? '[' : '{');
  if (depth >= 3 && !value.empty()) return text + "..." + (is_array ? "]" : "}");
  size_t shown = 0;
  for (auto item = value.begin(); item != value.end(); ++item, ++shown) {
    if (shown) text += ",";
    if (shown == 4) {
      text += "...";
      break;
    }
    if (!is_array) text += excerpt(nlohmann::json(item.key()).dump(-1, ' ', false, nlohmann::json::error_handler_t::replace), 60) + ":";
    text += json_brief(item.value(), depth + 1);
  }
  return text + (is_array ? "]" : "}");
}

}  // namespace kiln
