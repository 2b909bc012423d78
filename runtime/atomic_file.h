// Whole-file reads and atomic whole-file writes for the file formats (npy, safetensors, the
// IR's text and JSON): a write goes to a temporary file in the same folder, is flushed, then
// renamed over the destination, so a reader never sees a half-written file and a failed
// write leaves the old file (if any) untouched.
#pragma once

#include <string>
#include <string_view>

namespace kiln {

// The contents of `path`; throws kiln::Error naming the path and the system's reason.
std::string read_file(const std::string& path);

// Writes `contents` to `path` atomically (temp file + fsync + rename). When `overwrite` is
// false and `path` already exists, throws kiln::Error instead of replacing it.
void write_file_atomically(const std::string& path, std::string_view contents, bool overwrite = true);

}  // namespace kiln
