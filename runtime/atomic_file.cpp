// Whole-file reads and atomic writes (temp file in the destination's folder + rename).
#include "runtime/atomic_file.h"

#include <fcntl.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "kiln/error.h"

namespace kiln {

std::string read_file(const std::string& path) {
  std::error_code status;
  if (std::filesystem::is_directory(path, status)) fail("cannot read '", path, "': it is a directory");
  std::ifstream in(path, std::ios::binary);
  if (!in) fail("cannot open '", path, "': ", std::strerror(errno));
  std::ostringstream contents;
  contents << in.rdbuf();
  if (in.bad()) fail("cannot read '", path, "': ", std::strerror(errno));
  return std::move(contents).str();
}

namespace {

// A unique name beside `path`: same folder, so the final rename never crosses file systems.
std::string temporary_name(const std::string& path) {
  static std::atomic<uint64_t> counter{0};
  return path + ".tmp." + std::to_string(::getpid()) + "." + std::to_string(counter++);
}

void write_all(int fd, std::string_view contents, const std::string& path) {
  const char* data = contents.data();
  size_t left = contents.size();
  while (left > 0) {
    ssize_t written = ::write(fd, data, left);
    if (written < 0) {
      if (errno == EINTR) continue;
      fail("cannot write '", path, "': ", std::strerror(errno));
    }
    data += written;
    left -= size_t(written);
  }
}

}  // namespace

void write_file_atomically(const std::string& path, std::string_view contents, bool overwrite) {
  std::error_code status;
  if (!overwrite && std::filesystem::exists(path, status))
    fail("'", path, "' already exists; refusing to overwrite it (ask for overwrite explicitly)");
  std::string temporary = temporary_name(path);
  int fd = ::open(temporary.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
  if (fd < 0) fail("cannot create '", temporary, "' to write '", path, "': ", std::strerror(errno));
  try {
    write_all(fd, contents, temporary);
    if (::fsync(fd) != 0) fail("cannot flush '", temporary, "': ", std::strerror(errno));
  } catch (...) {
    ::close(fd);
    ::unlink(temporary.c_str());
    throw;
  }
  if (::close(fd) != 0) {
    int error = errno;
    ::unlink(temporary.c_str());
    fail("cannot write '", path, "': ", std::strerror(error));
  }
  if (overwrite) {
    if (::rename(temporary.c_str(), path.c_str()) != 0) {
      int error = errno;
      ::unlink(temporary.c_str());
      fail("cannot write '", path, "': ", std::strerror(error));
    }
    return;
  }
  // Not overwriting: link() fails if the name was taken since the check above, closing that
  // window. File systems without hard links fall back to check-then-rename.
  if (::link(temporary.c_str(), path.c_str()) == 0) {
    ::unlink(temporary.c_str());
    return;
  }
  int error = errno;
  bool no_hard_links = error == EPERM || error == EOPNOTSUPP || error == ENOSYS || error == EXDEV;
  if (no_hard_links && !std::filesystem::exists(path, status)) {
    if (::rename(temporary.c_str(), path.c_str()) == 0) return;
    error = errno;
  } else if (no_hard_links) {
    error = EEXIST;
  }
  ::unlink(temporary.c_str());
  if (error == EEXIST) fail("'", path, "' already exists; refusing to overwrite it");
  fail("cannot write '", path, "': ", std::strerror(error));
}

}  // namespace kiln
