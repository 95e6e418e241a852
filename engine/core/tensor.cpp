#include "engine/core/tensor.h"

#include <sstream>
#include <stdexcept>

#include "engine/core/layer.h"

namespace tidepool {

std::size_t dtype_bytes(DType t) {
  switch (t) {
    case DType::f32: return 4;
    case DType::f16: return 2;
    case DType::bf16: return 2;
    case DType::i32: return 4;
  }
  return 0;
}

std::string_view to_string(DType t) {
  switch (t) {
    case DType::f32: return "f32";
    case DType::f16: return "f16";
    case DType::bf16: return "bf16";
    case DType::i32: return "i32";
  }
  return "?";
}

std::string_view to_string(Role r) {
  switch (r) {
    case Role::input: return "input";
    case Role::activation: return "activation";
    case Role::activation_gradient: return "activation_gradient";
    case Role::weight: return "weight";
    case Role::weight_gradient: return "weight_gradient";
    case Role::optimizer_state: return "optimizer_state";
    case Role::workspace: return "workspace";
  }
  return "?";
}

std::string_view to_string(Residency r) {
  switch (r) {
    case Residency::device: return "device";
    case Residency::host: return "host";
    case Residency::in_flight: return "in_flight";
  }
  return "?";
}

std::int64_t Shape::numel() const {
  std::int64_t n = 1;
  for (auto d : dims_) n *= d;
  return n;
}

std::string Shape::str() const {
  std::ostringstream out;
  out << '[';
  for (std::size_t i = 0; i < dims_.size(); ++i) out << (i ? ", " : "") << dims_[i];
  out << ']';
  return out.str();
}

void Layer::fail(const std::string& what) const {
  throw std::invalid_argument("layer '" + name_ + "' (" + std::string(kind()) + "): " + what);
}

}  // namespace tidepool
