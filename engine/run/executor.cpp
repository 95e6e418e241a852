#include "engine/run/executor.h"

#include <algorithm>
#include <array>
#include <cstring>
#include <functional>
#include <stdexcept>
#include <string>

#include "engine/core/bytes_text.h"
#include "engine/step_calls/bucket_call.h"
#include "engine/step_calls/layer_args.h"

namespace tidepool {

namespace {

// A fresh, well-mixed seed per (run seed, iteration, layer) so dropout masks
// differ between layers and iterations yet repeat exactly run after run.
std::uint64_t mix_seed(std::uint64_t seed, std::int64_t iteration, int node) {
  std::uint64_t z = seed ^ (static_cast<std::uint64_t>(iteration) * 0x9E3779B97F4A7C15ull) ^
                    (static_cast<std::uint64_t>(node) << 32);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

}  // namespace

// The events of one iteration, resolved to times when it ends, and what
// the host has issued per tensor so far. It watches the pool: every block
// placed, freed, parked or given back becomes an allocation event stamped
// with the compute work it follows.
struct Executor::Pending final : PoolObserver {
  explicit Pending(const Schedule& s)
      : schedule(s),
        offload_done(s.tensors.size()),
        prefetch_done(s.tensors.size()),
        offload_copy(s.tensors.size()),
        prefetch_copy(s.tensors.size()),
        host_ready(s.tensors.size()),
        compressed(s.tensors.size(), false),
        offload_unwaited(s.tensors.size(), false),
        reclaimed(s.tensors.size(), false),
        reduced(s.buckets.size()) {}

  void on_pool_event(const PoolEvent& e) override {
    const TensorInfo& info = schedule.tensors[static_cast<std::size_t>(e.id)].info;
    allocs.push_back({AllocEvent{0, e.event, e.action, static_cast<int>(e.id), info.name, info.role, e.block.offset,
                                 e.block.bytes, 0},
                      LoadSample{0, e.event, 0, e.load_bytes, e.extent_bytes, e.largest_free_bytes}, last_compute});
  }

  struct Span {
    SpanEvent event;
    std::shared_ptr<DeviceEvent> start, end;
    int stored = -1;  // (de)compression: its bytes are the store's for this tensor, known at the end
    std::shared_ptr<const CopyThreads::Copy> by_thread;  // a copy thread's copy: its times instead of the events
  };
  struct Alloc {
    AllocEvent event;
    LoadSample load;
    std::shared_ptr<DeviceEvent> at;
  };
  const Schedule& schedule;
  std::vector<Span> spans;
  std::vector<Alloc> allocs;
  std::shared_ptr<DeviceEvent> first, last_compute;
  std::vector<std::shared_ptr<DeviceEvent>> offload_done, prefetch_done;  // per tensor: the copies
  // Per tensor, CopyEngine::threads: the copy threads' copies instead.
  std::vector<std::shared_ptr<const CopyThreads::Copy>> offload_copy, prefetch_copy;
  // Per tensor: its host copy is complete (the offload's copy, or with
  // compression the compression after it), so a prefetch may read it.
  std::vector<std::shared_ptr<DeviceEvent>> host_ready;
  std::vector<bool> compressed;        // per tensor: its host copy is in the zero-value store
  std::vector<bool> offload_unwaited;  // per tensor: an offload the compute stream has not waited for
  // Per tensor: placed again in its own still-parked block, so its bytes
  // are on the device already and its prefetch has nothing to copy.
  std::vector<bool> reclaimed;
  std::vector<std::shared_ptr<DeviceEvent>> reduced;  // per bucket: its all-reduce on the comm stream
  // From the read-back slot once the iteration is done: the loss tensor
  // (loss, top-1 and top-5 correct), then fp16's overflow flag.
  std::array<float, 4> readback{};
  static constexpr std::size_t kLossBytes = 3 * sizeof(float), kOverflowOffset = kLossBytes;
};

namespace {
// Points the pool's events at one iteration's record while it runs.
class Watching {
 public:
  Watching(DevicePool& pool, PoolObserver& observer) : pool_(pool) { pool_.set_observer(&observer); }
  ~Watching() { pool_.set_observer(nullptr); }
  Watching(const Watching&) = delete;
  Watching& operator=(const Watching&) = delete;

