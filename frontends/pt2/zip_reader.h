// ZipReader: the entries of a zip archive, read through Debian's libzip (a .pt2 file is a
// zip; so is the torch.save file of its sample inputs, nested inside it). Opens a file or a
// buffer in memory, with libzip's consistency checks, so that a truncated or garbled archive
// is refused at open; lists entry names; reads an entry whole or into a caller's buffer,
// checking the byte count and CRC. Every failure is a kiln::Error naming the archive (and
// the entry).
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace kiln::frontends {

class ZipReader {
 public:
  // `label` names the archive in messages ("'model.pt2'", "'model.pt2': sample inputs").
  static ZipReader open_file(const std::string& path);
  static ZipReader open_buffer(std::string bytes, std::string label);

  ZipReader(ZipReader&&) noexcept;
  ZipReader& operator=(ZipReader&&) noexcept;
  ~ZipReader();

  const std::string& label() const { return label_; }
  const std::vector<std::string>& names() const { return names_; }
  bool has(const std::string& name) const;
  // The uncompressed size of an entry (fails when absent).
  uint64_t size(const std::string& name) const;
  // The whole entry (fails when absent or unreadable).
  std::string read(const std::string& name) const;
  // Reads the entry, which must be exactly `bytes` long, into `destination`.
  void read_into(const std::string& name, void* destination, uint64_t bytes) const;

 private:
  struct Handle;
  ZipReader(std::unique_ptr<Handle> handle, std::string label);
  int64_t index_of(const std::string& name) const;

  std::unique_ptr<Handle> handle_;
  std::string label_;
  std::vector<std::string> names_;
};

}  // namespace kiln::frontends
