#include "engine/run/trainer.h"

#include <algorithm>
#include <stdexcept>
#include <thread>

#include "engine/plan/autoswap.h"
#include "engine/core/bytes_text.h"
#include "engine/memory/dry_run.h"
#include "engine/core/param_init.h"
#include "engine/plan/planner.h"
#include "engine/memory/pool_search.h"

namespace tidepool {

Trainer::Validated Trainer::validate(const PlanSettings& settings, const std::string& heuristic,
                                     std::size_t budget_bytes) const {
  make_allocator(heuristic, 0);  // throws for an unknown name, listing the valid ones
  if (settings.lookahead < 0) throw std::invalid_argument("prefetch lookahead must not be negative");
  PlanSettings train = settings, eval{Phase::eval, settings.scheme};
  train.phase = Phase::train;
  std::size_t least_train = 0;  // the train schedule's smallest pool, over every AutoSwap limit
  if (settings.mode == OffloadMode::autoswap) {
    const AutoswapLimit a = autoswap_limit(network_, options_.batch, train, device_.kernels(), heuristic, budget_bytes);
    train.load_limit_bytes = a.load_limit_bytes;
    least_train = a.least_pool_bytes;
  }
  Validated v{plan(network_, options_.batch, train, device_.kernels()),
              plan(network_, options_.batch, eval, device_.kernels()), 0, 0};
  // The smallest pool found to serve both schedules under this heuristic.
  const std::size_t train_footprint = footprint_of(v.train, heuristic), eval_footprint = footprint_of(v.eval, heuristic);
  v.minimum = std::max(least_train ? least_train : train_footprint, eval_footprint);
  v.pool = budget_bytes ? budget_bytes : std::max(train_footprint, eval_footprint);
  const std::string what = network_.name() + " at batch " + std::to_string(options_.batch) + " (mode " +
                           to_string(settings.mode) + ", " + heuristic + ")";
  if (arena_ && v.pool > arena_bytes_)
    throw DeviceError("a budget of " + format_bytes(v.pool) + " exceeds the " + format_bytes(arena_bytes_) +
                      " of device memory this run reserved");
  if (arena_ && v.train.pinned_bytes > offload_region_.size())  // a run started with compression
    throw DeviceError(std::string(settings.compress ? "" : "uncompressed ") + "offloads in mode " +
                      to_string(settings.mode) + " need " + format_bytes(v.train.pinned_bytes) +
                      " of pinned host memory; this run reserved " + format_bytes(offload_region_.size()) +
                      " for compressed ones: start a new run to offload uncompressed");
  if (budget_bytes)
    for (const Schedule* s : {&v.train, &v.eval}) {
      auto probe = make_allocator(heuristic, v.pool);
      if (!dry_run(*s, *probe).fits)
        throw DeviceError("a budget of " + format_bytes(v.pool) + " is too small for " + what +
                          ": the smallest budget that works is " + format_bytes(v.minimum));
    }
  decide_parking(v, heuristic);
  return v;
}

// Async transfers park as many offloaded blocks as fit in the pool these
// settings get (park_if_it_fits: dry runs of two iterations). Every outcome
// is deterministic, so the run places every block where the dry run did,
// and the numbers are the same either way.
void Trainer::decide_parking(Validated& v, const std::string& heuristic) const {
  park_if_it_fits(v.train, heuristic, v.pool);
  if (v.train.park_horizon == kParkUntilNeeded || !v.train.can_park()) return;
  // A larger pool that parks more, for the user who wants the waits gone:
  // where one block at a time fits when none does now, else where every
  // block can stay until needed. Rounded up to whole MiB, which is what
  // people type and what the window's slider sets, where that parks as
  // much. The search gives a sufficient pool, not the least one, and
  // parking is not monotone in the pool size, so the figure is checked,
  // and only one larger than the pool in effect is a useful hint.
  Schedule more = v.train;
  more.park_horizon = v.train.park_horizon == 0 ? 1 : kParkUntilNeeded;
  const int wanted = more.park_horizon;
  const std::size_t found = search_pool_size(more, heuristic).pool_bytes;
  constexpr std::size_t kMiB = std::size_t{1} << 20;
  for (std::size_t pool : {(found + kMiB - 1) / kMiB * kMiB, found})
    if (pool > v.pool && (!arena_ || pool <= arena_bytes_) && park_if_it_fits(more, heuristic, pool).has_value() &&
        more.park_horizon >= wanted) {
      v.parking_budget = pool;
      return;
    }
}

int default_compress_threads() {
  // A quarter of the cores: the rest feed the device (the cpu device's
  // kernels, the loaders' decoding). On a 2-core laptop, one.
  return std::max(1, static_cast<int>(std::thread::hardware_concurrency() / 4));
}

Trainer::Trainer(Device& device, const Network& network, TrainerOptions options, EventSink* sink)
    : device_(device), network_(network), options_(std::move(options)), sink_(sink) {
  if (options_.batch <= 0) throw std::invalid_argument("batch size must be positive");
  if (options_.compress_threads < 0) throw std::invalid_argument("compression threads must not be negative");
  if (options_.compress_threads == 0) options_.compress_threads = default_compress_threads();
  Validated v = validate(options_.plan, options_.heuristic, options_.budget_bytes);
  arena_bytes_ = std::max(options_.arena_bytes, v.pool);
  // Pinned memory for the worst case, every layer's input offloaded, so
  // that a later change of mode needs no new reservation. Compressed
  // offloads need only their staging slots: reserving that little is the
  // point of compressing, so such a run cannot turn compression off later.
  PlanSettings all = v.train.settings;
  all.mode = OffloadMode::all;
  const std::size_t offload_bytes =
      std::max(v.train.pinned_bytes, plan(network_, options_.batch, all, device_.kernels()).pinned_bytes);
  arena_ = device_.reserve_arena(arena_bytes_);
  if (options_.staging_bytes + offload_bytes) {
    std::byte* pinned = device_.reserve_pinned(options_.staging_bytes + offload_bytes);
    staging_ = {pinned, options_.staging_bytes};
    offload_region_ = {pinned + options_.staging_bytes, offload_bytes};
  }
  commit(std::move(v), /*new_pool=*/true);
  initialise_parameters();
}

void Trainer::apply(const PlanSettings& settings, const std::string& heuristic, std::size_t budget_bytes) {
  Validated v = validate(settings, heuristic, budget_bytes);  // throws, leaving everything as it was
  const bool new_pool = heuristic != options_.heuristic || v.pool != pool_bytes_;
  std::vector<float> state;
  if (new_pool) state = read_state();  // the parameters move to the new pool's placement
  options_.plan = v.train.settings;
  options_.heuristic = heuristic;
  options_.budget_bytes = budget_bytes;
  commit(std::move(v), new_pool);
  if (new_pool) write_state(state);
}

void Trainer::commit(Validated v, bool new_pool) {
  minimum_budget_ = v.minimum;
  parking_budget_ = v.parking_budget;
  train_ = std::move(v.train);
  eval_.clear();
  eval_.emplace(options_.batch, std::move(v.eval));
  if (!new_pool) return;
  pool_bytes_ = v.pool;
  executor_.reset();
  allocator_ = make_allocator(options_.heuristic, pool_bytes_);
  executor_ = std::make_unique<Executor>(device_, arena_, offload_region_, network_, *allocator_, sink_,
                                         options_.compress_threads);
  placement_ = Placement{};
  executor_->place_persistent(train_, placement_);
}

Trainer::~Trainer() {
  // Work in flight may still read the arena: let it finish first.
  try {
    device_.synchronize();
  } catch (...) {
  }
}

const Schedule& Trainer::eval_schedule(std::int64_t batch) {
  auto it = eval_.find(batch);
  if (it == eval_.end())
    it = eval_.emplace(batch, plan(network_, batch, {Phase::eval, options_.plan.scheme}, device_.kernels())).first;
  return it->second;
}

void Trainer::initialise_parameters() {
  const NetworkShapes shapes = network_.shapes(options_.batch);
  std::vector<float> host;
  std::uint64_t ordinal = 0;
  for (std::size_t i = 0; i < network_.nodes().size(); ++i) {
    const auto specs = network_.nodes()[i].layer->params(shapes.node_inputs[i]);
    const NodeTensors& nt = train_.nodes[i];
    for (std::size_t j = 0; j < specs.size(); ++j) {
      host.resize(static_cast<std::size_t>(specs[j].shape.numel()));
      init_parameter(specs[j], fnv1a(&ordinal, sizeof ordinal, options_.seed), host);
      ++ordinal;
      device_.copy_async(Stream::compute, executor_->device_address(placement_, nt.params[j]),
                         host.data(), host.size() * sizeof(float));
      device_.synchronize();  // `host` is reused below
      if (nt.momenta[j] >= 0) {  // momentum starts at zero
        std::fill(host.begin(), host.end(), 0.0f);
        device_.copy_async(Stream::compute, executor_->device_address(placement_, nt.momenta[j]),
                           host.data(), host.size() * sizeof(float));
        device_.synchronize();
      }
    }
  }
}

IterationResult Trainer::train_step(const float* images, const std::int32_t* labels) {
  IterationInputs in;
  in.iteration = iteration_;
  in.images = images;
  in.labels = labels;
  in.seed = options_.seed;
  in.sgd = options_.sgd;
  IterationResult r = executor_->run(train_, placement_, in);
  ++iteration_;
  return r;
}

IterationResult Trainer::eval_step(const float* images, const std::int32_t* labels,
                                   std::int64_t batch) {
  if (batch <= 0 || batch > options_.batch)
    throw std::invalid_argument("evaluation batch must be between 1 and the training batch (" +
                                std::to_string(options_.batch) + ")");
  IterationInputs in;
  in.iteration = iteration_;
  in.images = images;
  in.labels = labels;
  in.seed = options_.seed;
  return executor_->run(eval_schedule(batch), placement_, in);
}

std::vector<float> Trainer::read_tensors(const std::vector<int>& ids) {
  std::size_t total = 0;
  for (int t : ids) total += train_.tensors[t].info.bytes() / sizeof(float);
  std::vector<float> out(total);
  float* dst = out.data();
  for (int t : ids) {
    const std::size_t bytes = train_.tensors[t].info.bytes();
    device_.copy_async(Stream::compute, dst, executor_->device_address(placement_, t), bytes);
    dst += bytes / sizeof(float);
  }
  device_.synchronize();
  return out;
}

namespace {
std::vector<int> persistent_with(const Schedule& s, std::initializer_list<Role> roles) {
  std::vector<int> ids;
  for (int t : s.persistent)
    if (std::find(roles.begin(), roles.end(), s.tensors[t].info.role) != roles.end()) ids.push_back(t);
  return ids;
}
}  // namespace

std::vector<float> Trainer::read_parameters() {
  return read_tensors(persistent_with(train_, {Role::weight}));
}

std::vector<float> Trainer::read_state() {
  return read_tensors(persistent_with(train_, {Role::weight, Role::optimizer_state}));
}

void Trainer::write_parameters(const std::vector<float>& values) {
  write_tensors(persistent_with(train_, {Role::weight}), values, "parameters");
}

void Trainer::write_state(const std::vector<float>& state) {
  write_tensors(persistent_with(train_, {Role::weight, Role::optimizer_state}), state, "state");
}

void Trainer::write_tensors(const std::vector<int>& ids, const std::vector<float>& values,
                            const char* what) {
  std::size_t total = 0;
  for (int t : ids) total += train_.tensors[t].info.bytes() / sizeof(float);
  if (values.size() != total)
    throw std::invalid_argument(std::string(what) + " of " + std::to_string(values.size()) +
                                " values do not match " + network_.name() + " (" +
                                std::to_string(total) + " values)");
  const float* src = values.data();
  for (int t : ids) {
    const std::size_t bytes = train_.tensors[t].info.bytes();
    device_.copy_async(Stream::compute, executor_->device_address(placement_, t), src, bytes);
    src += bytes / sizeof(float);
  }
  device_.synchronize();
}

std::uint64_t Trainer::param_checksum() {
  const std::vector<float> params = read_parameters();
  return fnv1a(params.data(), params.size() * sizeof(float));
}

}  // namespace tidepool
