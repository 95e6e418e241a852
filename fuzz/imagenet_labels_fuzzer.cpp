// ImageNet's validation label files (LOC_val_solution.csv and
// val_labels.txt, datasets/imagenet.h): the first byte picks the format,
// the rest is the file, read against five classes. Every label parsed must
// be one of them; anything else must be refused with a DatasetError.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>
#include <vector>

#include "datasets/imagenet.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace tidepool::datasets;
  if (size == 0) return 0;
  static const std::vector<std::string> wnids = {"n01440764", "n01443537", "n01484850", "n01491361", "n01494475"};
  const ValLabelFormat format = (data[0] & 1) ? ValLabelFormat::kaggle_csv : ValLabelFormat::list;
  const std::string_view text(reinterpret_cast<const char*>(data + 1), size - 1);
  try {
    for (const auto& [stem, label] : parse_val_labels(text, format, wnids, "fuzz input"))
      if (label < 0 || label >= static_cast<std::int32_t>(wnids.size())) std::abort();
  } catch (const DatasetError&) {
  }
  return 0;
}
