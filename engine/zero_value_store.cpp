#include "engine/zero_value_store.h"

#include <algorithm>
#include <cstring>
#include <stdexcept>
#include <string>

namespace tidepool {

namespace {

constexpr std::size_t kGroup = 32;  // values per bitmap word

std::size_t groups(std::size_t count) { return (count + kGroup - 1) / kGroup; }

}  // namespace

void ZeroValueStore::resize(std::size_t tensors) {
  if (entries_.size() < tensors) entries_.resize(tensors);
}

ZeroValueStore::Entry& ZeroValueStore::entry(int t) {
  if (t < 0 || static_cast<std::size_t>(t) >= entries_.size())
    throw std::out_of_range("zero-value store: no entry for tensor " + std::to_string(t));
  return entries_[static_cast<std::size_t>(t)];
}

const ZeroValueStore::Entry& ZeroValueStore::entry(int t) const {
  return const_cast<ZeroValueStore*>(this)->entry(t);
}

// Chunk `c` of `e`, allocated (zeroed) when it is new. Values are kept as
// their bits, so copying them never canonicalises a NaN.
std::uint32_t* ZeroValueStore::chunk(Entry& e, std::size_t c) {
  while (e.chunks.size() <= c) {
    e.chunks.push_back(std::make_unique<std::uint32_t[]>(e.chunk_values));
    e.used.push_back(0);
  }
  return e.chunks[c].get();
}

void ZeroValueStore::compress(int t, const float* src, std::size_t count) {
  Entry& e = entry(t);
  if (e.count != count) {  // a new tensor (or a re-plan): start afresh
    e = Entry{};
    e.count = count;
    // A sixteenth of the tensor in whole groups, so a group never spans
    // chunks and values stored as they are fill every chunk exactly.
    e.chunk_values = std::max(2 * kGroup, groups((count + kChunksPerTensor - 1) / kChunksPerTensor) * kGroup);
  }
  std::fill(e.used.begin(), e.used.end(), 0);
  const bool measure = !e.dense || e.stores % kRemeasureEvery == 0;
  ++e.stores;

  if (!measure) {  // dense: the values as they are, chunk by chunk
    std::size_t done = 0;
    for (std::size_t c = 0; done < count; ++c) {
      const std::size_t n = std::min(e.chunk_values, count - done);
      std::memcpy(chunk(e, c), src + done, n * sizeof(float));
      e.used[c] = n;
      done += n;
    }
    e.kept = count;
    e.as_is = true;
    return;
  }

  e.bitmap.resize(groups(count));
  std::size_t c = 0, k = 0, kept = 0;
  std::uint32_t* out = chunk(e, 0);
  for (std::size_t g = 0; g < e.bitmap.size(); ++g) {
    if (e.chunk_values - k < kGroup) {  // the next group might not fit
      e.used[c] = k;
      kept += k;
      out = chunk(e, ++c);
      k = 0;
    }
    const std::size_t base = g * kGroup, n = std::min(kGroup, count - base);
    std::uint32_t bits = 0;
    for (std::size_t i = 0; i < n; ++i) {
      // Written every time and kept only when non-zero: no branch.
      std::uint32_t v;
      std::memcpy(&v, src + base + i, sizeof v);
      const std::uint32_t nonzero = v != 0;
      out[k] = v;
      k += nonzero;
      bits |= nonzero << i;
    }
    e.bitmap[g] = bits;
  }
  e.used[c] = k;
  e.kept = kept + k;
  e.as_is = false;
  e.dense = static_cast<double>(e.kept) > kDenseFraction * static_cast<double>(count);
  e.stores = e.dense ? 1 : 0;  // dense: stored as it is until measured again
}

void ZeroValueStore::decompress(int t, float* dst) const {
  const Entry& e = entry(t);
  if (e.chunks.empty()) throw std::logic_error("zero-value store: tensor " + std::to_string(t) + " was never stored");
  if (e.as_is) {
    std::size_t done = 0;
    for (std::size_t c = 0; done < e.count; ++c) {
      std::memcpy(dst + done, e.chunks[c].get(), e.used[c] * sizeof(float));
      done += e.used[c];
    }
    return;
  }
  std::size_t c = 0, k = 0;
  const std::uint32_t* in = e.chunks[0].get();
  for (std::size_t g = 0; g < e.bitmap.size(); ++g) {
    if (e.chunk_values - k < kGroup) {  // the step compress() took here
      in = e.chunks[++c].get();
      k = 0;
    }
    const std::size_t base = g * kGroup, n = std::min(kGroup, e.count - base);
    const std::uint32_t bits = e.bitmap[g];
    for (std::size_t i = 0; i < n; ++i) {
      const std::uint32_t keep = (bits >> i) & 1u;
      const std::uint32_t v = in[k] & (0u - keep);  // zero where the bitmap says so
      std::memcpy(dst + base + i, &v, sizeof v);
      k += keep;
    }
  }
}

std::size_t ZeroValueStore::stored_bytes(int t) const {
  const Entry& e = entry(t);
  return (e.kept + (e.as_is ? 0 : e.bitmap.size())) * sizeof(std::uint32_t);
}

std::size_t ZeroValueStore::original_bytes(int t) const { return entry(t).count * sizeof(float); }

bool ZeroValueStore::stored_dense(int t) const { return entry(t).as_is; }

std::size_t ZeroValueStore::held_bytes() const {
  std::size_t bytes = 0;
  for (const Entry& e : entries_)
    bytes += (e.chunks.size() * e.chunk_values + e.bitmap.capacity()) * sizeof(std::uint32_t);
  return bytes;
}

}  // namespace tidepool
