// CpuKernels' lifetime and the primitive cache the op files share.
//
// Why a cache: creating a oneDNN primitive descriptor walks the
// implementation list and a primitive JIT-compiles its kernel, which costs
// from tens of microseconds to milliseconds. A training step runs the same
// few dozen shapes thousands of times, so every op builds its primitives
// once, keyed by everything that shapes them, and keeps them until the table
// is destroyed. The planner asks for workspace sizes before the first step,
// usually from another thread, and those queries build the same entries the
// kernels later run, which is what makes the reported size and the size a
// kernel carves the same number.
#include "engine/device/cpu/cpu_kernels.h"

#include <cstdlib>
#include <stdexcept>
#include <string>
#include <thread>

#include "engine/device/cpu/onednn_util.h"

namespace tidepool {

namespace onednn {

CacheEntry& Context::find_or_build(const CacheKey& key,
                                   const std::function<std::unique_ptr<CacheEntry>()>& make) {
  // Building under the lock is deliberate: two threads asking for the same
  // new shape would otherwise both pay for the build, and the m scheme's
  // search is the most expensive thing here. Builds only happen while a
  // model is being planned, so nobody waits on this in steady state.
  std::lock_guard<std::mutex> lock(mutex_);
  auto it = cache_.find(key);
  if (it != cache_.end()) return *it->second;
  std::unique_ptr<CacheEntry> built = make();
  if (!built) throw std::logic_error("onednn cache: builder returned no entry");
  return *cache_.emplace(key, std::move(built)).first->second;
}

// The device runs kernels on whichever stream worker they were submitted
// to, so two threads may execute at once. oneDNN does not promise that one
// dnnl::stream may be used from several threads concurrently, so each
// thread gets its own (a CPU stream is only a handle; a few threads ever
// call in). The map has its own lock so that a long cache build never
// blocks a kernel that is already built.
dnnl::stream& Context::stream_for_this_thread() {
  std::lock_guard<std::mutex> lock(streams_mutex_);
  std::unique_ptr<dnnl::stream>& s = streams_[std::this_thread::get_id()];
  if (!s) s = std::make_unique<dnnl::stream>(engine);
  return *s;
}

}  // namespace onednn

namespace {

// oneDNN's CPU engine is cheap to create but checks the ISA and reads its
// environment knobs (DNNL_MAX_CPU_ISA, DNNL_VERBOSE) once per process; a
// bad knob should fail here, at device creation, not inside the first
// kernel of a training run.
std::unique_ptr<onednn::Context> make_context() {
  try {
    return std::make_unique<onednn::Context>();
  } catch (const dnnl::error& e) {
    throw std::runtime_error(std::string("cpu kernels: cannot create the oneDNN cpu engine: ") +
                             e.what());
  }
}

}  // namespace

CpuKernels::CpuKernels()
    : ctx_(make_context()),
      channel_block_(onednn::conv_channel_block(*ctx_)),
      native_bf16_(onednn::native_bf16(*ctx_)) {}

void CpuKernels::require_activation_type(DType type, const char* op) const {
  if (type != DType::f32 && !takes_16bit(type)) require_f32(type, op);
}

// Out of line so that the header never needs onednn::Context's definition.
CpuKernels::~CpuKernels() = default;

}  // namespace tidepool
