#include "engine/run/executor.h"

#include <algorithm>
#include <array>
#include <cstdio>
#include <functional>
#include <string>

#include "engine/memory/parking.h"

namespace tidepool {

namespace {

std::string mib(std::size_t bytes) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.1f MiB", static_cast<double>(bytes) / (1 << 20));
  return buf;
}

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

struct Executor::Pending {
  Pending(Allocator& pool, const Schedule& s)
      : offload_done(s.tensors.size()), prefetch_done(s.tensors.size()), host_ready(s.tensors.size()),
        compressed(s.tensors.size(), false), offload_unwaited(s.tensors.size(), false),
        reclaimed(s.tensors.size(), false), release(pool, s.park_horizon) {}
  struct Span {
    SpanEvent event;
    std::shared_ptr<DeviceEvent> start, end;
    int stored = -1;  // (de)compression: its bytes are the store's for this tensor, known at the end
  };
  struct Alloc {
    AllocEvent event;
    LoadSample load;
    std::shared_ptr<DeviceEvent> at;
  };
  std::vector<Span> spans;
  std::vector<Alloc> allocs;
  std::shared_ptr<DeviceEvent> first, last_compute;
  std::vector<std::shared_ptr<DeviceEvent>> offload_done, prefetch_done;  // per tensor: the copies
  // Per tensor: its host copy is complete (the offload's copy, or with
  // compression the compression after it), so a prefetch may read it.
  std::vector<std::shared_ptr<DeviceEvent>> host_ready;
  std::vector<bool> compressed;  // per tensor: its host copy is in the zero-value store
  std::vector<bool> offload_unwaited;  // per tensor: an offload the compute stream has not waited for
  // Per tensor: placed again in its own still-parked block, so its bytes
  // are on the device already and its prefetch has nothing to copy.
  std::vector<bool> reclaimed;
  // Async (vDNN++): an offloaded tensor's block is parked at its planned
  // free and given back when the pool needs the room or more blocks are
  // parked than the schedule's horizon (AsyncRelease), so placement is
  // exactly the dry run's; until its copy to the host
  // completes the range stays fenced, and the first work that takes it over
  // waits on the device for that copy, not the host.
  AsyncRelease release;
  struct Fence {
    std::size_t offset, bytes;
    std::shared_ptr<DeviceEvent> copied;
    std::string tensor;
  };
  std::vector<Fence> fences;
  std::array<float, 3> readback{};          // the loss tensor, copied out before its free
};

Executor::Executor(Device& device, std::byte* arena, std::span<std::byte> pinned, const Network& network,
                   Allocator& allocator, EventSink* sink, int compress_threads)
    : device_(device),
      network_(network),
      allocator_(allocator),
      sink_(sink),
      arena_(arena),
      pinned_(pinned.data()),
      pinned_bytes_(pinned.size()),
      store_(compress_threads) {}

std::byte* Executor::device_address(const Placement& p, int tensor) const {
  return tensor >= 0 && p.placed[tensor] ? arena_ + p.offset[tensor] : nullptr;
}

void Executor::place_persistent(const Schedule& s, Placement& p) {
  p.resize(s.tensors.size());
  Pending pending(allocator_, s);
  pending.last_compute = device_.record(Stream::compute);
  for (int t : s.persistent) place(s, p, t, -1, pending, false);
  device_.synchronize();
  IterationResult setup;
  report(s, -1, pending, setup);
}

std::size_t Executor::place(const Schedule& s, Placement& p, int t, int step, Pending& pending,
                            bool will_offload) {
  const TensorInfo& info = s.tensors[t].info;
  if (p.placed[t]) throw std::logic_error("tensor " + info.name + " is placed twice");
  const auto offset = pending.release.allocate(t, {info.bytes(), t, info.role, will_offload});
  if (!offset) {
    const PoolStats st = pending.release.stats();
    throw DeviceError("the memory pool (" + mib(st.pool_bytes) + ") has no room for " + info.name +
                      " (" + mib(round_up(info.bytes())) + "): " + mib(st.load_bytes) +
                      " in use, largest free block " + mib(st.largest_free_block_bytes));
  }
  p.offset[t] = *offset;
  p.placed[t] = true;
  p.residency[t] = Residency::device;
  // A reclaimed block is the tensor's own: the copy to the host still
  // reading it is no reason to wait (its fence stays for later owners).
  pending.reclaimed[t] = pending.release.reclaimed();
  if (!pending.reclaimed[t] && !pending.fences.empty())
    wait_for_fences(*offset, round_up(info.bytes()), step, pending);
  report_given_back(s, step, pending);  // the parked blocks this placement needed
  const PoolStats st = pending.release.stats();
  pending.allocs.push_back({AllocEvent{0, step, AllocAction::place, t, info.name, info.role, *offset,
                                       round_up(info.bytes()), 0},
                            LoadSample{0, step, 0, st.load_bytes, st.extent_bytes},
                            pending.last_compute});
  return *offset;
}

void Executor::report_given_back(const Schedule& s, int step, Pending& pending) {
  for (const AsyncRelease::Parked& b : pending.release.released()) {
    const int t = static_cast<int>(b.id);
    const PoolStats st = pending.release.stats();
    pending.allocs.push_back({AllocEvent{0, step, AllocAction::give_back, t, s.tensors[t].info.name,
                                         s.tensors[t].info.role, b.offset, b.bytes, 0},
                              LoadSample{0, step, 0, st.load_bytes, st.extent_bytes},
                              pending.last_compute});
  }
}

void Executor::wait_for_fences(std::size_t offset, std::size_t bytes, int step, Pending& pending) {
  auto& fences = pending.fences;
  for (auto it = fences.begin(); it != fences.end();) {
    const bool overlaps = it->offset < offset + bytes && offset < it->offset + it->bytes;
    if (!overlaps) {
      ++it;
      continue;
    }
    if (!device_.done(*it->copied)) {
      auto start = std::shared_ptr<DeviceEvent>(device_.record(Stream::compute));
      device_.wait(Stream::compute, *it->copied);
      pending.last_compute = device_.record(Stream::compute);
      SpanEvent e;
      e.step = step;
      e.kind = SpanKind::wait;
      e.tensor = it->tensor;  // the offload whose memory is being reused
      pending.spans.push_back({std::move(e), std::move(start), pending.last_compute});
    }
    it = fences.erase(it);
  }
}

void Executor::release(const Schedule& s, Placement& p, int t, bool after_copy, int step, Pending& pending) {
  const TensorInfo& info = s.tensors[t].info;
  if (!p.placed[t]) throw std::logic_error("tensor " + info.name + " is freed while not placed");
  if (pending.offload_unwaited[t])  // async: the copy to the host may still read it
    pending.fences.push_back({p.offset[t], round_up(info.bytes()), pending.offload_done[t], info.name});
  if (t == s.loss)  // the host reads the loss once the iteration is done
    device_.copy_async(Stream::compute, pending.readback.data(), device_address(p, t),
                       sizeof pending.readback);
  if (after_copy)
    pending.release.free_after_copy(t, p.offset[t], info.bytes());
  else
    pending.release.free(p.offset[t]);
  p.placed[t] = false;
  // Freed while its offload is issued: the data lives on in the pinned region.
  if (p.residency[t] == Residency::in_flight) p.residency[t] = Residency::host;
  const PoolStats st = pending.release.stats();
  pending.allocs.push_back({AllocEvent{0, step, after_copy ? AllocAction::park : AllocAction::free, t, info.name,
                                       info.role, p.offset[t], round_up(info.bytes()), 0},
                            LoadSample{0, step, 0, st.load_bytes, st.extent_bytes},
                            pending.last_compute});
  if (after_copy) report_given_back(s, step, pending);  // beyond the horizon
}

void Executor::compute(const Schedule& s, Placement& p, const Step& st, int step,
                       const IterationInputs& in, Pending& pending) {
  const NodeTensors& nt = s.nodes[st.node];
  const Layer* layer = network_.nodes()[st.node].layer.get();
  const bool forward = st.kind == StepKind::forward;
  auto addr = [&](int t) { return device_address(p, t); };
  auto fptr = [&](int t) { return reinterpret_cast<float*>(addr(t)); };

  LayerArgs a;
  for (int t : nt.inputs) {
    a.input_shapes.push_back(s.tensors[t].info.shape);
    a.inputs.push_back(addr(t));
  }
  a.output_shape = s.tensors[nt.output].info.shape;
  a.output = addr(nt.output);
  for (std::size_t j = 0; j < nt.params.size(); ++j) {
    a.params.push_back(fptr(nt.params[j]));
    a.param_grads.push_back(fptr(nt.param_grads[j]));
  }
  for (int t : nt.saved) a.saved.push_back(addr(t));
  a.workspace = addr(forward ? nt.forward_workspace : nt.backward_workspace);
  if (!forward) {
    a.output_grad = fptr(nt.output_grad);
    for (int t : nt.input_grads) a.input_grads.push_back(fptr(t));
  }
  a.scheme = s.settings.scheme;
  a.training = s.settings.phase == Phase::train;
  a.seed = mix_seed(in.seed, in.iteration, st.node);

  device_.range_push(Stream::compute, layer->name() + (forward ? " fwd" : " bwd"));
  auto start = std::shared_ptr<DeviceEvent>(device_.record(Stream::compute));
  if (forward)
    device_.submit(Stream::compute, [layer, a = std::move(a)](Kernels& k) { layer->forward(k, a); });
  else
    device_.submit(Stream::compute, [layer, a = std::move(a)](Kernels& k) { layer->backward(k, a); });
  pending.last_compute = device_.record(Stream::compute);
  device_.range_pop(Stream::compute);
  SpanEvent e;
  e.step = step;
  e.stream = Stream::compute;
  e.kind = forward ? SpanKind::forward : SpanKind::backward;
  e.layer = layer->name();
  pending.spans.push_back({std::move(e), std::move(start), pending.last_compute});
}

void Executor::update(const Schedule& s, const Placement& p, const SgdOptions& sgd, int step,
                      Pending& pending) {
  struct Param {
    std::int64_t count;
    float *w, *dw, *v;
  };
  std::vector<Param> params;
  for (const NodeTensors& nt : s.nodes)
    for (std::size_t j = 0; j < nt.params.size(); ++j)
      if (nt.param_grads[j] >= 0)
        params.push_back({s.tensors[nt.params[j]].info.shape.numel(),
                          reinterpret_cast<float*>(device_address(p, nt.params[j])),
                          reinterpret_cast<float*>(device_address(p, nt.param_grads[j])),
                          reinterpret_cast<float*>(device_address(p, nt.momenta[j]))});
  device_.range_push(Stream::compute, "sgd update");
  auto start = std::shared_ptr<DeviceEvent>(device_.record(Stream::compute));
  device_.submit(Stream::compute, [params = std::move(params), sgd](Kernels& k) {
    for (const Param& q : params) k.sgd_update(q.count, sgd.lr, sgd.momentum, sgd.weight_decay, q.w, q.dw, q.v);
  });
  pending.last_compute = device_.record(Stream::compute);
  device_.range_pop(Stream::compute);
  SpanEvent e;
  e.step = step;
  e.kind = SpanKind::update;
  e.layer = "sgd";
  pending.spans.push_back({std::move(e), std::move(start), pending.last_compute});
}

void Executor::transfer(const Schedule& s, Placement& p, const Step& st, int step, Pending& pending) {
  const int t = st.tensor;
  const TensorInfo& info = s.tensors[t].info;
  const bool to_host = st.kind == StepKind::offload;
  if (!to_host && pending.reclaimed[t]) return;  // still on the device: nothing to copy
  const Stream stream = to_host ? Stream::offload : Stream::prefetch;
  // Compressed offloads pass through the stream's staging slot
  // (Schedule::staging_bytes); the others have a pinned slot of their own.
  // (The batch's upload is a copy in that no offload went before.)
  const bool compressed = to_host ? s.settings.compress && s.tensors[t].offloaded : pending.compressed[t];
  if (compressed) {
    p.host[t] = pinned_ + (to_host ? 0 : s.staging_bytes);
  } else if (s.tensors[t].offloaded && to_host) {
    p.host[t] = pinned_ + s.tensors[t].host_offset;
  }
  if (!p.host[t]) throw std::logic_error("tensor " + info.name + " has no host buffer to copy " +
                                         (to_host ? "to" : "from"));
  // The device bytes were last touched by compute work (the producer, or
  // the previous owner of a reused block): the transfer starts after it.
  device_.wait(stream, *pending.last_compute);
  // Coming back: the host copy must be complete before it is read.
  if (!to_host && pending.host_ready[t]) device_.wait(stream, *pending.host_ready[t]);
  device_.range_push(stream, info.name);
  ZeroValueStore* store = &store_;
  float* staged = reinterpret_cast<float*>(p.host[t]);
  const auto count = static_cast<std::size_t>(info.shape.numel());
  auto host_work = [&](SpanKind kind, std::function<void()> work) {
    auto start = std::shared_ptr<DeviceEvent>(device_.record(stream));
    device_.host_task(stream, std::move(work));
    auto end = std::shared_ptr<DeviceEvent>(device_.record(stream));
    SpanEvent e;
    e.step = step;
    e.stream = stream;
    e.kind = kind;
    e.tensor = info.name;
    pending.spans.push_back({std::move(e), std::move(start), end, t});
    return end;
  };
  if (compressed && !to_host)
    host_work(SpanKind::decompress, [store, t, staged] { store->decompress(t, staged); });
  auto start = std::shared_ptr<DeviceEvent>(device_.record(stream));
  if (to_host)
    device_.copy_async(stream, p.host[t], device_address(p, t), info.bytes());
  else
    device_.copy_async(stream, device_address(p, t), p.host[t], info.bytes());
  auto end = std::shared_ptr<DeviceEvent>(device_.record(stream));
  (to_host ? pending.offload_done : pending.prefetch_done)[t] = end;
  SpanEvent e;
  e.step = step;
  e.stream = stream;
  e.kind = to_host ? SpanKind::offload : SpanKind::prefetch;
  e.tensor = info.name;
  e.bytes = info.bytes();
  pending.spans.push_back({std::move(e), std::move(start), end});
  if (to_host) pending.compressed[t] = compressed;
  if (to_host)
    pending.host_ready[t] = compressed ? host_work(SpanKind::compress,
                                                   [store, t, staged, count] { store->compress(t, staged, count); })
                                       : end;
  device_.range_pop(stream);
  p.residency[t] = Residency::in_flight;
  if (to_host) pending.offload_unwaited[t] = true;
}

void Executor::wait_transfer(const Schedule& s, Placement& p, const Step& st, int step, Pending& pending) {
  if (st.kind == StepKind::wait_prefetch && pending.reclaimed[st.tensor]) return;  // nothing was copied
  const auto& done = (st.kind == StepKind::wait_offload ? pending.offload_done : pending.prefetch_done)[st.tensor];
  if (!done) throw std::logic_error("waiting for a transfer of " + s.tensors[st.tensor].info.name +
                                    " that was never started");
  auto start = std::shared_ptr<DeviceEvent>(device_.record(Stream::compute));
  device_.wait(Stream::compute, *done);
  pending.last_compute = device_.record(Stream::compute);
  if (st.kind == StepKind::wait_offload) pending.offload_unwaited[st.tensor] = false;
  if (st.kind == StepKind::wait_prefetch) p.residency[st.tensor] = Residency::device;
  SpanEvent e;
  e.step = step;
  e.kind = SpanKind::wait;
  e.tensor = s.tensors[st.tensor].info.name;
  pending.spans.push_back({std::move(e), std::move(start), pending.last_compute});
}

IterationResult Executor::run(const Schedule& s, Placement& p, const IterationInputs& in) {
  p.resize(s.tensors.size());
  store_.resize(s.tensors.size());  // no stream is using it: the last run synchronised
  if (s.pinned_bytes > pinned_bytes_)
    throw std::logic_error("the schedule needs " + mib(s.pinned_bytes) + " of pinned memory, the executor has " +
                           mib(pinned_bytes_));
  p.host[s.data] = const_cast<float*>(in.images);
  p.host[s.labels] = const_cast<std::int32_t*>(in.labels);
  Pending pending(allocator_, s);
  pending.first = device_.record(Stream::compute);
  pending.last_compute = pending.first;

  for (int i = 0; i < static_cast<int>(s.steps.size()); ++i) {
    const Step& st = s.steps[i];
    switch (st.kind) {
      case StepKind::alloc: place(s, p, st.tensor, i, pending, st.will_offload); break;
      case StepKind::free: release(s, p, st.tensor, s.parks(st), i, pending); break;
      case StepKind::forward:
      case StepKind::backward: compute(s, p, st, i, in, pending); break;
      case StepKind::accumulate: {
        const std::int64_t count = s.tensors[st.tensor].info.shape.numel();
        const float* src = reinterpret_cast<const float*>(device_address(p, st.source));
        float* dst = reinterpret_cast<float*>(device_address(p, st.tensor));
        device_.range_push(Stream::compute, network_.nodes()[st.node].layer->name() + " acc");
        auto start = std::shared_ptr<DeviceEvent>(device_.record(Stream::compute));
        device_.submit(Stream::compute, [=](Kernels& k) { k.accumulate(count, src, dst); });
        pending.last_compute = device_.record(Stream::compute);
        device_.range_pop(Stream::compute);
        SpanEvent e;
        e.step = i;
        e.kind = SpanKind::accumulate;
        e.layer = network_.nodes()[st.node].layer->name();
        e.tensor = s.tensors[st.tensor].info.name;
        pending.spans.push_back({std::move(e), std::move(start), pending.last_compute});
        break;
      }
      case StepKind::update: update(s, p, in.sgd, i, pending); break;
      case StepKind::offload:
      case StepKind::prefetch: transfer(s, p, st, i, pending); break;
      case StepKind::wait_offload:
      case StepKind::wait_prefetch: wait_transfer(s, p, st, i, pending); break;
    }
  }
  device_.synchronize();
  std::fill(p.host.begin(), p.host.end(), nullptr);
  // Every offloaded tensor comes back in backward, which gives its parked
  // block back (the planner's promise; the dry run relies on it too).
  if (pending.release.parked_blocks() != 0)
    throw std::logic_error(std::to_string(pending.release.parked_blocks()) +
                           " parked blocks outlived the iteration");

  IterationResult result;
  result.loss = pending.readback[0];
  result.correct = static_cast<std::int64_t>(pending.readback[1]);
  result.correct_top5 = static_cast<std::int64_t>(pending.readback[2]);
  result.pool = allocator_.stats();
  report(s, in.iteration, pending, result);
  return result;
}

void Executor::report(const Schedule& s, std::int64_t iteration, Pending& pending,
                      IterationResult& result) {
  result.start_us = pending.first ? device_.time_us(*pending.first) : device_.now_us();
  result.end_us = device_.now_us();
  result.compressed_held_bytes = store_.held_bytes();
  std::size_t& peak_load = result.peak_load_bytes;
  std::size_t& peak_extent = result.footprint_bytes;
  for (auto& a : pending.allocs) {
    const double t = device_.time_us(*a.at);
    a.event.iteration = a.load.iteration = iteration;
    a.event.time_us = a.load.time_us = t;
    peak_load = std::max(peak_load, a.load.load_bytes);
    peak_extent = std::max(peak_extent, a.load.extent_bytes);
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
    sp.event.start_us = device_.time_us(*sp.start);
    sp.event.end_us = device_.time_us(*sp.end);
    if (sink_) sink_->on_span(sp.event);
  }
  if (sink_ && iteration >= 0) {
    IterationSummary sum;
    sum.iteration = iteration;
    sum.start_us = result.start_us;
    sum.end_us = result.end_us;
    sum.peak_load_bytes = result.peak_load_bytes;
    sum.footprint_bytes = result.footprint_bytes;
    sum.loss = result.loss;
    sum.accuracy = s.batch ? static_cast<float>(pending.readback[1]) / s.batch : 0;
    sink_->on_iteration(sum);
  }
}

}  // namespace tidepool
