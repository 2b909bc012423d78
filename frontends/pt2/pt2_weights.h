// The tensors a .pt2 archive stores beside its graph: parameters and buffers (data/weights/)
// and lifted constants (data/constants/), each described in a payload config
// (<model>_weights_config.json, <model>_constants_config.json):
//   {"config": {"fc.weight": {"path_name": "weight_0", "use_pickle": false,
//               "tensor_meta": {dtype, sizes, strides, storage_offset, ...}}, ...}}
// A raw file holds a whole storage (torch.export.save writes tensors that share memory once);
// each tensor is the strided view its meta describes, copied out contiguous. A pickled file
// (tensor subclasses) is a torch.save file (torch_save_reader.h). Errors name the archive, the
// tensor and the file: a missing file, a size that does not cover the view, a dtype Kiln has no
// counterpart for, symbolic sizes.
#pragma once

#include <map>
#include <string>

#include "frontends/pt2/pt2_archive.h"
#include "kiln/tensor.h"

namespace kiln::frontends {

// Every tensor of one payload config, by FQN. An absent config gives an empty map.
// `what` is "weights" or "constants".
std::map<std::string, Tensor> read_payloads(const Pt2Archive& archive, const std::string& config_entry,
                                            const std::string& folder, const std::string& what);

}  // namespace kiln::frontends
