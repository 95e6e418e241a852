#include "engine/device/kernel_choice.h"

#include <stdexcept>

namespace tidepool {

namespace {
constexpr const char* kArrow = " -> ";
}

std::string kernel_choice_line(const std::string& shape, const std::string& choice) {
  return shape + kArrow + choice;
}

void KernelChoiceRecord::adopt(const std::vector<std::string>& lines) {
  for (const std::string& line : lines) {
    const std::size_t arrow = line.find(kArrow);
    if (arrow == std::string::npos)
      throw std::invalid_argument("a recorded kernel choice reads '<shape> -> <choice>', not '" + line + "'");
    by_shape_[line.substr(0, arrow)] = line.substr(arrow + std::char_traits<char>::length(kArrow));
  }
}

std::string KernelChoiceRecord::adopted(const std::string& shape) const {
  auto it = by_shape_.find(shape);
  return it == by_shape_.end() ? std::string() : it->second;
}

}  // namespace tidepool