 private:
  DevicePool& pool_;
};
}  // namespace

Executor::Executor(Device& device, const Network& network, std::byte* arena, std::span<std::byte> pinned,
                   std::span<std::byte> readback, EventSink* sink, int compress_threads)
    : device_(device),
      network_(network),
      sink_(sink),
      arena_(arena),
      pinned_(pinned.data()),
      pinned_bytes_(pinned.size()),
      readback_(readback),
      store_(compress_threads) {}

std::byte* Executor::device_address(int tensor) const {
  return tensor >= 0 && placement_.placed[tensor] ? arena_ + placement_.offset[tensor] : nullptr;
}

std::shared_ptr<DeviceEvent> Executor::span(Pending& pending, Stream stream, SpanEvent e,
                                            const std::function<void()>& submit, int stored) {
  auto start = std::shared_ptr<DeviceEvent>(device_.record(stream));
  submit();
  auto end = std::shared_ptr<DeviceEvent>(device_.record(stream));
  if (stream == Stream::compute) pending.last_compute = end;
  e.stream = stream;
  pending.spans.push_back({std::move(e), std::move(start), end, stored});
  return end;
}

void Executor::use_pool(std::string_view heuristic, std::size_t pool_bytes, const Schedule& s) {
  pool_.reset();  // the old pool's blocks are gone with it
  pool_ = std::make_unique<DevicePool>(device_, heuristic, pool_bytes);
  placement_ = Placement{};
  placement_.resize(s.tensors.size());
  Pending pending(s);
  Watching watching(*pool_, pending);
  pool_->start_iteration(0);
  pending.last_compute = device_.record(Stream::compute);
  for (int t : s.persistent) place(s, t, -1, false, pending);
  device_.synchronize();
  IterationResult setup;
  report(s, -1, pending, setup);
}

void Executor::place(const Schedule& s, int t, int step, bool will_offload, Pending& pending) {
  const TensorInfo& info = s.tensors[t].info;
  if (placement_.placed[t]) throw std::logic_error("tensor " + info.name + " is placed twice");
  const std::size_t first_event = pending.allocs.size();
  const DevicePool::Placed got = pool_->place(t, {info.bytes(), t, info.role, will_offload}, step, info.name);
  placement_.offset[t] = got.offset;
  placement_.placed[t] = true;
  placement_.residency[t] = Residency::device;
  pending.reclaimed[t] = got.reclaimed;
  // Async: offloads still read the range; the first kernel here waits for
  // them on the device.
  for (const DevicePool::Placed::Copy& copy : got.ready) {
    SpanEvent e;
    e.step = step;
    e.kind = SpanKind::wait;
    e.tensor = s.tensors[static_cast<std::size_t>(copy.id)].info.name;  // the copy being waited for
    span(pending, Stream::compute, std::move(e), [&] { device_.wait(Stream::compute, *copy.done); });
  }
  if (!got.ready.empty())
    for (std::size_t i = first_event; i < pending.allocs.size(); ++i) pending.allocs[i].at = pending.last_compute;
}

void Executor::release(const Schedule& s, int t, int step, bool after_copy, Pending& pending) {
  const TensorInfo& info = s.tensors[t].info;
  if (!placement_.placed[t]) throw std::logic_error("tensor " + info.name + " is freed while not placed");
  // The host reads the loss once the iteration is done. Into pinned memory,
  // so the copy is queued like any other: into pageable memory CUDA would
  // hold the host until it is done, and the GPU would idle while the host
  // then queued the backward pass.
  if (t == s.loss) device_.copy_async(Stream::compute, readback_.data(), device_address(t), Pending::kLossBytes);
  if (t == s.overflow)
    device_.copy_async(Stream::compute, readback_.data() + Pending::kOverflowOffset, device_address(t), sizeof(float));
  // A copy thread's offload is no event a later user could wait for: the
  // host waits for it before the block can go to anyone.
  if (pending.offload_unwaited[t] && pending.offload_copy[t]) {
    wait_copy(*pending.offload_copy[t], t, s, step, pending);
    pending.offload_unwaited[t] = false;
  }
  // Async: the copy to the host may still read the block.
  pool_->free(t, step, after_copy, pending.offload_unwaited[t] ? pending.offload_done[t] : nullptr);
  placement_.placed[t] = false;
  // Freed while its offload is issued: the data lives on in the pinned region.
  if (placement_.residency[t] == Residency::in_flight) placement_.residency[t] = Residency::host;
}

void Executor::compute(const Schedule& s, const Step& st, int step, const IterationInputs& in, Pending& pending) {
  const Layer* layer = network_.nodes()[st.node].layer.get();
  const bool forward = st.kind != StepKind::backward;
  const bool again = st.kind == StepKind::recompute;
  LayerCall call = layer_call(s, *layer, st.node, forward, [&](int t) { return device_address(t); });
  call.args.recompute = again;
  call.args.seed = mix_seed(in.seed, in.iteration, st.node);  // a recompute's dropout mask is the first pass's
  if (!forward && s.overflow >= 0 && s.nodes[st.node].output == s.loss) scale_loss_gradient(call, in.loss_scale);

  SpanEvent e;
  e.step = step;
  e.kind = again ? SpanKind::recompute : forward ? SpanKind::forward : SpanKind::backward;
  e.layer = layer->name();
  device_.range_push(Stream::compute, layer->name() + (again ? " recompute" : forward ? " fwd" : " bwd"));
  if (call.rank_sums == 0) {
    span(pending, Stream::compute, std::move(e), [&] {
      device_.submit(Stream::compute, [call = std::move(call)](Kernels& k) { tidepool::run(k, call); });
    });
  } else {
    sync_statistics(std::move(call), e, pending);
  }
  device_.range_pop(Stream::compute);
}

// --sync-bn: the pass's first part leaves this rank's sums in its
// workspace; they are summed over the ranks on the comm stream, behind any
// bucket already queued there, so that every rank issues its collectives in
// the schedule's order (two streams issuing them at once could pair one
// rank's bucket with another's sums); the compute stream waits for them
// and runs the rest. As in PyTorch's SyncBatchNorm, the compute stream
// stalls for the all-reduce: the rest of the pass cannot start without it.
void Executor::sync_statistics(LayerCall call, const SpanEvent& e, Pending& pending) {
  const int ranks = pending.schedule.settings.memory.ranks;
  if (!comm_ || comm_->size() != ranks)
    throw std::logic_error("the schedule syncs batch-norm statistics over " + std::to_string(ranks) +
                           " ranks; the executor has " + (comm_ ? std::to_string(comm_->size()) : "no") +
                           " communicator");
  double* sums = call.args.rank_sums;
  const std::size_t count = call.rank_sums;
  LayerCall first = call;
  first.args.part = PassPart::sums;
  call.args.part = PassPart::rest;
  span(pending, Stream::compute, e, [&] {
    device_.submit(Stream::compute, [first = std::move(first)](Kernels& k) { tidepool::run(k, first); });
  });
  SpanEvent reduce = e;
  reduce.kind = SpanKind::all_reduce;
  reduce.layer.clear();
  reduce.tensor = e.layer + (e.kind == SpanKind::forward ? ".sums" : ".grad_sums");
  reduce.bytes = count * sizeof(double);
  device_.wait(Stream::comm, *pending.last_compute);
  device_.range_push(Stream::comm, reduce.tensor);
  const auto summed =
      span(pending, Stream::comm, reduce, [&] { device_.all_reduce(Stream::comm, sums, count, *comm_); });
  device_.range_pop(Stream::comm);
  SpanEvent wait = reduce;
  wait.kind = SpanKind::wait;
  wait.bytes = 0;
  span(pending, Stream::compute, wait, [&] { device_.wait(Stream::compute, *summed); });
  span(pending, Stream::compute, e, [&] {
    device_.submit(Stream::compute, [call = std::move(call)](Kernels& k) { tidepool::run(k, call); });
  });
}

void Executor::accumulate(const Schedule& s, const Step& st, int step, Pending& pending) {
  const std::int64_t count = s.tensors[st.tensor].info.shape.numel();
  const DType type = s.tensors[st.tensor].info.dtype;
  const std::byte* src = device_address(st.source);
  std::byte* dst = device_address(st.tensor);
  const std::string& layer = network_.nodes()[st.node].layer->name();
  SpanEvent e;
  e.step = step;
  e.kind = SpanKind::accumulate;
  e.layer = layer;
  e.tensor = s.tensors[st.tensor].info.name;
  device_.range_push(Stream::compute, layer + " acc");
  span(pending, Stream::compute, std::move(e),
       [&] {
         device_.submit(Stream::compute, [=](Kernels& k) {
           if (type == DType::f32)
             k.accumulate(count, reinterpret_cast<const float*>(src), reinterpret_cast<float*>(dst));
           else
             k.accumulate_16bit(count, type, src, dst);
         });
       });
  device_.range_pop(Stream::compute);
}

void Executor::update(const Schedule& s, const IterationInputs& in, int step, Pending& pending) {
  UpdateCall call = update_call(s, in.sgd, in.loss_scale, [&](int t) { return device_address(t); });
  SpanEvent e;
  e.step = step;
  e.kind = SpanKind::update;
  e.layer = "sgd";
  device_.range_push(Stream::compute, "sgd update");
  span(pending, Stream::compute, std::move(e), [&] {
    device_.submit(Stream::compute, [call = std::move(call)](Kernels& k) { tidepool::run(k, call); });
  });
  device_.range_pop(Stream::compute);
}

// Packs the bucket's gradients on the compute stream, right behind the
// backward step that completed them, and sums it over the ranks on the
// comm stream, where it overlaps the rest of backward.
void Executor::all_reduce(const Schedule& s, const Step& st, int step, Pending& pending) {
  if (!comm_ || comm_->size() != s.settings.memory.ranks)
    throw std::logic_error("the schedule averages gradients over " + std::to_string(s.settings.memory.ranks) +
                           " ranks; the executor has " + (comm_ ? std::to_string(comm_->size()) : "no") + " communicator");
  const GradientBucket& b = s.buckets[static_cast<std::size_t>(st.source)];
  const TensorInfo& info = s.tensors[b.tensor].info;
  BucketCall call = bucket_call(s, st.source, [&](int t) { return device_address(t); });
  float* bucket = call.bucket;
  SpanEvent e;
  e.step = step;
  e.kind = SpanKind::pack;
  e.tensor = info.name;
  e.bytes = info.bytes();
  device_.range_push(Stream::compute, "pack " + info.name);
  span(pending, Stream::compute, e, [&] {
    device_.submit(Stream::compute, [call = std::move(call)](Kernels& k) { pack(k, call); });
  });
  device_.range_pop(Stream::compute);
  device_.wait(Stream::comm, *pending.last_compute);
  e.kind = SpanKind::all_reduce;
  device_.range_push(Stream::comm, info.name);
  pending.reduced[static_cast<std::size_t>(st.source)] = span(pending, Stream::comm, e, [&] {
    device_.all_reduce(Stream::comm, bucket, static_cast<std::size_t>(info.shape.numel()), *comm_);
  });
  device_.range_pop(Stream::comm);
}

// The compute stream waits for the bucket's sum and copies the average
// back into the gradients, for the update.
void Executor::wait_all_reduce(const Schedule& s, const Step& st, int step, Pending& pending) {
  const auto& done = pending.reduced[static_cast<std::size_t>(st.source)];
  const GradientBucket& b = s.buckets[static_cast<std::size_t>(st.source)];
  const TensorInfo& info = s.tensors[b.tensor].info;
  if (!done) throw std::logic_error("waiting for the all-reduce of " + info.name + ", which was never started");
  SpanEvent e;
  e.step = step;
  e.kind = SpanKind::wait;
  e.tensor = info.name;
  span(pending, Stream::compute, e, [&] { device_.wait(Stream::compute, *done); });
  BucketCall call = bucket_call(s, st.source, [&](int t) { return device_address(t); });
  e.kind = SpanKind::unpack;
  e.bytes = info.bytes();
  device_.range_push(Stream::compute, "unpack " + info.name);
  span(pending, Stream::compute, e, [&] {
    device_.submit(Stream::compute, [call = std::move(call)](Kernels& k) { unpack(k, call); });
  });
  device_.range_pop(Stream::compute);
}

void Executor::transfer(const Schedule& s, const Step& st, int step, Pending& pending) {
  const int t = st.tensor;
  const TensorInfo& info = s.tensors[t].info;
  const bool to_host = st.kind == StepKind::offload;
  if (!to_host && pending.reclaimed[t]) return;  // still on the device: nothing to copy
  const Stream stream = to_host ? Stream::offload : Stream::prefetch;
  // Compressed offloads pass through the stream's staging slot
  // (Schedule::staging_bytes); the others have a pinned slot of their own.
  // (The batch's upload is a copy in that no offload went before.)
  const bool compressed = to_host ? s.settings.memory.compress && s.tensors[t].offloaded : pending.compressed[t];
  void*& host = placement_.host[t];
  if (compressed)
    host = pinned_ + (to_host ? 0 : s.staging_bytes);
  else if (s.tensors[t].offloaded && to_host)
    host = pinned_ + s.tensors[t].host_offset;
  if (!host) throw std::logic_error("tensor " + info.name + " has no host buffer to copy " + (to_host ? "to" : "from"));
  if (s.settings.memory.copy_engine == CopyEngine::threads) {
    // Zhuang's CPU multithreading: the copy thread waits for the compute
    // work that last touched the device bytes, and a prefetch for its
    // offload's copy too (its thread is the other one), then copies.
    if (!copies_) {
      if (!device_.caps().host_copies)
        throw DeviceError(device_.caps().name + " cannot copy from host threads: use --copy-engine stream");
      copies_ = std::make_unique<CopyThreads>(device_);
    }
    std::byte* device = device_address(t);
    std::shared_ptr<const CopyThreads::Copy> copy =
        to_host ? copies_->issue(stream, {pending.last_compute}, host, device, info.bytes(), nullptr)
                : copies_->issue(stream, {pending.last_compute}, device, host, info.bytes(), pending.offload_copy[t]);
    SpanEvent e;
    e.step = step;
    e.kind = to_host ? SpanKind::offload : SpanKind::prefetch;
    e.tensor = info.name;
    e.bytes = info.bytes();
    e.stream = stream;
    pending.spans.push_back({std::move(e), nullptr, nullptr, -1, copy});
    (to_host ? pending.offload_copy : pending.prefetch_copy)[t] = std::move(copy);
    if (to_host) pending.offload_unwaited[t] = true;
    placement_.residency[t] = Residency::in_flight;
    return;
  }
  // The device bytes were last touched by compute work (the producer, or
  // the previous owner of a reused block): the transfer starts after it.
  device_.wait(stream, *pending.last_compute);
  // Coming back: the host copy must be complete before it is read.
  if (!to_host && pending.host_ready[t]) device_.wait(stream, *pending.host_ready[t]);
  device_.range_push(stream, info.name);
  ZeroValueStore* store = &store_;
  float* staged = reinterpret_cast<float*>(host);
  // The store works on 32-bit words: a 16-bit tensor's values go in pairs
  // (a pair is zero when both are), the last padded by the slot, which is
  // rounded up to 256 bytes.
  const std::size_t count = (info.bytes() + 3) / 4;
  auto host_work = [&](SpanKind kind, std::function<void()> work) {
    SpanEvent e;
    e.step = step;
    e.kind = kind;
    e.tensor = info.name;
    return span(pending, stream, std::move(e), [&] { device_.host_task(stream, std::move(work)); }, t);
  };
  if (compressed && !to_host) host_work(SpanKind::decompress, [store, t, staged] { store->decompress(t, staged); });
  SpanEvent e;
  e.step = step;
  e.kind = to_host ? SpanKind::offload : SpanKind::prefetch;
  e.tensor = info.name;
  e.bytes = info.bytes();
  std::byte* device = device_address(t);
  const auto copied = span(pending, stream, std::move(e), [&] {
    if (to_host)
      device_.copy_async(stream, host, device, info.bytes());
    else
      device_.copy_async(stream, device, host, info.bytes());
  });
  (to_host ? pending.offload_done : pending.prefetch_done)[t] = copied;
  if (to_host) {
    pending.compressed[t] = compressed;
    pending.host_ready[t] =
        compressed ? host_work(SpanKind::compress, [store, t, staged, count] { store->compress(t, staged, count); })
                   : copied;
    pending.offload_unwaited[t] = true;
  }
  device_.range_pop(stream);
  placement_.residency[t] = Residency::in_flight;
}

void Executor::wait_copy(const CopyThreads::Copy& copy, int t, const Schedule& s, int step, Pending& pending) {
  SpanEvent e;
  e.step = step;
  e.kind = SpanKind::wait;
  e.tensor = s.tensors[static_cast<std::size_t>(t)].info.name;
  span(pending, Stream::compute, std::move(e), [&] { copies_->wait(copy); });
}

void Executor::wait_transfer(const Schedule& s, const Step& st, int step, Pending& pending) {
  if (st.kind == StepKind::wait_prefetch && pending.reclaimed[st.tensor]) return;  // nothing was copied
  const bool offload = st.kind == StepKind::wait_offload;
  if (const auto& copy = (offload ? pending.offload_copy : pending.prefetch_copy)[st.tensor]) {
    // The offload may have been waited for already, when its block was freed.
    if (!offload || pending.offload_unwaited[st.tensor]) wait_copy(*copy, st.tensor, s, step, pending);
    if (offload) pending.offload_unwaited[st.tensor] = false;
    if (!offload) placement_.residency[st.tensor] = Residency::device;
    return;
  }
  const auto& done = (st.kind == StepKind::wait_offload ? pending.offload_done : pending.prefetch_done)[st.tensor];
  if (!done)
    throw std::logic_error("waiting for a transfer of " + s.tensors[st.tensor].info.name + " that was never started");
  SpanEvent e;
  e.step = step;
  e.kind = SpanKind::wait;
  e.tensor = s.tensors[st.tensor].info.name;
  span(pending, Stream::compute, std::move(e), [&] { device_.wait(Stream::compute, *done); });
  if (st.kind == StepKind::wait_offload) pending.offload_unwaited[st.tensor] = false;
  if (st.kind == StepKind::wait_prefetch) placement_.residency[st.tensor] = Residency::device;
}

IterationResult Executor::run(const Schedule& s, const IterationInputs& in) {
  if (!pool_) throw std::logic_error("Executor::run before use_pool");
  placement_.resize(s.tensors.size());
  store_.resize(s.tensors.size());  // no stream is using it: the last run synchronised
  if (s.pinned_bytes > pinned_bytes_)
    throw std::logic_error("the schedule needs " + format_bytes(s.pinned_bytes) + " of host memory for offloads, the executor has " +
                           format_bytes(pinned_bytes_));
  if (readback_.size() < sizeof(Pending::readback))
    throw std::logic_error("the loss read-back slot holds " + std::to_string(readback_.size()) + " bytes; the loss needs " +
                           std::to_string(sizeof(Pending::readback)));
  std::memset(readback_.data(), 0, sizeof(Pending::readback));  // a schedule that never frees the loss reads 0
  placement_.host[s.data] = const_cast<float*>(in.images);
  placement_.host[s.labels] = const_cast<std::int32_t*>(in.labels);
  Pending pending(s);
  Watching watching(*pool_, pending);
  pool_->start_iteration(s.park_horizon);
  pending.first = device_.record(Stream::compute);
  pending.last_compute = pending.first;

  for (int i = 0; i < static_cast<int>(s.steps.size()); ++i) {
    const Step& st = s.steps[i];
    switch (st.kind) {
      case StepKind::alloc: place(s, st.tensor, i, st.will_offload, pending); break;
      case StepKind::free: release(s, st.tensor, i, st.after_copy, pending); break;
      case StepKind::forward:
      case StepKind::recompute:
      case StepKind::backward: compute(s, st, i, in, pending); break;
      case StepKind::accumulate: accumulate(s, st, i, pending); break;
      case StepKind::update: update(s, in, i, pending); break;
      case StepKind::offload:
      case StepKind::prefetch: transfer(s, st, i, pending); break;
      case StepKind::wait_offload:
      case StepKind::wait_prefetch: wait_transfer(s, st, i, pending); break;
      case StepKind::all_reduce: all_reduce(s, st, i, pending); break;
      case StepKind::wait_all_reduce: wait_all_reduce(s, st, i, pending); break;
    }
  }
  if (copies_) copies_->drain();  // rethrows a copy thread's failure
  device_.synchronize();
  std::memcpy(pending.readback.data(), readback_.data(), sizeof pending.readback);
  std::fill(placement_.host.begin(), placement_.host.end(), nullptr);
  pool_->end_iteration();

  IterationResult result;
  result.loss = pending.readback[0];
  result.correct = static_cast<std::int64_t>(pending.readback[1]);
  result.correct_top5 = static_cast<std::int64_t>(pending.readback[2]);
  result.skipped = pending.readback[3] != 0.0f;
  result.pool = pool_->stats();
  result.memory = pool_->figures();
  report(s, in.iteration, pending, result);
  return result;
}

void Executor::report(const Schedule& s, std::int64_t iteration, Pending& pending, IterationResult& result) {
  result.start_us = pending.first ? device_.time_us(*pending.first) : device_.now_us();
  result.end_us = device_.now_us();
  result.compressed_held_bytes = store_.held_bytes();
  for (auto& a : pending.allocs) {
    const double t = device_.time_us(*a.at);
    a.event.iteration = a.load.iteration = iteration;
    a.event.time_us = a.load.time_us = t;
    if (sink_) {
      sink_->on_alloc(a.event);
      sink_->on_load(a.load);
    }
  }
  for (auto& sp : pending.spans) {
    if (sp.stored >= 0) {  // read now that the streams are done with the store
      sp.event.bytes = store_.stored_bytes(sp.stored);
      if (sp.event.kind == SpanKind::compress) {
        result.compressed_from_bytes += store_.original_bytes(sp.stored);
        result.compressed_to_bytes += sp.event.bytes;
      }
    }
    sp.event.iteration = iteration;
    sp.event.start_us = sp.by_thread ? sp.by_thread->start_us : device_.time_us(*sp.start);
    sp.event.end_us = sp.by_thread ? sp.by_thread->end_us : device_.time_us(*sp.end);
    if (sink_) sink_->on_span(sp.event);
  }
  if (sink_ && iteration >= 0) {
    IterationSummary sum;
    sum.iteration = iteration;
    sum.start_us = result.start_us;
    sum.end_us = result.end_us;
    sum.peak_load_bytes = result.memory.peak_load_bytes;
    sum.footprint_bytes = result.memory.footprint_bytes;
    sum.peak_step = result.memory.peak_event;
    sum.largest_free_at_peak = result.memory.largest_free_at_peak;
    sum.loss = result.loss;
    sum.accuracy = s.batch ? static_cast<float>(pending.readback[1]) / s.batch : 0;
    sink_->on_iteration(sum);
  }
}

std::vector<float> Executor::read(const Schedule& s, std::span<const int> ids) {
  std::size_t total = 0;
  for (int t : ids) total += s.tensors[t].info.bytes() / sizeof(float);
  std::vector<float> out(total);
  read(s, ids, out);
  return out;
}

void Executor::read(const Schedule& s, std::span<const int> ids, std::span<float> out) {
  float* dst = out.data();
  for (int t : ids) {
    const std::size_t bytes = s.tensors[t].info.bytes();
    if (dst + bytes / sizeof(float) > out.data() + out.size())
      throw std::logic_error("Executor::read: the buffer is smaller than the tensors");
    device_.copy_async(Stream::compute, dst, device_address(t), bytes);
    dst += bytes / sizeof(float);
  }
  device_.synchronize();
}

void Executor::write(const Schedule& s, std::span<const int> ids, std::span<const float> values) {
  const float* src = values.data();
  for (int t : ids) {
    const std::size_t bytes = s.tensors[t].info.bytes();
    device_.copy_async(Stream::compute, device_address(t), src, bytes);
    src += bytes / sizeof(float);
  }
  device_.synchronize();
}

}  // namespace tidepool
