// The CIFAR-10/100 binary reader's check of a file's contents
// (CifarDataset::check_records): the first byte picks the format, the rest
// is the file. Accepted bytes must be whole records with every label in
// range; anything else must be refused with a DatasetError.
#include <cstddef>
#include <cstdint>
#include <cstdlib>

#include "datasets/cifar.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace tidepool::datasets;
  if (size == 0) return 0;
  const CifarKind kind = (data[0] & 1) ? CifarKind::cifar100 : CifarKind::cifar10;
  const std::span<const std::uint8_t> file(data + 1, size - 1);
  try {
    const std::int64_t records = CifarDataset::check_records(kind, file, "fuzz input", "fuzz");
    const std::int64_t rec = CifarDataset::record_bytes(kind);
    if (records < 1 || records * rec != static_cast<std::int64_t>(file.size())) std::abort();
    for (std::int64_t r = 0; r < records; ++r) {
      const std::uint8_t* p = file.data() + r * rec;
      if (kind == CifarKind::cifar10 ? p[0] >= 10 : (p[0] >= 20 || p[1] >= 100)) std::abort();
    }
  } catch (const DatasetError&) {
  }
  return 0;
}
