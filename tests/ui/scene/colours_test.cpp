// The palette's categories tell apart at a glance: every two span kinds,
// every two roles, and each of them against the background, differ by at
// least a fixed CIE76 colour difference (ΔE*ab, in CIELAB under D65). A
// ΔE of about 2.3 is just noticeable; 20 reads as another colour. The
// accumulate and offload spans once differed by 7.7 (two oranges).
#include <gtest/gtest.h>

#include <array>
#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include "ui/scene/colours.h"

namespace tidepool::ui {
namespace {

constexpr double kApart = 20;         // between two categories
constexpr double kFromBackground = 40;  // a category against the dark background

struct Lab {
  double l, a, b;
};

// sRGB 0xRRGGBB to CIELAB (D65 white).
Lab lab(std::uint32_t rgb) {
  auto linear = [](double c) { return c <= 0.04045 ? c / 12.92 : std::pow((c + 0.055) / 1.055, 2.4); };
  const double r = linear(((rgb >> 16) & 0xFF) / 255.0), g = linear(((rgb >> 8) & 0xFF) / 255.0),
               b = linear((rgb & 0xFF) / 255.0);
  const double x = (0.4124 * r + 0.3576 * g + 0.1805 * b) / 0.95047, y = 0.2126 * r + 0.7152 * g + 0.0722 * b,
               z = (0.0193 * r + 0.1192 * g + 0.9505 * b) / 1.08883;
  auto f = [](double t) { return t > 0.008856 ? std::cbrt(t) : 7.787 * t + 16.0 / 116.0; };
  return {116 * f(y) - 16, 500 * (f(x) - f(y)), 200 * (f(y) - f(z))};
}

double delta_e(std::uint32_t p, std::uint32_t q) {
  const Lab a = lab(p), b = lab(q);
  return std::hypot(a.l - b.l, a.a - b.a, a.b - b.b);
}

TEST(Colours, TheDifferenceIsMeasuredAsCie76) {
  EXPECT_NEAR(delta_e(0x000000, 0xFFFFFF), 100.0, 0.01);  // black to white: L* 0 to 100
  EXPECT_NEAR(delta_e(0xE8B04C, 0xE8A33C), 7.7, 0.1);     // the two oranges the issue named
}

struct Named {
  std::string name;
  std::uint32_t colour;
};

void expect_apart(const std::vector<Named>& palette) {
  for (std::size_t i = 0; i < palette.size(); ++i) {
    EXPECT_GE(delta_e(palette[i].colour, kBackground), kFromBackground) << palette[i].name << " on the background";
    for (std::size_t j = i + 1; j < palette.size(); ++j)
      EXPECT_GE(delta_e(palette[i].colour, palette[j].colour), kApart) << palette[i].name << " and " << palette[j].name;
  }
}

TEST(Colours, EverySpanKindIsClearlyApart) {
  // pack and unpack are one category, the bucket's copies: one colour.
  EXPECT_EQ(span_colour(SpanKind::pack), span_colour(SpanKind::unpack));
  std::vector<Named> spans;
  for (SpanKind k : {SpanKind::forward, SpanKind::backward, SpanKind::accumulate, SpanKind::update, SpanKind::offload,
                     SpanKind::prefetch, SpanKind::compress, SpanKind::decompress, SpanKind::wait, SpanKind::pack,
                     SpanKind::all_reduce, SpanKind::recompute})
    spans.push_back({to_string(k), span_colour(k)});
  expect_apart(spans);
}

TEST(Colours, EveryRoleIsClearlyApart) {
  std::vector<Named> roles;
  for (int r = 0; r < kRoleCount; ++r)
    roles.push_back({std::string(to_string(static_cast<Role>(r))), role_colour(static_cast<Role>(r))});
  expect_apart(roles);
}

}  // namespace
}  // namespace tidepool::ui
