// Offloaded tensors kept zero-value compressed in ordinary (pageable) host
// memory: vDNN++ §III-C. The tensors vDNN offloads are mostly ReLU outputs,
// and many of their values are zero; pinned memory cannot be paged out or
// used by anyone else, and a network's offloaded bytes reach gigabytes. So
// with compression an offload copies into one pinned staging slot, and a
// host task on the offload stream compresses the slot into this store; a
// prefetch decompresses into another slot on the prefetch stream and copies
// from there. The pinned region shrinks to the two slots.
//
// Zero-value compression: one bit per value (set where the value's bits
// are not all zero) and the non-zero values, in order. A value is 32 bits:
// 16-bit activations (--precision) are compressed in pairs. Only +0.0f counts as
// zero, so -0.0f, NaNs and denormals come back bit for bit and compression
// never changes the numbers. The compressed size is not known before the
// values are read (counting first would double the work, as vDNN++ notes),
// so values go into chunks of a sixteenth of the tensor, allocated as they
// fill and kept for later iterations: what the store holds exceeds what it
// needs by less than one chunk per tensor and 32 values per chunk (a
// group of 32 never spans two chunks).
//
// A tensor whose last compression kept more than kDenseFraction of its
// values is dense (a convolution's output before batch norm): compressing
// it would cost time and save little, so it is stored as it is, and
// measured again every kRemeasureEvery-th time (densities drift as a
// network trains).
//
// Large tensors are split into segments of whole 32-value groups, one per
// thread of the store's pool, each with its own chunks: vDNN++ compresses
// "different parts of the offloaded layer data in parallel" on the cores
// that training leaves idle.
//
//   ZeroValueStore store(threads);
//   store.resize(schedule.tensors.size());          // host, between iterations
//   store.compress(t, staged, count);               // the offload stream
//   store.decompress(t, staged);                    // the prefetch stream, later
//   store.stored_bytes(t);                          // host, after synchronising
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

#include "engine/run/host_thread_pool.h"

namespace tidepool {

class ZeroValueStore {
 public:
  static constexpr double kDenseFraction = 7.0 / 8.0;
  static constexpr int kRemeasureEvery = 16;
  static constexpr std::size_t kChunksPerTensor = 16;
  // Segments are at least this many values (256 KiB): smaller ones are not
  // worth a thread.
  static constexpr std::size_t kValuesPerSegment = std::size_t{1} << 16;

  // `threads` (the caller included) compress and decompress one tensor.
  explicit ZeroValueStore(int threads = 1);
  int threads() const { return pool_.threads(); }

  // Makes room for tensor ids [0, tensors). Host only, while no stream
  // uses the store; keeps what earlier tensors hold.
  void resize(std::size_t tensors);

  // Stores `count` floats from `src` as tensor `t`, replacing what it held.
  // Calls for different tensors may run at once (the offload and prefetch
  // streams); calls for one tensor must be ordered by the caller.
  void compress(int t, const float* src, std::size_t count);
  // Writes tensor `t`'s values, exactly as they were stored, to `dst`.
  void decompress(int t, float* dst) const;

  // Read on the host once the streams that wrote them are synchronised.
  // Bytes the last compression of `t` needs: its bitmap and non-zero values
  // (or the values, when stored as they are).
  std::size_t stored_bytes(int t) const;
  // Bytes of the values as offloaded.
  std::size_t original_bytes(int t) const;
  bool stored_dense(int t) const;
  // Host memory the store has allocated for every tensor: what it takes
  // from the machine.
  std::size_t held_bytes() const;

 private:
  // A range of whole groups of a tensor, stored in chunks of its own.
  struct Segment {
    std::size_t begin = 0, count = 0;  // values
    std::size_t kept = 0;              // values the last store kept
    std::size_t chunk_values = 0;
    std::vector<std::unique_ptr<std::uint32_t[]>> chunks;
    std::vector<std::size_t> used;  // values in each chunk
  };
  struct Entry {
    std::size_t count = 0;
    std::size_t kept = 0;     // values the last store kept (count when as_is)
    bool as_is = false;       // the last store kept the values as they are, no bitmap
    bool dense = false;       // the last measurement found it dense
    int stores = 0;           // since that measurement
    std::vector<std::uint32_t> bitmap;
    std::vector<Segment> segments;
  };
  Entry& entry(int t);
  const Entry& entry(int t) const;
  static std::uint32_t* chunk(Segment& s, std::size_t c);
  static void store_as_is(Segment& s, const float* src);
  static void compress(Segment& s, const float* src, std::uint32_t* bitmap);
  static void load_as_is(const Segment& s, float* dst);
  static void decompress(const Segment& s, const std::uint32_t* bitmap, float* dst);

  std::vector<Entry> entries_;
  mutable HostThreadPool pool_;
};

}  // namespace tidepool
