// Tensors as the planner sees them (engine/core/tensor.h): a shape's rank,
// dimensions, element count and text; a value type that copies and
// compares by its dimensions; a tensor's bytes for each element type; the
// names of roles, residencies and element types, which the events, the
// plan's JSON and the views print. (There are no strides: a tensor is its
// shape, its bytes live at an offset the allocator gives it.)
#include "engine/core/tensor.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <memory>
#include <set>
#include <stdexcept>
#include <string>
#include <vector>

#include "engine/layers/conv2d.h"

namespace tidepool {
namespace {

TEST(Tensor, AShapeHasItsDimensionsOutermostFirst) {
  const Shape s{128, 64, 32, 16};
  EXPECT_EQ(s.rank(), 4u);
  EXPECT_EQ(s[0], 128);
  EXPECT_EQ(s[3], 16);
  EXPECT_EQ(s.dims(), (std::vector<std::int64_t>{128, 64, 32, 16}));
  EXPECT_EQ(s.numel(), 128 * 64 * 32 * 16);
  EXPECT_EQ(s.str(), "[128, 64, 32, 16]");
  EXPECT_THROW(s[4], std::out_of_range) << "a dimension past the rank";
  EXPECT_EQ(Shape{7}.str(), "[7]");
}

TEST(Tensor, ElementCountsOfScalarsEmptyAndHugeShapes) {
  EXPECT_EQ(Shape{}.rank(), 0u);
  EXPECT_EQ(Shape{}.numel(), 1) << "a scalar: the empty product";
  EXPECT_EQ(Shape{}.str(), "[]");
  EXPECT_EQ((Shape{8, 0, 3}).numel(), 0);
  // Past 32 bits: 2^20 * 2^20 * 4 = 2^42 elements.
  const Shape huge{std::int64_t{1} << 20, std::int64_t{1} << 20, 4};
  EXPECT_EQ(huge.numel(), std::int64_t{1} << 42);
}

TEST(Tensor, ShapesCopyAndCompareByTheirDimensions) {
  const Shape a{2, 3, 4};
  Shape b = a;
  EXPECT_EQ(a, b);
  EXPECT_EQ(Shape(std::vector<std::int64_t>{2, 3, 4}), a) << "from a vector as from a list";
  b = Shape{2, 3};
  EXPECT_EQ(a.dims(), (std::vector<std::int64_t>{2, 3, 4})) << "the copy is its own";
  EXPECT_NE(a, b);
  EXPECT_NE(a, (Shape{2, 3, 4, 1})) << "a trailing 1 is another rank";
  EXPECT_NE(a, (Shape{4, 3, 2}));
  Shape moved = std::move(b);
  EXPECT_EQ(moved, (Shape{2, 3}));
}

TEST(Tensor, BytesAreElementsTimesTheElementTypesSize) {
  EXPECT_EQ(dtype_bytes(DType::f32), 4u);
  EXPECT_EQ(dtype_bytes(DType::f16), 2u);
  EXPECT_EQ(dtype_bytes(DType::bf16), 2u);
  EXPECT_EQ(dtype_bytes(DType::i32), 4u);
  TensorInfo t{.name = "conv1.out", .shape = {32, 16, 8, 8}};
  EXPECT_EQ(t.dtype, DType::f32) << "the default";
  EXPECT_EQ(t.role, Role::activation) << "the default";
  EXPECT_EQ(t.bytes(), 32u * 16 * 8 * 8 * 4);
  t.dtype = DType::f16;
  EXPECT_EQ(t.bytes(), 32u * 16 * 8 * 8 * 2);
  t.dtype = DType::bf16;
  EXPECT_EQ(t.bytes(), 32u * 16 * 8 * 8 * 2);
  const TensorInfo labels{.name = "labels", .shape = {32}, .dtype = DType::i32, .role = Role::input};
  EXPECT_EQ(labels.bytes(), 128u);
  // 2^32 floats: 16 GiB, past what 32 bits count.
  const TensorInfo big{.name = "big", .shape = {std::int64_t{1} << 16, std::int64_t{1} << 16}};
  EXPECT_EQ(big.bytes(), std::size_t{1} << 34);
  EXPECT_EQ((TensorInfo{.name = "none", .shape = {0, 5}}.bytes()), 0u);
}

TEST(Tensor, EveryRoleResidencyAndTypeHasItsOwnName) {
  const std::vector<std::string> roles = {"input", "activation", "activation_gradient", "weight",
                                          "weight_gradient", "optimizer_state", "workspace"};
  ASSERT_EQ(static_cast<int>(roles.size()), kRoleCount);
  for (int r = 0; r < kRoleCount; ++r) EXPECT_EQ(to_string(static_cast<Role>(r)), roles[static_cast<std::size_t>(r)]);
  EXPECT_EQ(to_string(Residency::device), "device");
  EXPECT_EQ(to_string(Residency::host), "host");
  EXPECT_EQ(to_string(Residency::in_flight), "in_flight");
  std::set<std::string_view> types;
  for (DType t : {DType::f32, DType::f16, DType::bf16, DType::i32}) types.insert(to_string(t));
  EXPECT_EQ(types, (std::set<std::string_view>{"f32", "f16", "bf16", "i32"}));
}

// Layer::fail (defined with the tensors): the layer's name and kind, then
// what is wrong.
TEST(Tensor, ALayersRefusalNamesTheLayerAndItsKind) {
  const Conv2d conv("conv7", Conv2dOptions{.out_channels = 4});
  try {
    conv.infer({Shape{8, 3}});
    ADD_FAILURE() << "a 2-D input was accepted";
  } catch (const std::invalid_argument& e) {
    EXPECT_EQ(std::string(e.what()), "layer 'conv7' (conv2d): expects one NCHW input");
  }
}

}  // namespace
}  // namespace tidepool
