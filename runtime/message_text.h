// Text from a user's input made safe to quote in a one-line error message (the contract of
// kiln/error.h: one line naming what and where). Readers quote what they could not read
// through excerpt(); kiln::Error's constructor passes the whole message through printable(),
// so no message can span lines or carry raw bytes, whichever reader built it.
//
//   printable("a\nb\x01\xff")   ->  a\nb\x01\xff   (escaped: two characters per control byte,
//                                                   \xNN for bytes that are not valid UTF-8)
//   excerpt(40,000 bytes of '(')  ->  "((((...(first 60 characters)... (40000 bytes)"
//
// Valid UTF-8 (a node named in Chinese, a path with accents) is kept as it is.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

namespace kiln {

// `text` with every control character (and DEL) escaped as \n, \r, \t or \xNN, and every byte
// that does not start or continue a valid UTF-8 sequence escaped as \xNN.
std::string printable(std::string_view text);

// printable(text), cut after `max_characters` characters with "... (N bytes)" appended when
// longer. A cut never splits an escape or a UTF-8 sequence.
std::string excerpt(std::string_view text, size_t max_characters = 60);

// Whether `text` is already printable: no control characters, valid UTF-8.
bool is_printable(std::string_view text);

}  // namespace kiln
