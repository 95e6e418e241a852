// Tensors as the planner and the executor see them: a shape, an element type,
// a role (what the bytes are for) and a residency (where they are right now).
// Memory is never owned here: a tensor's bytes live at an offset in the
// device arena, given to it by the allocator.
#pragma once

#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <string>
#include <string_view>
#include <vector>

#include "engine/core/dtype.h"

namespace tidepool {

enum class Role : std::uint8_t {
  input,                // a batch of images or labels
  activation,           // a layer's output kept for later layers or backward
  activation_gradient,  // d(loss)/d(activation)
  weight,               // trainable parameters (and batchnorm running statistics)
  weight_gradient,
  optimizer_state,      // SGD momentum
  workspace,            // scratch memory for one kernel call
};
inline constexpr int kRoleCount = 7;
std::string_view to_string(Role r);

enum class Residency : std::uint8_t { device, host, in_flight };
std::string_view to_string(Residency r);

// Dimensions outermost first; images are NCHW.
class Shape {
 public:
  Shape() = default;
  Shape(std::initializer_list<std::int64_t> dims) : dims_(dims) {}
  explicit Shape(std::vector<std::int64_t> dims) : dims_(std::move(dims)) {}

  std::size_t rank() const { return dims_.size(); }
  std::int64_t operator[](std::size_t i) const { return dims_.at(i); }
  const std::vector<std::int64_t>& dims() const { return dims_; }
  std::int64_t numel() const;
  bool operator==(const Shape&) const = default;
  std::string str() const;  // "[128, 64, 32, 32]"

 private:
  std::vector<std::int64_t> dims_;
};

struct TensorInfo {
  std::string name;
  Shape shape;
  DType dtype = DType::f32;
  Role role = Role::activation;

  std::size_t bytes() const { return static_cast<std::size_t>(shape.numel()) * dtype_bytes(dtype); }
};

}  // namespace tidepool
