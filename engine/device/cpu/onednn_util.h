// Shared oneDNN plumbing for the cpu kernels. Included only by
// engine/device/cpu/*.cpp: it is the one place that pulls in dnnl.hpp.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <dnnl.hpp>
#include <functional>
#include <memory>
#include <mutex>
#include <new>
#include <stdexcept>
#include <string>
#include <thread>
#include <unordered_map>
#include <utility>
#include <vector>

#include "engine/device/kernel_cache.h"
#include "engine/device/kernels.h"

namespace tidepool::onednn {

using dnnl::algorithm;
using dnnl::memory;
using dnnl::prop_kind;
using Tag = memory::format_tag;
using Dims = memory::dims;

inline constexpr memory::data_type kF32 = memory::data_type::f32;
inline constexpr std::size_t kAlign = 64;

inline std::size_t align_up(std::size_t bytes) { return (bytes + kAlign - 1) / kAlign * kAlign; }

inline memory::desc f32_desc(const Dims& dims, Tag tag) { return memory::desc(dims, kF32, tag); }

// oneDNN's type for an activation dtype: f32, or bf16 where the table
// takes it (CpuKernels::takes_16bit). f16 has no oneDNN 2.6 training
// kernels on x86, so no table takes it and asking for it is a bug.
inline memory::data_type data_type(DType t) {
  switch (t) {
    case DType::f32: return kF32;
    case DType::bf16: return memory::data_type::bf16;
    default: break;
  }
  throw std::logic_error("cpu kernels: no oneDNN activations of type " + std::string(to_string(t)));
}
inline memory::desc vec_desc(std::int64_t count) { return f32_desc({count}, Tag::x); }

// The descriptor of a 4-D activation [n, c, h, w] as the arena holds it:
// channel-blocked when kernels.h's channel_blocked(c, block) says so
// (nChw8c or nChw16c, the blocks oneDNN's kernels use), else NCHW.
inline Tag activation_tag(std::int64_t c, std::int64_t block) {
  if (!channel_blocked(c, block)) return Tag::nchw;
  if (block == 8) return Tag::nChw8c;
  if (block == 16) return Tag::nChw16c;
  throw std::invalid_argument("cpu kernels: channel block " + std::to_string(block) + " is not 8 or 16");
}
inline memory::desc activation_desc(std::int64_t n, std::int64_t c, std::int64_t h, std::int64_t w,
                                    std::int64_t block, DType type = DType::f32) {
  return memory::desc({n, c, h, w}, data_type(type), activation_tag(c, block));
}

// oneDNN takes non-const handles even for inputs it only reads.
inline memory wrap(const memory::desc& md, const dnnl::engine& eng, const void* p) {
  return memory(md, eng, const_cast<void*>(p));
}

// Scratchpads are always user-provided: the convolutions take theirs from
// the caller's workspace, the other primitives from a buffer owned by their
// cache entry (sized once, when the primitive is created).
inline dnnl::primitive_attr user_scratchpad() {
  dnnl::primitive_attr attr;
  attr.set_scratchpad_mode(dnnl::scratchpad_mode::user);
  return attr;
}

// First element of every key, so different ops never share an entry.
enum class Op : std::int64_t {
  conv = 1,
  batchnorm_train,
  batchnorm_infer,
  batchnorm_backward,
  relu,
  pool,
  channel_reorder,
  linear_forward,
  linear_backward_data,
  linear_backward_weights,
};

inline std::int64_t float_bits(float f) {
  std::uint32_t u = 0;
  std::memcpy(&u, &f, sizeof u);
  return static_cast<std::int64_t>(u);
}

struct CacheEntry {
  virtual ~CacheEntry() = default;
};

// A scratchpad owned by a cache entry. Executions that use it are
// serialised by its mutex, since two concurrent runs would share the bytes.
class OwnedScratchpad {
 public:
  OwnedScratchpad() = default;
  OwnedScratchpad(const OwnedScratchpad&) = delete;
  OwnedScratchpad& operator=(const OwnedScratchpad&) = delete;

  // Sizes the buffer for a primitive's scratchpad; called once, when the
  // primitive is built and before anything runs with it.
  void reset(const memory::desc& md, const dnnl::engine& eng) {
    bytes_ = md.get_size();
    buffer_.reset();
    memory_ = memory();
    if (bytes_ > 0) {
      buffer_.reset(static_cast<std::byte*>(::operator new(bytes_, std::align_val_t{kAlign})));
      memory_ = memory(md, eng, buffer_.get());
    }
  }
  std::size_t bytes() const { return bytes_; }
  std::mutex& mutex() { return mutex_; }
  void add_arg(std::unordered_map<int, memory>& args) const {
    if (bytes_ > 0) args.insert({DNNL_ARG_SCRATCHPAD, memory_});
  }

 private:
  struct AlignedDelete {
    void operator()(std::byte* p) const { ::operator delete(p, std::align_val_t{kAlign}); }
  };
  std::size_t bytes_ = 0;
  std::unique_ptr<std::byte, AlignedDelete> buffer_;
  memory memory_;
  std::mutex mutex_;
};

struct Context {
  dnnl::engine engine{dnnl::engine::kind::cpu, 0};

  // Returns the entry for `key`, building it with `make` (which returns
  // std::unique_ptr<T>) on first use. Entries are never evicted, so the
  // reference stays valid for the Context's lifetime.
  template <class T, class Make>
  T& entry(const CacheKey& key, Make&& make) {
    return static_cast<T&>(find_or_build(
        key, [&]() -> std::unique_ptr<CacheEntry> { return std::forward<Make>(make)(); }));
  }

  // Executes on the calling thread's stream and waits for it.
  void run(const dnnl::primitive& prim, std::unordered_map<int, memory> args) {
    dnnl::stream& s = stream_for_this_thread();
    prim.execute(s, args);
    s.wait();
  }

 private:
  CacheEntry& find_or_build(const CacheKey& key,
                            const std::function<std::unique_ptr<CacheEntry>()>& make);
  dnnl::stream& stream_for_this_thread();

  std::mutex mutex_;
  std::unordered_map<CacheKey, std::unique_ptr<CacheEntry>, CacheKeyHash> cache_;

  std::mutex streams_mutex_;
  std::unordered_map<std::thread::id, std::unique_ptr<dnnl::stream>> streams_;
};

// The channel block oneDNN's convolutions pick on this processor (8 on
// AVX2, 16 on AVX-512; 0 when they pick NCHW): engine/device/cpu/channel_blocks.cpp.
std::int64_t conv_channel_block(Context& ctx);
// Whether oneDNN runs bf16 training on this processor's BF16 instructions
// (AVX-512 BF16 or AMX, within the ISA oneDNN is allowed) with a jit
// bf16 convolution, not its reference one. Same file.
bool native_bf16(Context& ctx);

}  // namespace tidepool::onednn
