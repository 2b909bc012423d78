// Reading zip archives through libzip (zip.h): open with ZIP_RDONLY | ZIP_CHECKCONS, entries
// by exact name, reads checked against the central directory's sizes.
#include "frontends/pt2/zip_reader.h"

#include <zip.h>

#include "kiln/error.h"

namespace kiln::frontends {

struct ZipReader::Handle {
  zip_t* archive = nullptr;
  std::string buffer;  // the bytes of an archive opened from memory (libzip reads them in place)
  ~Handle() {
    if (archive) zip_discard(archive);
  }
};

namespace {

std::string error_text(int code) {
  zip_error_t error;
  zip_error_init_with_code(&error, code);
  std::string text = zip_error_strerror(&error);
  zip_error_fini(&error);
  return text;
}

// What an open error means to a user: not a zip, truncated, or unreadable.
std::string describe_open_error(int code) {
  switch (code) {
    case ZIP_ER_NOZIP: return "is not a zip archive (a .pt2 file is the zip that torch.export.save writes)";
    case ZIP_ER_INCONS: return "is a damaged zip archive (truncated or inconsistent: " + error_text(code) + ")";
    case ZIP_ER_EOF: return "is truncated (" + error_text(code) + ")";
    case ZIP_ER_OPEN: case ZIP_ER_READ: return "cannot be read (" + error_text(code) + ")";
    default: return "cannot be opened as a zip archive (" + error_text(code) + ")";
  }
}

}  // namespace

ZipReader::ZipReader(std::unique_ptr<Handle> handle, std::string label)
    : handle_(std::move(handle)), label_(std::move(label)) {
  zip_int64_t count = zip_get_num_entries(handle_->archive, 0);
  for (zip_int64_t i = 0; i < count; ++i) {
    const char* name = zip_get_name(handle_->archive, zip_uint64_t(i), ZIP_FL_ENC_RAW);
    names_.push_back(name ? name : "");
  }
}

ZipReader::ZipReader(ZipReader&&) noexcept = default;
ZipReader& ZipReader::operator=(ZipReader&&) noexcept = default;
ZipReader::~ZipReader() = default;

ZipReader ZipReader::open_file(const std::string& path) {
  auto handle = std::make_unique<Handle>();
  int code = 0;
  handle->archive = zip_open(path.c_str(), ZIP_RDONLY | ZIP_CHECKCONS, &code);
  if (!handle->archive) fail("'", path, "' ", describe_open_error(code));
  return ZipReader(std::move(handle), "'" + path + "'");
}

ZipReader ZipReader::open_buffer(std::string bytes, std::string label) {
  auto handle = std::make_unique<Handle>();
  handle->buffer = std::move(bytes);
  zip_error_t error;
  zip_error_init(&error);
  zip_source_t* source = zip_source_buffer_create(handle->buffer.data(), handle->buffer.size(), 0, &error);
  if (source) handle->archive = zip_open_from_source(source, ZIP_RDONLY | ZIP_CHECKCONS, &error);
  int code = zip_error_code_zip(&error);
  zip_error_fini(&error);
  if (!handle->archive) {
    if (source) zip_source_free(source);
    fail(label, " ", describe_open_error(code));
  }
  return ZipReader(std::move(handle), std::move(label));
}

bool ZipReader::has(const std::string& name) const { return index_of(name) >= 0; }

int64_t ZipReader::index_of(const std::string& name) const {
  return zip_name_locate(handle_->archive, name.c_str(), ZIP_FL_ENC_RAW);
}

uint64_t ZipReader::size(const std::string& name) const {
  int64_t index = index_of(name);
  if (index < 0) fail(label_, " has no entry '", name, "'");
  zip_stat_t stat;
  zip_stat_init(&stat);
  if (zip_stat_index(handle_->archive, zip_uint64_t(index), 0, &stat) != 0 || !(stat.valid & ZIP_STAT_SIZE))
    fail(label_, ": entry '", name, "' cannot be read (", zip_strerror(handle_->archive), ")");
  return stat.size;
}

void ZipReader::read_into(const std::string& name, void* destination, uint64_t bytes) const {
  uint64_t stored = size(name);
  if (stored != bytes)
    fail(label_, ": entry '", name, "' holds ", stored, " bytes, expected ", bytes);
  zip_file_t* file = zip_fopen_index(handle_->archive, zip_uint64_t(index_of(name)), 0);
  if (!file) fail(label_, ": entry '", name, "' cannot be opened (", zip_strerror(handle_->archive), ")");
  uint64_t done = 0;
  auto* out = static_cast<char*>(destination);
  while (done < bytes) {
    zip_int64_t got = zip_fread(file, out + done, bytes - done);
    if (got <= 0) {
      std::string why = got < 0 ? zip_file_strerror(file) : "it ends early";
      zip_fclose(file);
      fail(label_, ": entry '", name, "' cannot be read (", why, ")");
    }
    done += uint64_t(got);
  }
  // Reading to the end lets libzip check the CRC.
  char extra = 0;
  zip_int64_t tail = zip_fread(file, &extra, 1);
  std::string why = tail < 0 ? zip_file_strerror(file) : "";
  zip_fclose(file);
  if (tail != 0) fail(label_, ": entry '", name, "' is damaged (", tail < 0 ? why : "longer than its stated size", ")");
}

std::string ZipReader::read(const std::string& name) const {
  std::string bytes(size_t(size(name)), '\0');
  if (!bytes.empty()) read_into(name, bytes.data(), bytes.size());
  return bytes;
}

}  // namespace kiln::frontends
