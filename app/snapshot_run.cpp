#include "app/snapshot_run.h"

#include <algorithm>
#include <climits>
#include <stdexcept>
#include <utility>

#include "engine/core/file_bytes.h"
#include "engine/memory/alloc_trace.h"
#include "engine/memory/allocator.h"
#include "engine/memory/replay.h"
#include "engine/memory/snapshot/snapshot_file.h"

namespace fs = std::filesystem;

namespace tidepool::app {
namespace {

SnapshotTrace read_trace_of(const fs::path& file, std::optional<int> device) {
  std::error_code ec;
  if (fs::is_directory(file, ec))
    throw std::invalid_argument(file.string() + " is a folder, not a PyTorch snapshot");
  std::string bytes = read_file_bytes(file.string(), "snapshot");
  if (trace_file_format(bytes) == TraceFileFormat::csv)
    throw std::invalid_argument(file.string() +
                                " is not a PyTorch memory snapshot: neither a pickle (torch.cuda.memory._dump_snapshot) "
                                "nor its JSON; tidepool view opens those and --batch run folders");
  return read_snapshot_trace(std::move(bytes), file.string(), device);
}

// The replay loop's pool events as a run's device pool reports them
// (engine/run/executor.cpp): an AllocEvent and a LoadSample each, at the
// trace event's index as the step, all in iteration 0.
class ToEvents final : public PoolObserver {
 public:
  ToEvents(const SnapshotTrace& trace, const std::unordered_map<std::int64_t, int>& stack_of_block, EventSink& sink)
      : trace_(trace), stack_of_block_(stack_of_block), sink_(sink) {}

  void on_pool_event(const PoolEvent& e) override {
    const auto stack = stack_of_block_.find(e.id);
    static const std::string none;
    const std::string& name =
        stack == stack_of_block_.end() || stack->second < 0 ? none : trace_.stack_labels[stack->second];
    const int tensor = e.id >= 0 && e.id <= INT_MAX ? static_cast<int>(e.id) : -1;
    const double time_us = e.event;  // a trace has no clock of its own here: its events in order
    sink_.on_alloc(
        AllocEvent{0, e.event, e.action, tensor, name, Role::activation, e.block.offset, e.block.bytes, time_us});
    sink_.on_load(LoadSample{0, e.event, time_us, e.load_bytes, e.extent_bytes, e.largest_free_bytes});
  }

