#include "engine/trainer.h"

#include <algorithm>
#include <stdexcept>

#include "engine/dry_run.h"
#include "engine/param_init.h"
#include "engine/planner.h"

namespace tidepool {

namespace {
std::string mib(std::size_t bytes) { return std::to_string((bytes + (1 << 20) - 1) >> 20) + " MiB"; }
}  // namespace

Trainer::Trainer(Device& device, const Network& network, TrainerOptions options, EventSink* sink)
    : device_(device), network_(network), options_(std::move(options)), sink_(sink) {
  if (options_.batch <= 0) throw std::invalid_argument("batch size must be positive");
  if (options_.plan.lookahead < 0) throw std::invalid_argument("prefetch lookahead must not be negative");
  make_allocator(options_.heuristic, 0);  // throws for an unknown name, listing the valid ones
  PlanSettings train = options_.plan;
  train.phase = Phase::train;
  train_ = plan(network_, options_.batch, train, device_.kernels());
  const Schedule& eval = eval_schedule(options_.batch);

  // The smallest pool that serves both schedules under this heuristic.
  minimum_budget_ = std::max(footprint_of(train_, options_.heuristic), footprint_of(eval, options_.heuristic));
  arena_bytes_ = options_.budget_bytes ? options_.budget_bytes : minimum_budget_;
  if (options_.budget_bytes) {
    for (const Schedule* s : {static_cast<const Schedule*>(&train_), &eval}) {
      auto probe = make_allocator(options_.heuristic, arena_bytes_);
      if (!dry_run(*s, *probe).fits)
        throw DeviceError("a budget of " + mib(arena_bytes_) + " is too small for " + network_.name() +
                          " at batch " + std::to_string(options_.batch) + " (mode " +
                          to_string(options_.plan.mode) + ", " + options_.heuristic +
                          "): the smallest budget that works is " + mib(minimum_budget_));
    }
  }
  // Pinned memory for the worst case, every layer's input offloaded, so
  // that a later change of mode needs no new reservation.
  PlanSettings all = train;
  all.mode = OffloadMode::all;
  const std::size_t offload_bytes =
      std::max(train_.pinned_bytes, plan(network_, options_.batch, all, device_.kernels()).pinned_bytes);
  arena_ = device_.reserve_arena(arena_bytes_);
  std::byte* pinned = nullptr;
  if (options_.staging_bytes + offload_bytes) {
    pinned = device_.reserve_pinned(options_.staging_bytes + offload_bytes);
    staging_ = {pinned, options_.staging_bytes};
  }
  allocator_ = make_allocator(options_.heuristic, arena_bytes_);
  executor_ = std::make_unique<Executor>(device_, arena_, pinned ? pinned + options_.staging_bytes : nullptr,
                                         network_, *allocator_, sink_);
  executor_->place_persistent(train_, placement_);
  initialise_parameters();
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
    it = eval_.emplace(batch, plan(network_, batch, {Phase::eval, options_.plan.scheme}, device_.kernels()))
             .first;
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
