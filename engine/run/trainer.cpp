#include "engine/run/trainer.h"

#include <algorithm>
#include <cstring>
#include <stdexcept>
#include <thread>

#include "engine/core/fnv1a.h"
#include "engine/core/param_init.h"

namespace tidepool {

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
  const int ranks = options_.comm ? options_.comm->size() : 1;
  if (options_.memory.ranks != ranks)
    throw std::invalid_argument("the memory settings plan for " + std::to_string(options_.memory.ranks) +
                                " ranks; the run has " + std::to_string(ranks));
  MemoryPlan plan = plan_memory(network_, options_.batch, options_.memory, device_.kernels(),
                                {.room_to_grow = options_.room_to_grow}, model());
  arena_ = device_.reserve_arena(plan.arena_bytes);
  const MemoryPlan::HostLayout host = plan.host_layout(options_.staging_bytes);
  std::byte* pinned = device_.reserve_pinned(host.pinned_bytes);
  auto in = [](std::byte* region, Range r) { return std::span<std::byte>(region + r.offset, r.bytes); };
  staging_ = in(pinned, host.staging);
  const std::span<std::byte> readback = in(pinned, host.readback);
  if (!host.pageable_slots)
    offload_region_ = in(pinned, host.slots);
  else
    offload_region_ = {host.slots.bytes ? device_.reserve_pageable(host.slots.bytes) : nullptr, host.slots.bytes};
  executor_ = std::make_unique<Executor>(device_, network_, arena_, offload_region_, readback, sink_,
                                         options_.compress_threads);
  executor_->set_communicator(options_.comm);
  executor_->use_pool(plan.settings.heuristic, plan.pool_bytes, plan.train);
  plan_ = std::move(plan);
  initialise_parameters();
}

Trainer::~Trainer() {
  // Work in flight may still read the arena: let it finish first.
  try {
    device_.synchronize();
  } catch (...) {
  }
}

const MemoryPlan& Trainer::apply(const MemorySettings& wanted) {
  // The ranks, their buckets and whether they sync batch norm are the
  // run's, whoever asks.
  MemorySettings settings = wanted;
  settings.ranks = plan_.settings.ranks;
  settings.bucket_bytes = plan_.settings.bucket_bytes;
  settings.sync_bn = plan_.settings.sync_bn;
  // Throws, leaving everything as it was.
  execute(plan_memory(network_, options_.batch, settings, device_.kernels(), plan_.limits(), model()));
  return plan_;
}

void Trainer::execute(MemoryPlan plan) {
  const bool new_pool = plan.settings.heuristic != plan_.settings.heuristic || plan.pool_bytes != plan_.pool_bytes;
  std::vector<float> state;
  if (new_pool) state = read_state();  // the parameters move to the new pool's placement
  plan_ = std::move(plan);
  short_eval_.clear();
  if (!new_pool) return;
  executor_->use_pool(plan_.settings.heuristic, plan_.pool_bytes, plan_.train);
  write_state(state);
}

const Schedule& Trainer::eval_schedule(std::int64_t batch) {
  if (batch == options_.batch) return plan_.eval;
  auto it = short_eval_.find(batch);
  if (it == short_eval_.end())
    it = short_eval_.emplace(batch, plan_eval(network_, batch, plan_.settings, device_.kernels())).first;
  return it->second;
}

namespace {
std::vector<int> persistent_with(const Schedule& s, std::initializer_list<Role> roles) {
  std::vector<int> ids;
  for (int t : s.persistent)
    if (std::find(roles.begin(), roles.end(), s.tensors[t].info.role) != roles.end()) ids.push_back(t);
  return ids;
}
}  // namespace

// Each parameter from its own seed (the run's and its ordinal), momenta at
// zero, in the order of the state blob.
void Trainer::initialise_parameters() {
  const NetworkShapes shapes = network_.shapes(options_.batch);
  std::vector<float> state;
  std::uint64_t ordinal = 0;
  for (std::size_t i = 0; i < network_.nodes().size(); ++i) {
    const auto specs = network_.nodes()[i].layer->params(shapes.node_inputs[i]);
    const NodeTensors& nt = plan_.train.nodes[i];
    for (std::size_t j = 0; j < specs.size(); ++j) {
      const auto count = static_cast<std::size_t>(specs[j].shape.numel());
      state.resize(state.size() + count);
      init_parameter(specs[j], fnv1a(&ordinal, sizeof ordinal, options_.seed),
                     std::span<float>(state).subspan(state.size() - count));
      ++ordinal;
      if (nt.momenta[j] >= 0) state.resize(state.size() + count, 0.0f);
    }
  }
  write_state(state);
}

