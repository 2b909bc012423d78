// Fuzz target: NumPy .npy bytes (parse_npy); what reads must write and read back equal.
#include <cstring>

#include "kiln/error.h"
#include "kiln/npy.h"
#include "tests/fuzz/fuzz_target.h"
#include "tests/fuzz/targets/fuzz_targets.h"

namespace kiln::fuzz {

void fuzz_npy_reader(std::string_view input) {
  Tensor tensor = parse_npy(input, "fuzz.npy");
  Tensor again = parse_npy(serialize_npy(tensor), "written.npy");
  if (again.dtype() != tensor.dtype() || again.sizes() != tensor.sizes() ||
      std::memcmp(again.data_ptr(), tensor.data_ptr(), tensor.nbytes()) != 0)
    throw FuzzPropertyFailure("written and read back, the array differs");
}

}  // namespace kiln::fuzz
