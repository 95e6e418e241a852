// Training batches made up on the spot, seeded, so the same call gives the
// same batch: random ones for comparing runs (whose numbers only need to be
// the same on both sides), and a learnable toy problem for tests that check
// a network learns.
#pragma once

#include <cstddef>
#include <cstdint>
#include <random>
#include <vector>

namespace tidepool::testing {

struct Batch {
  std::vector<float> images;        // n images of `pixels` floats each
  std::vector<std::int32_t> labels;  // n labels
};

// Rank r's share of a global batch: images [r * n, (r + 1) * n).
inline Batch shard(const Batch& global, int rank, int ranks) {
  const std::size_t n = global.labels.size() / static_cast<std::size_t>(ranks);
  const std::size_t pixels = global.images.size() / global.labels.size();
  Batch b;
  b.images.assign(global.images.begin() + static_cast<std::ptrdiff_t>(static_cast<std::size_t>(rank) * n * pixels),
                  global.images.begin() + static_cast<std::ptrdiff_t>(static_cast<std::size_t>(rank + 1) * n * pixels));
  b.labels.assign(global.labels.begin() + static_cast<std::ptrdiff_t>(static_cast<std::size_t>(rank) * n),
                  global.labels.begin() + static_cast<std::ptrdiff_t>(static_cast<std::size_t>(rank + 1) * n));
  return b;
}

// One image's floats and the number of classes; the default is
// residual_net's input (networks.h): 3x8x8 images in 4 classes.
struct BatchShape {
  std::int64_t pixels = 3 * 8 * 8;
  std::int64_t classes = 4;
};

// Standard normal pixels and uniformly drawn labels.
inline Batch random_batch(std::int64_t n, unsigned seed, BatchShape shape = {}) {
  Batch b{std::vector<float>(static_cast<std::size_t>(n * shape.pixels)),
          std::vector<std::int32_t>(static_cast<std::size_t>(n))};
  std::mt19937 rng(seed);
  std::normal_distribution<float> normal;
  for (float& v : b.images) v = normal(rng);
  for (auto& l : b.labels) l = static_cast<std::int32_t>(rng() % static_cast<unsigned>(shape.classes));
  return b;
}

// The toy problem, in residual_net's input shape: the label (0-3) is the
// quadrant of the 8x8 image that is bright, under a little noise.
inline Batch quadrant_batch(std::int64_t n, unsigned seed) {
  Batch b{std::vector<float>(static_cast<std::size_t>(n * 3 * 8 * 8)), std::vector<std::int32_t>(static_cast<std::size_t>(n))};
  std::mt19937 rng(seed);
  std::normal_distribution<float> noise(0.0f, 0.3f);
  for (std::int64_t i = 0; i < n; ++i) {
    const int q = static_cast<int>(rng() % 4);
    b.labels[i] = q;
    for (int c = 0; c < 3; ++c)
      for (int y = 0; y < 8; ++y)
        for (int x = 0; x < 8; ++x) {
          const bool bright = (y / 4) * 2 + (x / 4) == q;
          b.images[((i * 3 + c) * 8 + y) * 8 + x] = (bright ? 1.0f : -0.3f) + noise(rng);
        }
  }
  return b;
}

}  // namespace tidepool::testing
