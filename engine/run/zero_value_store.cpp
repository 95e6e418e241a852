#include "engine/run/zero_value_store.h"

#include <algorithm>
#include <cstring>
#include <stdexcept>
#include <string>

namespace tidepool {

namespace {

constexpr std::size_t kGroup = 32;  // values per bitmap word

std::size_t groups(std::size_t count) { return (count + kGroup - 1) / kGroup; }

}  // namespace

ZeroValueStore::ZeroValueStore(int threads) : pool_(threads) {}

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

// Chunk `c` of `s`, allocated (zeroed) when it is new. Values are kept as
// their bits, so copying them never canonicalises a NaN.
std::uint32_t* ZeroValueStore::chunk(Segment& s, std::size_t c) {
  while (s.chunks.size() <= c) {
    s.chunks.push_back(std::make_unique<std::uint32_t[]>(s.chunk_values));
    s.used.push_back(0);
  }
  return s.chunks[c].get();
}

void ZeroValueStore::store_as_is(Segment& s, const float* src) {
  std::fill(s.used.begin(), s.used.end(), 0);
  std::size_t done = 0;
  for (std::size_t c = 0; done < s.count; ++c) {
    const std::size_t n = std::min(s.chunk_values, s.count - done);
    std::memcpy(chunk(s, c), src + s.begin + done, n * sizeof(float));
    s.used[c] = n;
    done += n;
  }
  s.kept = s.count;
}

void ZeroValueStore::compress(Segment& s, const float* src, std::uint32_t* bitmap) {
  std::fill(s.used.begin(), s.used.end(), 0);
  std::size_t c = 0, k = 0, kept = 0;
  std::uint32_t* out = chunk(s, 0);
  for (std::size_t g = s.begin / kGroup, end = groups(s.begin + s.count); g < end; ++g) {
    if (s.chunk_values - k < kGroup) {  // the next group might not fit
      s.used[c] = k;
      kept += k;
      out = chunk(s, ++c);
      k = 0;
    }
    const std::size_t base = g * kGroup, n = std::min(kGroup, s.begin + s.count - base);
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
    bitmap[g] = bits;
  }
  s.used[c] = k;
  s.kept = kept + k;
}

void ZeroValueStore::compress(int t, const float* src, std::size_t count) {
  Entry& e = entry(t);
  if (e.count != count) {  // a new tensor (or a re-plan): start afresh
    e = Entry{};
    e.count = count;
    e.bitmap.resize(groups(count));
    // Segments of whole groups, one per thread where the tensor is large
    // enough; chunks of a sixteenth of a segment in whole groups, so a
    // group never spans chunks and values stored as they are fill every
    // chunk exactly.
    const std::size_t n = std::clamp<std::size_t>(count / kValuesPerSegment, 1, static_cast<std::size_t>(threads()));
    const std::size_t per = groups(groups(count) * kGroup / n) * kGroup;
    for (std::size_t begin = 0; begin < count; begin += per) {
      Segment seg;
      seg.begin = begin;
      seg.count = std::min(per, count - begin);
      seg.chunk_values = std::max(2 * kGroup, groups((seg.count + kChunksPerTensor - 1) / kChunksPerTensor) * kGroup);
      e.segments.push_back(std::move(seg));
    }
  }
  const bool measure = !e.dense || e.stores % kRemeasureEvery == 0;
  ++e.stores;
  e.as_is = !measure;  // dense: the values as they are, chunk by chunk
  pool_.run(e.segments.size(), [&](std::size_t i) {
    if (e.as_is)
      store_as_is(e.segments[i], src);
    else
      compress(e.segments[i], src, e.bitmap.data());
  });
  e.kept = 0;
  for (const Segment& seg : e.segments) e.kept += seg.kept;
  if (e.as_is) return;
  e.dense = static_cast<double>(e.kept) > kDenseFraction * static_cast<double>(count);
  e.stores = e.dense ? 1 : 0;  // dense: stored as it is until measured again
}

void ZeroValueStore::load_as_is(const Segment& s, float* dst) {
  std::size_t done = 0;
  for (std::size_t c = 0; done < s.count; ++c) {
    std::memcpy(dst + s.begin + done, s.chunks[c].get(), s.used[c] * sizeof(float));
    done += s.used[c];
  }
}

void ZeroValueStore::decompress(const Segment& s, const std::uint32_t* bitmap, float* dst) {
  std::size_t c = 0, k = 0;
  const std::uint32_t* in = s.chunks[0].get();
  for (std::size_t g = s.begin / kGroup, end = groups(s.begin + s.count); g < end; ++g) {
    if (s.chunk_values - k < kGroup) {  // the step compress() took here
      in = s.chunks[++c].get();
      k = 0;
    }
    const std::size_t base = g * kGroup, n = std::min(kGroup, s.begin + s.count - base);
    const std::uint32_t bits = bitmap[g];
    for (std::size_t i = 0; i < n; ++i) {
      const std::uint32_t keep = (bits >> i) & 1u;
      const std::uint32_t v = in[k] & (0u - keep);  // zero where the bitmap says so
      std::memcpy(dst + base + i, &v, sizeof v);
      k += keep;
    }
  }
}

void ZeroValueStore::decompress(int t, float* dst) const {
  const Entry& e = entry(t);
  if (e.segments.empty() || e.segments.front().chunks.empty())
    throw std::logic_error("zero-value store: tensor " + std::to_string(t) + " was never stored");
  pool_.run(e.segments.size(), [&](std::size_t i) {
    if (e.as_is)
      load_as_is(e.segments[i], dst);
    else
      decompress(e.segments[i], e.bitmap.data(), dst);
  });
}

std::size_t ZeroValueStore::stored_bytes(int t) const {
  const Entry& e = entry(t);
  return (e.kept + (e.as_is ? 0 : e.bitmap.size())) * sizeof(std::uint32_t);
}

std::size_t ZeroValueStore::original_bytes(int t) const { return entry(t).count * sizeof(float); }

bool ZeroValueStore::stored_dense(int t) const { return entry(t).as_is; }

std::size_t ZeroValueStore::held_bytes() const {
  std::size_t bytes = 0;
  for (const Entry& e : entries_) {
    bytes += e.bitmap.capacity() * sizeof(std::uint32_t);
    for (const Segment& s : e.segments) bytes += s.chunks.size() * s.chunk_values * sizeof(std::uint32_t);
  }
  return bytes;
}

}  // namespace tidepool
