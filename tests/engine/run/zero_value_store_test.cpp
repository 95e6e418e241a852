// Zero-value compression of offloaded tensors: every value comes back bit
// for bit, the store keeps what it promises, and dense tensors skip the work.
#include "engine/run/zero_value_store.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <random>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

namespace tidepool {
namespace {

// `count` values, a `density` fraction of them non-zero, with the values
// that a careless compressor would lose: -0.0, NaNs with payloads,
// denormals and infinities.
std::vector<float> values(std::size_t count, double density, unsigned seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<double> u(0, 1);
  std::normal_distribution<float> normal;
  std::vector<float> v(count, 0.0f);
  const float specials[] = {-0.0f, std::numeric_limits<float>::denorm_min(), std::numeric_limits<float>::infinity(),
                            -std::numeric_limits<float>::quiet_NaN()};
  for (std::size_t i = 0; i < count; ++i) {
    if (u(rng) >= density) continue;
    v[i] = u(rng) < 0.05 ? specials[rng() % 4] : normal(rng);
  }
  if (count > 7) {  // a NaN with a payload of its own
    const std::uint32_t payload = 0x7FC01234u;
    std::memcpy(&v[7], &payload, sizeof payload);
  }
  return v;
}

bool same_bits(const std::vector<float>& a, const std::vector<float>& b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0;
}

std::size_t nonzeros(const std::vector<float>& v) {
  std::size_t n = 0;
  for (float x : v) {
    std::uint32_t bits;
    std::memcpy(&bits, &x, sizeof bits);
    n += bits != 0;
  }
  return n;
}

TEST(ZeroValueStore, EveryValueComesBackBitForBit) {
  ZeroValueStore store;
  store.resize(1);
  for (std::size_t count : {1u, 31u, 32u, 33u, 64u, 1000u, 100003u})
    for (double density : {0.0, 0.1, 0.5, 0.9, 1.0}) {
      const std::vector<float> in = values(count, density, static_cast<unsigned>(count));
      store.compress(0, in.data(), count);
      std::vector<float> out(count, 42.0f);
      store.decompress(0, out.data());
      EXPECT_TRUE(same_bits(in, out)) << count << " values, density " << density;
    }
}

TEST(ZeroValueStore, StoresTheBitmapAndTheNonZeroValues) {
  ZeroValueStore store;
  store.resize(3);
  const std::size_t count = 100000;
  const std::vector<float> sparse = values(count, 0.3, 5);
  store.compress(2, sparse.data(), sparse.size());
  EXPECT_EQ(store.stored_bytes(2), (count + 31) / 32 * 4 + nonzeros(sparse) * 4);
  EXPECT_EQ(store.original_bytes(2), count * 4);
  EXPECT_FALSE(store.stored_dense(2));
  // Room for what it stores, and at most one chunk (a sixteenth of the
  // tensor) and a group of 32 values per chunk more.
  const std::size_t chunk = count * 4 / 16, chunks = (store.held_bytes() + chunk - 1) / chunk;
  EXPECT_GE(store.held_bytes(), store.stored_bytes(2));
  EXPECT_LE(store.held_bytes(), store.stored_bytes(2) + chunk + chunks * 32 * 4);
  EXPECT_LT(store.held_bytes(), count * 4 / 2) << "a third of the values need well under half the bytes";
}

TEST(ZeroValueStore, ChunksAreKeptForTheNextStore) {
  ZeroValueStore store;
  store.resize(1);
  const std::vector<float> a = values(50000, 0.5, 1), b = values(50000, 0.4, 2);
  store.compress(0, a.data(), a.size());
  const std::size_t held = store.held_bytes();
  store.compress(0, b.data(), b.size());
  EXPECT_EQ(store.held_bytes(), held) << "a sparser store fits in the chunks the first one allocated";
  std::vector<float> out(b.size());
  store.decompress(0, out.data());
  EXPECT_TRUE(same_bits(b, out));
}

TEST(ZeroValueStore, DenseTensorsAreStoredAsTheyAreUntilMeasuredAgain) {
  ZeroValueStore store;
  store.resize(1);
  const std::vector<float> dense = values(4096, 0.97, 3), sparse = values(4096, 0.2, 4);
  std::vector<float> out(4096);
  store.compress(0, dense.data(), dense.size());  // measured: dense
  EXPECT_FALSE(store.stored_dense(0));
  for (int i = 1; i < ZeroValueStore::kRemeasureEvery; ++i) {
    store.compress(0, (i == 1 ? dense : sparse).data(), 4096);
    EXPECT_TRUE(store.stored_dense(0)) << "store " << i;
    EXPECT_EQ(store.stored_bytes(0), 4096u * 4);
    store.decompress(0, out.data());
    EXPECT_TRUE(same_bits(i == 1 ? dense : sparse, out)) << "store " << i;
  }
  store.compress(0, sparse.data(), 4096);  // measured again: sparse now
  EXPECT_FALSE(store.stored_dense(0));
  EXPECT_LT(store.stored_bytes(0), 4096u * 4 / 2);
  store.compress(0, sparse.data(), 4096);
  EXPECT_FALSE(store.stored_dense(0)) << "sparse tensors are compressed every time";
  store.decompress(0, out.data());
  EXPECT_TRUE(same_bits(sparse, out));
}

TEST(ZeroValueStore, ATensorOfAnotherSizeStartsAfresh) {
  ZeroValueStore store;
  store.resize(1);
  const std::vector<float> big = values(10000, 0.5, 6), small = values(100, 0.5, 7);
  store.compress(0, big.data(), big.size());
  store.compress(0, small.data(), small.size());
  EXPECT_EQ(store.original_bytes(0), 400u);
  EXPECT_LT(store.held_bytes(), 1000u) << "the big tensor's chunks are gone";
  std::vector<float> out(small.size());
  store.decompress(0, out.data());
  EXPECT_TRUE(same_bits(small, out));
}

// Large tensors are split between the store's threads; the bits and the
// figures are the same as with one.
TEST(ZeroValueStore, SeveralThreadsStoreTheSameBitsAndBytesAsOne) {
  ZeroValueStore one(1), three(3);
  EXPECT_EQ(three.threads(), 3);
  one.resize(1);
  three.resize(1);
  for (std::size_t count : {std::size_t{1000}, 3 * ZeroValueStore::kValuesPerSegment + 77, std::size_t{1} << 20})
    for (double density : {0.3, 0.95}) {
      SCOPED_TRACE(std::to_string(count) + " values, density " + std::to_string(density));
      const std::vector<float> in = values(count, density, static_cast<unsigned>(count) + 1);
      for (int store = 0; store < 2; ++store) {  // the second store of a dense tensor keeps it as it is
        one.compress(0, in.data(), count);
        three.compress(0, in.data(), count);
        EXPECT_EQ(three.stored_bytes(0), one.stored_bytes(0));
        EXPECT_EQ(three.stored_dense(0), one.stored_dense(0));
        std::vector<float> out(count);
        three.decompress(0, out.data());
        EXPECT_TRUE(same_bits(in, out));
      }
    }
}

// The offload and prefetch streams use one store at once, for different
// tensors (run under ThreadSanitizer too).
TEST(ZeroValueStore, TwoStreamsCompressAndDecompressAtOnce) {
  ZeroValueStore store(2);
  store.resize(2);
  const std::size_t count = 3 * ZeroValueStore::kValuesPerSegment;
  const std::vector<float> a = values(count, 0.4, 8), b = values(count, 0.6, 9);
  store.compress(1, b.data(), count);
  std::vector<float> out(count);
  std::thread prefetch([&] {
    for (int i = 0; i < 10; ++i) store.decompress(1, out.data());
  });
  for (int i = 0; i < 10; ++i) store.compress(0, a.data(), count);
  prefetch.join();
  EXPECT_TRUE(same_bits(b, out));
  store.decompress(0, out.data());
  EXPECT_TRUE(same_bits(a, out));
}

TEST(ZeroValueStore, ReadingWhatWasNeverStoredIsAnError) {
  ZeroValueStore store;
  store.resize(2);
  float out[4];
  EXPECT_THROW(store.decompress(1, out), std::logic_error);
  EXPECT_THROW(store.compress(2, out, 4), std::out_of_range);
}

}  // namespace
}  // namespace tidepool
