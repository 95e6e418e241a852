// The IDX reader (datasets/idx.h), gzip included: any bytes either decode to
// an array whose data is exactly its dimensions' product, or are refused
// with a DatasetError. Any other exception, a crash or a sanitizer report is
// a finding.
#include <cstddef>
#include <cstdint>
#include <cstdlib>

#include "datasets/dataset.h"
#include "datasets/idx.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace tidepool::datasets;
  try {
    // A smaller cap than a dataset's keeps a gzip bomb within the fuzzer's memory.
    const IdxArray a = decode_idx({data, size}, "fuzz input", std::size_t{1} << 26);
    std::uint64_t elements = 1;
    for (std::uint32_t d : a.dims) elements *= d;
    if (a.dims.empty() || a.dims.size() > 4 || elements != a.data.size()) std::abort();
  } catch (const DatasetError&) {
  }
  return 0;
}
