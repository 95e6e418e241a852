#include "app/session.h"

#include <chrono>
#include <cmath>
#include <stdexcept>

#include "app/device_factory.h"
#include "app/lr_schedule.h"
#include "app/settings_text.h"
#include "engine/memory/allocator.h"
#include "engine/device/cpu/cpu_device.h"
#include "engine/memory/dry_run.h"
#include "engine/plan/planner.h"
#include "models/registry.h"

namespace tidepool::app {
namespace {

using Clock = std::chrono::steady_clock;

// Restores the trainer's sink when an evaluation ends, however it ends.
class MutedSink {
 public:
  explicit MutedSink(Trainer& t) : trainer_(t), sink_(t.sink()) { trainer_.set_sink(nullptr); }
  ~MutedSink() { trainer_.set_sink(sink_); }
  MutedSink(const MutedSink&) = delete;
  MutedSink& operator=(const MutedSink&) = delete;

 private:
  Trainer& trainer_;
  EventSink* sink_;
};

}  // namespace

TrainingSession::TrainingSession(const RunOptions& o, SessionOptions session)
    : options_(o), session_options_(session) {
  if (o.batch_size <= 0) throw std::invalid_argument("--batch-size must be at least 1");
  if (o.epochs < 0 || o.iterations < 0) throw std::invalid_argument("--epochs and --iterations must not be negative");
  learning_rate(o.lr_schedule, o.lr, 0, 1);  // validates the schedule name
  settings_.scheme = parse_scheme(o.algo);
  choose_dyn_ = o.mode == "dyn";
  settings_.budget_bytes = o.budget.empty() ? 0 : parse_bytes(o.budget);
  // dyn under a budget starts from the mode that needs least memory and
  // profiles from there; with no budget, keeping everything always fits.
  settings_.mode = choose_dyn_ ? (settings_.budget_bytes ? OffloadMode::all : OffloadMode::base) : parse_mode(o.mode);
  settings_.transfer = parse_transfer(o.transfer);
  settings_.order = parse_order(o.order);
  settings_.heuristic = o.heuristic;
  settings_.link_gbps = o.link_gbps;
  if (o.lookahead < 0) throw std::invalid_argument("--lookahead must not be negative");
  if (o.compress_threads < 0) throw std::invalid_argument("--compress-threads must not be negative");
  settings_.lookahead = o.lookahead;
  settings_.compress = o.compress;
  swap_score_ = parse_swap_score(o.swap_score);

  // Data first: a wrong path should fail before anything slow happens.
  std::string data_dir = o.data_dir;
  if (data_dir.empty()) {
    if (o.dataset != "generated")
      throw std::invalid_argument("--dataset " + o.dataset + " needs --data DIR (the folder with its files)");
    data_dir = "data/generated";
  }
  train_set_ = datasets::make_dataset(o.dataset, data_dir, datasets::Split::train);
  test_set_ = datasets::make_dataset(o.dataset, data_dir, datasets::Split::test);
  const auto input = o.dataset == "imagenet" ? models::InputKind::imagenet : models::InputKind::cifar;
  network_ = std::make_unique<Network>(models::make_model(o.model, input, train_set_->classes()));

  const auto train_opts = datasets::LoaderOptions::training(o.batch_size, o.seed);
  per_epoch_ = static_cast<std::int64_t>(train_set_->size()) / o.batch_size;
  if (per_epoch_ == 0)
    throw std::invalid_argument("the training set (" + std::to_string(train_set_->size()) +
                                " images) is smaller than one batch of " + std::to_string(o.batch_size));
  epochs_ = o.iterations ? (o.iterations + per_epoch_ - 1) / per_epoch_ : std::max<std::int64_t>(o.epochs, 1);
  total_ = o.iterations ? o.iterations : epochs_ * per_epoch_;
  // Both loaders' slots sit in the device's pinned region.
  train_staging_bytes_ = (datasets::BatchLoader::required_bytes(*train_set_, train_opts) + 63) / 64 * 64;
  eval_staging_bytes_ =
      datasets::BatchLoader::required_bytes(*test_set_, datasets::LoaderOptions::evaluation(o.batch_size));

  status_.model = o.model;
  status_.dataset = train_set_->name();
  status_.batch = o.batch_size;
  status_.total_iterations = total_;
  status_.epochs = epochs_;
  status_.settings = settings_;
}

TrainingSession::~TrainingSession() = default;

void TrainingSession::start(EventSink* sink) {
  const RunOptions& o = options_;
  device_ = make_device(o.device, o.link_gbps, session_options_.for_window);
  TrainerOptions topts;
  topts.batch = o.batch_size;
  topts.plan.scheme = settings_.scheme;
  topts.plan.mode = settings_.mode;
  topts.plan.transfer = settings_.transfer;
  topts.plan.order = settings_.order;
  topts.plan.lookahead = o.lookahead;
  topts.plan.compress = o.compress;
  topts.plan.swap_score = swap_score_;
  topts.compress_threads = o.compress_threads;
  topts.heuristic = o.heuristic;
  topts.budget_bytes = settings_.budget_bytes;
  topts.seed = o.seed;
  topts.sgd = {o.lr, o.momentum, o.weight_decay};
  topts.staging_bytes = train_staging_bytes_ + eval_staging_bytes_;
  if (session_options_.roomy_arena) {
    // Room for keeping everything on the device (the fastest conv scheme,
    // the hungriest heuristic) plus a quarter: the budget slider may go up
    // to the arena, and the arena is reserved once.
    PlanSettings base = topts.plan;
    base.mode = OffloadMode::base;
    base.scheme = ConvScheme::p;
    const Schedule s = plan(*network_, o.batch_size, base, device_->kernels());
    std::size_t most = 0;
    for (const auto& h : allocator_names()) most = std::max(most, footprint_of(s, h));
    topts.arena_bytes = std::max(settings_.budget_bytes, most + most / 4);
  }
  trainer_ = std::make_unique<Trainer>(*device_, *network_, topts, sink);
  const auto train_opts = datasets::LoaderOptions::training(o.batch_size, o.seed);
  const auto eval_opts = datasets::LoaderOptions::evaluation(o.batch_size);
  train_loader_ = std::make_unique<datasets::BatchLoader>(
      *train_set_, trainer_->staging().subspan(0, train_staging_bytes_), train_opts);
  test_loader_ = std::make_unique<datasets::BatchLoader>(
      *test_set_, trainer_->staging().subspan(train_staging_bytes_, eval_staging_bytes_), eval_opts);
  if (train_loader_->batches_per_epoch() != per_epoch_)
    throw std::logic_error("the loader and the session disagree on the batches in an epoch");
  refresh_status();
}

void TrainingSession::restore(const std::vector<float>& state, std::int64_t epoch, std::int64_t batch_in_epoch,
                              std::int64_t iteration) {
  trainer_->write_state(state);
  epoch_ = epoch;
  batch_in_epoch_ = batch_in_epoch;
  iteration_ = iteration;
  epoch_open_ = false;
  trainer_->set_iteration(iteration);
  refresh_status();
}

void TrainingSession::request(const ui::MemorySettings& settings) {
  std::lock_guard lock(mutex_);
  pending_ = settings;
}

ui::SessionStatus TrainingSession::status() const {
  std::lock_guard lock(mutex_);
  return status_;
}

void TrainingSession::apply_pending(StepReport& report) {
  std::optional<ui::MemorySettings> request;
  {
    std::lock_guard lock(mutex_);
    request.swap(pending_);
  }
  if (!request) return;
  std::string message;
  bool refused = false;
  try {
    auto* cpu = dynamic_cast<CpuDevice*>(device_.get());
    if (request->link_gbps != settings_.link_gbps && !cpu)
      throw std::invalid_argument("only the cpu device simulates its host link; " + device_->caps().name +
                                  " copies at the speed of its own");
    PlanSettings p = trainer_->options().plan;
    p.scheme = request->scheme;
    p.mode = request->mode;
    p.order = request->order;
    p.transfer = request->transfer;
    p.lookahead = request->lookahead;
    p.compress = request->compress;
    // Throws, changing nothing, when the settings cannot work.
    trainer_->apply(p, request->heuristic, request->budget_bytes);
    if (cpu) cpu->set_link_gbps(request->link_gbps);
    report.settings_changed = !(*request == settings_);
    settings_ = *request;
    message = "applied before iteration " + std::to_string(iteration_ + 1) + ": pool " +
              format_bytes(trainer_->pool_bytes()) + ", smallest workable " +
              format_bytes(trainer_->minimum_budget());
  } catch (const std::exception& e) {
    refused = true;
    message = std::string("refused: ") + e.what();
  }
  std::lock_guard lock(mutex_);
  ++status_.requests;
  status_.refused = refused;
  status_.message = message;
}

StepReport TrainingSession::train_iteration() {
  if (finished()) throw std::logic_error("train_iteration after the last planned iteration");
  StepReport report;
  apply_pending(report);
  if (!epoch_open_) {
    train_loader_->start_epoch(epoch_);
    for (std::int64_t b = 0; b < batch_in_epoch_; ++b)  // trained before a checkpoint
      if (!train_loader_->next()) throw std::logic_error("the epoch ended while skipping restored batches");
    epoch_open_ = true;
  }
  auto batch = train_loader_->next();
  if (!batch) throw std::logic_error("the epoch ended before its planned number of batches");
  if (choose_dyn_) {  // dyn: profile the modes that fit on the first batch
    report.dyn = choose_dyn(*trainer_, batch->images, batch->labels);
    settings_.mode = report.dyn->mode;
    choose_dyn_ = false;
  }
  report.lr = learning_rate(options_.lr_schedule, options_.lr, iteration_, total_);
  trainer_->set_learning_rate(report.lr);
  const auto t0 = Clock::now();
  report.result = trainer_->train_step(batch->images, batch->labels);
  report.seconds = std::chrono::duration<double>(Clock::now() - t0).count();
  report.images = batch->size;
  if (!std::isfinite(report.result.loss))
    throw std::runtime_error("training diverged: the loss is " + std::to_string(report.result.loss) +
                             " at iteration " + std::to_string(iteration_) +
                             "; try a lower --lr (the last checkpoint is kept)");
  ++iteration_;
  if (++batch_in_epoch_ == per_epoch_) {
    report.epoch_end = true;
    ++epoch_;
    batch_in_epoch_ = 0;
    epoch_open_ = false;
  }
  refresh_status();
  return report;
}

Evaluation TrainingSession::evaluate() {
  MutedSink muted(*trainer_);
  Evaluation e;
  std::int64_t correct = 0, correct5 = 0;
  test_loader_->start_epoch(0);
  while (auto batch = test_loader_->next()) {
    if (batch->size == 0) continue;
    const IterationResult r = trainer_->eval_step(batch->images, batch->labels, batch->size);
    correct += r.correct;
    correct5 += r.correct_top5;
    e.loss += static_cast<double>(r.loss) * batch->size;
    e.images += batch->size;
  }
  if (e.images) {
    e.loss /= e.images;
    e.accuracy = static_cast<double>(correct) / e.images;
    e.top5 = static_cast<double>(correct5) / e.images;
  }
  std::lock_guard lock(mutex_);
  status_.test_accuracy = static_cast<float>(e.accuracy);
  return e;
}

void TrainingSession::refresh_status() {
  const Schedule& s = trainer_->train_schedule();
  std::lock_guard lock(mutex_);
  status_.device = device_->caps().name;
  status_.iteration = iteration_;
  status_.epoch = epoch_;
  status_.settings = settings_;
  status_.pool_bytes = trainer_->pool_bytes();
  status_.minimum_budget = trainer_->minimum_budget();
  status_.arena_bytes = trainer_->arena_bytes();
  status_.planned_peak_load_bytes = s.peak_load_bytes;
  status_.pinned_host_bytes = s.pinned_bytes;
  status_.load_limit_bytes = s.settings.mode == OffloadMode::autoswap ? s.settings.load_limit_bytes : 0;
  status_.park_horizon = trainer_->park_horizon();
  status_.parking_budget = trainer_->parking_budget();
  status_.link_adjustable = dynamic_cast<CpuDevice*>(device_.get()) != nullptr;
}

}  // namespace tidepool::app