IterationResult Trainer::train_step(const float* images, const std::int32_t* labels) {
  IterationInputs in;
  in.iteration = iteration_;
  in.images = images;
  in.labels = labels;
  in.seed = options_.seed;
  in.sgd = options_.sgd;
  const bool scaled = plan_.train.overflow >= 0;
  if (scaled) in.loss_scale = loss_scaler_.scale();
  IterationResult r = executor_->run(plan_.train, in);
  if (scaled) loss_scaler_.update(r.skipped);
  ++iteration_;
  return r;
}

IterationResult Trainer::eval_step(const float* images, const std::int32_t* labels, std::int64_t batch) {
  if (batch <= 0 || batch > options_.batch)
    throw std::invalid_argument("evaluation batch must be between 1 and the training batch (" +
                                std::to_string(options_.batch) + ")");
  IterationInputs in;
  in.iteration = iteration_;
  in.images = images;
  in.labels = labels;
  in.seed = options_.seed;
  return executor_->run(eval_schedule(batch), in);
}

std::vector<float> Trainer::read_parameters() {
  return executor_->read(plan_.train, persistent_with(plan_.train, {Role::weight}));
}

std::vector<float> Trainer::read_state() {
  return executor_->read(plan_.train, persistent_with(plan_.train, {Role::weight, Role::optimizer_state}));
}

void Trainer::write_parameters(const std::vector<float>& values) {
  write(persistent_with(plan_.train, {Role::weight}), values, "parameters");
}

void Trainer::write_state(const std::vector<float>& state) {
  write(persistent_with(plan_.train, {Role::weight, Role::optimizer_state}), state, "state");
}

void Trainer::write(const std::vector<int>& ids, const std::vector<float>& values, const char* what) {
  std::size_t total = 0;
  for (int t : ids) total += plan_.train.tensors[t].info.bytes() / sizeof(float);
  if (values.size() != total)
    throw std::invalid_argument(std::string(what) + " of " + std::to_string(values.size()) + " values do not match " +
                                network_.name() + " (" + std::to_string(total) + " values)");
  executor_->write(plan_.train, ids, values);
}

std::uint64_t Trainer::param_checksum() {
  const std::vector<float> params = read_parameters();
  return fnv1a(params.data(), params.size() * sizeof(float));
}

void Trainer::broadcast_statistics() {
  if (!options_.comm || options_.comm->size() == 1) return;
  std::vector<int> ids;  // the non-trainable parameters: running statistics
  for (const NodeTensors& nt : plan_.train.nodes)
    for (std::size_t j = 0; j < nt.params.size(); ++j)
      if (nt.param_grads[j] < 0) ids.push_back(nt.params[j]);
  if (ids.empty()) return;
  std::vector<float> values = executor_->read(plan_.train, ids);
  options_.comm->broadcast(values.data(), values.size() * sizeof(float), 0);
  executor_->write(plan_.train, ids, values);
}

namespace {
// Whether all of `values` are finite. A NaN or an infinity has every
// exponent bit set; testing the bits of all of them, without stopping
// early, lets the compiler vectorise the loop.
bool all_finite(std::span<const float> values) {
  std::uint32_t bad = 0;
  for (float x : values) {
    std::uint32_t bits;
    std::memcpy(&bits, &x, sizeof bits);
    bad |= static_cast<std::uint32_t>((bits & 0x7f800000u) == 0x7f800000u);
  }
  return bad == 0;
}
}  // namespace

std::string Trainer::nonfinite_parameter() {
  const std::vector<int> ids = persistent_with(plan_.train, {Role::weight});
  std::size_t total = 0;
  for (int t : ids) total += plan_.train.tensors[t].info.bytes() / sizeof(float);
  check_buffer_.resize(total);
  executor_->read(plan_.train, ids, check_buffer_);
  std::span<const float> rest = check_buffer_;
  for (int t : ids) {
    const TensorInfo& info = plan_.train.tensors[t].info;
    const std::size_t count = info.bytes() / sizeof(float);
    if (!all_finite(rest.first(count))) return info.name;
    rest = rest.subspan(count);
  }
  return {};
}

}  // namespace tidepool
