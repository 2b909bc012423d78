// Opening a .pt2 archive: its root folder, format and version files, and the model it holds.
#include "frontends/pt2/pt2_archive.h"

#include <algorithm>

#include "kiln/error.h"

namespace kiln::frontends {

namespace {

std::string trimmed(std::string text) {
  while (!text.empty() && (text.back() == '\n' || text.back() == '\r' || text.back() == ' ')) text.pop_back();
  return text;
}

}  // namespace

Pt2Archive::Pt2Archive(const std::string& path) : path_(path), zip_(ZipReader::open_file(path)) {
  const std::vector<std::string>& names = zip_.names();
  if (names.empty()) fail("'", path, "' is an empty zip archive, not a torch.export archive");
  root_ = names.front().substr(0, names.front().find('/'));
  const std::string where = "'" + path + "'";
  if (!zip_.has(entry("archive_format"))) {
    if (zip_.has(entry("serialized_exported_program.json")))
      fail(where, " was written by a PyTorch older than 2.6 (serialized_exported_program.json); Kiln reads the archives "
                  "of torch.export.save from PyTorch 2.6 on: load it with torch.export.load and save it again");
    fail(where, " is a zip archive but not a torch.export archive (no '", root_, "/archive_format' entry)");
  }
  std::string format = trimmed(zip_.read(entry("archive_format")));
  if (format != "pt2") fail(where, " has archive format '", format, "'; Kiln reads 'pt2' archives (torch.export.save)");
  std::string version = zip_.has(entry("archive_version")) ? trimmed(zip_.read(entry("archive_version"))) : "0";
  if (version != kKnownArchiveVersion)
    fail(where, " has archive version ", version, "; Kiln reads version ", kKnownArchiveVersion,
         " (torch.export.save of PyTorch 2.6 to 2.15)");
  if (zip_.has(entry("byteorder"))) {
    std::string order = trimmed(zip_.read(entry("byteorder")));
    if (order != "little") fail(where, " stores its tensors ", order, "-endian; Kiln reads little-endian archives");
  }
  std::vector<std::string> models;
  const std::string prefix = entry("models/");
  for (const std::string& name : names) {
    if (name.size() > prefix.size() + 5 && name.compare(0, prefix.size(), prefix) == 0 &&
        name.compare(name.size() - 5, 5, ".json") == 0 && name.find('/', prefix.size()) == std::string::npos)
      models.push_back(name.substr(prefix.size(), name.size() - prefix.size() - 5));
  }
  if (models.empty()) fail(where, " has no model: no '", prefix, "<name>.json' entry");
  std::sort(models.begin(), models.end());
  if (models.size() == 1) {
    model_name_ = models.front();
  } else if (std::find(models.begin(), models.end(), "model") != models.end()) {
    model_name_ = "model";
  } else {
    std::string list;
    for (const std::string& model : models) list += (list.empty() ? "" : ", ") + model;
    fail(where, " holds ", models.size(), " models (", list, ") and none is named 'model'; Kiln imports one");
  }
}

}  // namespace kiln::frontends
