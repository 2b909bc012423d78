// Escaping and cutting quoted input for one-line error messages.
#include "runtime/message_text.h"

#include <cstdint>

namespace kiln {

namespace {

// The length of the valid UTF-8 sequence at `text[at]` (1 to 4), or 0 when the bytes there
// are not one (a stray continuation byte, an overlong form, a surrogate, a truncated tail).
size_t utf8_sequence_length(std::string_view text, size_t at) {
  auto byte = [&](size_t i) { return static_cast<uint8_t>(text[i]); };
  uint8_t lead = byte(at);
  if (lead < 0x80) return 1;
  size_t length = 0;
  uint32_t code = 0;
  if ((lead & 0xE0) == 0xC0) {
    length = 2;
    code = lead & 0x1F;
  } else if ((lead & 0xF0) == 0xE0) {
    length = 3;
    code = lead & 0x0F;
  } else if ((lead & 0xF8) == 0xF0) {
    length = 4;
    code = lead & 0x07;
  } else {
    return 0;
  }
  if (at + length > text.size()) return 0;
  for (size_t i = 1; i < length; ++i) {
    if ((byte(at + i) & 0xC0) != 0x80) return 0;
    code = (code << 6) | (byte(at + i) & 0x3F);
  }
  static constexpr uint32_t kSmallest[] = {0, 0, 0x80, 0x800, 0x10000};
  if (code < kSmallest[length] || code > 0x10FFFF || (code >= 0xD800 && code <= 0xDFFF)) return 0;
  return length;
}

void append_escaped_byte(std::string& out, uint8_t byte) {
  static constexpr char kHex[] = "0123456789abcdef";
  switch (byte) {
    case '\n': out += "\\n"; return;
    case '\r': out += "\\r"; return;
    case '\t': out += "\\t"; return;
    default: out += "\\x"; out += kHex[byte >> 4]; out += kHex[byte & 15];
  }
}

// Appends the character at `at` to `out` (escaped when it must be) and returns its byte length.
size_t append_character(std::string& out, std::string_view text, size_t at) {
  uint8_t lead = static_cast<uint8_t>(text[at]);
  if (lead < 0x20 || lead == 0x7F) {
    append_escaped_byte(out, lead);
    return 1;
  }
  size_t length = utf8_sequence_length(text, at);
  if (length == 0) {
    append_escaped_byte(out, lead);
    return 1;
  }
  out.append(text.substr(at, length));
  return length;
}

}  // namespace

std::string printable(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (size_t at = 0; at < text.size();) at += append_character(out, text, at);
  return out;
}

std::string excerpt(std::string_view text, size_t max_characters) {
  std::string out;
  size_t at = 0;
  for (size_t characters = 0; at < text.size() && characters < max_characters; ++characters)
    at += append_character(out, text, at);
  if (at < text.size()) out += "... (" + std::to_string(text.size()) + " bytes)";
  return out;
}

bool is_printable(std::string_view text) {
  for (size_t at = 0; at < text.size();) {
    uint8_t lead = static_cast<uint8_t>(text[at]);
    if (lead < 0x20 || lead == 0x7F) return false;
    size_t length = utf8_sequence_length(text, at);
    if (length == 0) return false;
    at += length;
  }
  return true;
}

}  // namespace kiln