 private:
  const SnapshotTrace& trace_;
  const std::unordered_map<std::int64_t, int>& stack_of_block_;
  EventSink& sink_;
};

std::string stack_text(const SnapshotStack& stack) {
  std::string text;
  for (const SnapshotFrame& f : stack) {
    if (!text.empty()) text += '\n';
    text += f.filename + ":" + std::to_string(f.line) + " " + f.name;
  }
  return text;
}

}  // namespace

SnapshotRun::SnapshotRun(const fs::path& file, std::optional<int> device, const std::string& heuristic)
    : SnapshotRun(read_trace_of(file, device), file.string(), heuristic) {}

SnapshotRun::SnapshotRun(SnapshotTrace trace, std::string source, const std::string& heuristic)
    : trace_(std::move(trace)), source_(std::move(source)) {
  for (std::size_t i = 0; i < trace_.trace.size(); ++i)
    if (trace_.trace[i].kind == TraceEvent::Kind::alloc)
      stack_of_block_.emplace(trace_.trace[i].id, i < trace_.stack.size() ? trace_.stack[i] : -1);
  placed_ = place(heuristic);  // before the window opens: an unknown heuristic is refused here
  worker_ = std::thread([this] { work(); });
}

SnapshotRun::~SnapshotRun() {
  {
    std::lock_guard lock(mutex_);
    stop_ = true;
  }
  wake_.notify_all();
  worker_.join();
}

SnapshotRun::Placement SnapshotRun::place(const std::string& heuristic) const {
  const std::vector<std::string> names = allocator_names();
  if (std::find(names.begin(), names.end(), heuristic) == names.end())
    throw std::invalid_argument("no heuristic named " + heuristic);
  // A pool every heuristic serves the trace in (alloc_trace.h), so the
  // placement is the heuristic's own, never cut short.
  const std::size_t pool = total_alloc_bytes(trace_.trace);
  auto allocator = make_allocator(heuristic, pool);
  // Every event of the trace is held: an allocation and a load sample per
  // pool event, a give-back at most per alloc besides.
  const std::size_t n = trace_.trace.size();
  Placement p;
  p.ring = std::make_unique<RingSink>(RingCapacities{.spans = 0, .allocs = 2 * n, .loads = 2 * n, .iterations = 1});
  ToEvents observer(trace_, stack_of_block_, *p.ring);
  const TraceReplay r = replay(trace_.trace, *allocator, kParkUntilNeeded, &observer);
  if (!r.fits)  // cannot happen in that pool; say so rather than draw half a trace
    throw std::logic_error(heuristic + " could not place event " + std::to_string(r.failed_event) + " of " + source_ +
                           " in a pool of every block end to end");
  IterationSummary sum;
  sum.iteration = 0;
  sum.end_us = static_cast<double>(n);
  sum.peak_load_bytes = r.figures.peak_load_bytes;
  sum.footprint_bytes = r.figures.footprint_bytes;
  sum.peak_step = r.figures.peak_event;
  sum.largest_free_at_peak = r.figures.largest_free_at_peak;
  p.ring->on_iteration(sum);

  ui::SessionStatus& s = p.status;
  s.state = ui::RunState::snapshot;
  s.settings.model = "PyTorch snapshot";
  s.settings.memory.heuristic = heuristic;
  s.settings.batch_size = 0;
  s.dataset_name = source_;
  s.device = "device " + std::to_string(trace_.device) + " of " + std::to_string(trace_.devices);
  s.iteration = s.total_iterations = 1;
  s.epochs = 1;
  s.computes_values = false;
  MemorySummary& m = s.memory;
  m.peak_load_bytes = r.figures.peak_load_bytes;
  m.footprint_bytes = m.needed_pool_bytes = r.figures.footprint_bytes;
  m.largest_free_at_peak_bytes = r.figures.largest_free_at_peak.bytes;
  // The views' address axis and the load curves' pool line: what this
  // heuristic took, or what PyTorch reserved in the trace where that is more,
  // so the two can be compared on one scale.
  m.pool_bytes = std::max<std::size_t>(r.figures.footprint_bytes, trace_.peak_reserved);
  m.arena_bytes = pool;
  s.snapshot_reserved_bytes = trace_.peak_reserved;
  return p;
}

void SnapshotRun::work() {
  std::unique_lock lock(mutex_);
  for (;;) {
    wake_.wait(lock, [&] { return stop_ || pending_.has_value(); });
    if (stop_) return;
    const std::string heuristic = std::move(*pending_);
    pending_.reset();
    placing_ = true;
    lock.unlock();
    std::optional<Placement> placed;
    std::string refusal;
    try {
      placed = place(heuristic);
    } catch (const std::exception& e) {
      refusal = e.what();
    }
    lock.lock();
    placing_ = false;
    ++requests_;
    refused_ = !placed;
    if (placed) {
      placed_ = std::move(*placed);
      message_ = "placed by " + heuristic;
      version_.fetch_add(1, std::memory_order_acq_rel);
    } else {
      message_ = "not re-placed: " + refusal;
    }
    if (!pending_) idle_.notify_all();
  }
}

void SnapshotRun::wait_idle() {
  std::unique_lock lock(mutex_);
  idle_.wait(lock, [&] { return !pending_ && !placing_; });
}

ui::SessionStatus SnapshotRun::status() const {
  std::lock_guard lock(mutex_);
  ui::SessionStatus s = placed_.status;
  s.replanning = placing_ || pending_.has_value();
  s.requests = requests_;
  s.refused = refused_;
  s.message = message_;
  return s;
}

RingSnapshot SnapshotRun::events(int rank) const {
  if (rank != 0) return {};
  std::lock_guard lock(mutex_);
  RingSnapshot copy = placed_.ring->snapshot();
  // The link's version, not the ring's: a new placement's ring counts from
  // 0 again, and the window asks events_version() whether to copy.
  copy.version = version_.load(std::memory_order_acquire);
  return copy;
}

std::uint64_t SnapshotRun::events_version(int rank) const {
  return rank == 0 ? version_.load(std::memory_order_acquire) : 0;
}

std::string SnapshotRun::block_stack(std::int64_t block) const {
  const auto it = stack_of_block_.find(block);
  if (it == stack_of_block_.end() || it->second < 0) return {};
  return stack_text(trace_.stacks[static_cast<std::size_t>(it->second)]);
}

void SnapshotRun::request(const MemorySettings& settings) {
  {
    std::lock_guard lock(mutex_);
    pending_ = settings.heuristic;  // a newer request replaces one not yet placed
  }
  wake_.notify_one();
}

}  // namespace tidepool::app
