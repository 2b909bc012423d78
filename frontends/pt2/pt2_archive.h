// Pt2Archive: the layout of a .pt2 file as torch.export.save writes it (PyTorch 2.6 and
// later; archive_version 0):
//   <root>/archive_format                          "pt2"
//   <root>/archive_version                         "0"
//   <root>/byteorder                               "little"
//   <root>/models/<model>.json                     the export schema (pt2_schema.h)
//   <root>/data/weights/<model>_weights_config.json  payload configs: weight FQN -> file,
//   <root>/data/weights/weight_<k>                   dtype, sizes, strides, storage offset
//   <root>/data/constants/<model>_constants_config.json, tensor_<k>   lifted constants
//   <root>/data/sample_inputs/<model>.pt           torch.save((args, kwargs))
// Opening checks the format, archive version and byte order, and finds the one model (the one
// named "model" when there are several); every error names the file.
#pragma once

#include <string>
#include <vector>

#include "frontends/pt2/zip_reader.h"

namespace kiln::frontends {

class Pt2Archive {
 public:
  // The archive versions Kiln reads.
  static constexpr const char* kKnownArchiveVersion = "0";

  explicit Pt2Archive(const std::string& path);

  const std::string& path() const { return path_; }
  const ZipReader& zip() const { return zip_; }
  const std::string& model_name() const { return model_name_; }

  // Entry paths inside the archive (with the root folder).
  std::string entry(const std::string& relative) const { return root_ + "/" + relative; }
  std::string model_json_entry() const { return entry("models/" + model_name_ + ".json"); }
  std::string weights_config_entry() const { return entry("data/weights/" + model_name_ + "_weights_config.json"); }
  std::string weights_folder() const { return entry("data/weights/"); }
  std::string constants_config_entry() const { return entry("data/constants/" + model_name_ + "_constants_config.json"); }
  std::string constants_folder() const { return entry("data/constants/"); }
  std::string sample_inputs_entry() const { return entry("data/sample_inputs/" + model_name_ + ".pt"); }

 private:
  std::string path_;
  ZipReader zip_;
  std::string root_;
  std::string model_name_;
};

}  // namespace kiln::frontends
