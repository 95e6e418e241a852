#include "app/session.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <stdexcept>

#include "app/device_factory.h"
#include "app/kernel_choices_file.h"
#include "app/model_shapes.h"
#include "engine/core/bytes_text.h"
#include "engine/device/sim/sim_device.h"
#include "engine/perf/spec_profiles.h"
#include "engine/plan/memory_facts.h"
#include "engine/plan/planner.h"
#include "engine/tune/swap_weight_tuning.h"
#include "engine/run/lr_schedule.h"
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

// "nan", "inf" or "-inf", whatever the sign bit of a NaN.
std::string nonfinite_text(float v) { return std::isnan(v) ? "nan" : v > 0 ? "inf" : "-inf"; }

// dyn starts from the mode that needs least memory under a budget (and
// profiles from there); with no budget, keeping everything always fits.
MemorySettings before_dyn(MemorySettings m) {
  m.mode = m.budget_bytes ? OffloadMode::all : OffloadMode::base;
  return m;
}

}  // namespace

namespace {
// The sim device's streams are clocks only the executor moves: there is
// no host thread that could copy on them.
void refuse_copy_threads_without_host_copies(const MemorySettings& m, const Device& device) {
  if (m.copy_engine == CopyEngine::threads && !device.caps().host_copies)
    throw std::invalid_argument(device.caps().name + " simulates its streams in virtual time, with no host threads "
                                "to copy from: run --copy-engine threads on the cpu or cuda device");
}

// The sim device computes no values: compressing its offloads would
// compress nothing, and say nothing about a real run.
void refuse_compression_without_values(const MemorySettings& m, const Device& device) {
  if (m.compress && !device.caps().computes_values)
    throw std::invalid_argument(device.caps().name + " computes no values, so there is nothing to compress: run "
                                "without --compress");
}
}  // namespace

TrainingSession::TrainingSession(const RunSettings& s, SessionOptions session)
    : settings_(s), session_options_(session) {
  if (s.batch_size <= 0) throw std::invalid_argument("--batch-size must be at least 1");
  if (s.epochs < 0 || s.iterations < 0) throw std::invalid_argument("--epochs and --iterations must not be negative");
  if (s.memory.lookahead < 0) throw std::invalid_argument("--lookahead must not be negative");
  if (s.compress_threads < 0) throw std::invalid_argument("--compress-threads must not be negative");
  choose_dyn_ = s.memory.mode == OffloadMode::dyn;

  // Data first: a wrong path should fail before anything slow happens.
  // A folder given to a dataset that reads none is refused rather than
  // ignored: whoever gave it meant other data than they would get.
  if (!datasets::reads_files(s.dataset) && !s.data_dir.empty())
    throw std::invalid_argument("--dataset " + s.dataset + " reads no files (its images are made from nothing): "
                                "drop --data " + s.data_dir);
  std::string data_dir = s.data_dir.empty() ? datasets::default_data_dir(s.dataset).string() : s.data_dir;
  if (data_dir.empty() && datasets::reads_files(s.dataset))
    throw std::invalid_argument("--dataset " + s.dataset + " needs --data DIR (the folder with its files)");
  train_set_ = datasets::make_dataset(s.dataset, data_dir, datasets::Split::train);
  test_set_ = datasets::make_dataset(s.dataset, data_dir, datasets::Split::test);
  network_ = std::make_unique<Network>(
      fuse(models::make_model(s.model, input_for_dataset(s.dataset), train_set_->classes()), s.fuse, s.memory.sync_bn));

  // Data-parallel: the global batch split evenly over the ranks.
  if (session.comm && session.comm->size() > 1) comm_ = session.comm;
  const std::int64_t ranks = this->ranks();
  if (s.batch_size % ranks != 0) {
    const std::int64_t below = s.batch_size / ranks * ranks, above = below + ranks;
    throw std::invalid_argument("--batch-size " + std::to_string(s.batch_size) + " is the global batch and does not split "
                                "evenly over " + std::to_string(ranks) + " ranks: give a multiple of " +
                                std::to_string(ranks) + (below > 0 ? " (" + std::to_string(below) + " or " : " (") +
                                std::to_string(above) + ")");
  }
  rank_batch_ = s.batch_size / ranks;
  settings_.memory.ranks = static_cast<int>(ranks);
  const auto train_opts = loader_options(datasets::LoaderOptions::training(rank_batch_, s.seed));
  per_epoch_ = static_cast<std::int64_t>(train_set_->size()) / s.batch_size;
  if (per_epoch_ == 0)
    throw std::invalid_argument("the training set (" + std::to_string(train_set_->size()) +
                                " images) is smaller than one batch of " + std::to_string(s.batch_size));
  epochs_ = s.iterations ? (s.iterations + per_epoch_ - 1) / per_epoch_ : std::max<std::int64_t>(s.epochs, 1);
  total_ = s.iterations ? s.iterations : epochs_ * per_epoch_;
  if (s.trace_iterations > 0 && s.trace_from >= total_)
    throw std::invalid_argument("--trace-from " + std::to_string(s.trace_from) + " is not before the run's last of " +
                                std::to_string(total_) + " iterations, so nothing would be recorded: give a smaller "
                                "--trace-from (it counts the iterations trained before the recorded ones)");
  // Both loaders' slots sit in the device's pinned region.
  train_staging_bytes_ = (datasets::BatchLoader::required_bytes(*train_set_, train_opts) + 63) / 64 * 64;
  eval_staging_bytes_ =
      datasets::BatchLoader::required_bytes(*test_set_, loader_options(datasets::LoaderOptions::evaluation(rank_batch_)));
}

datasets::LoaderOptions TrainingSession::loader_options(datasets::LoaderOptions o) const {
  o.shard = rank();
  o.shards = ranks();
  return o;
}

TrainingSession::~TrainingSession() = default;

void TrainingSession::start(EventSink* sink) {
  const RunSettings& s = settings_;
  device_ = session_options_.make_device
                ? session_options_.make_device()
                : make_device(s.device, s.memory.link_gbps, session_options_.for_window, s.profile);
  // This machine's earlier choices, then the checkpoint's, which win
  // (app/kernel_choices_file.h); rank 0's go to every rank.
  const std::filesystem::path choices_file =
      rank() == 0 ? kernel_choices_file(device_->caps().name) : std::filesystem::path();
  device_->adopt_kernel_choices(read_kernel_choices(choices_file));
  device_->adopt_kernel_choices(session_options_.kernel_choices);
  TrainerOptions topts;
  topts.batch = rank_batch_;
  topts.memory = choose_dyn_ ? before_dyn(settings_.memory) : settings_.memory;
  share_kernel_choices(topts.memory);
  topts.comm = comm_;
  topts.compress_threads = s.compress_threads;
  topts.seed = s.seed;
  topts.sgd = {s.lr, s.momentum, s.weight_decay};
  topts.staging_bytes = train_staging_bytes_ + eval_staging_bytes_;
  topts.room_to_grow = session_options_.room_to_grow;
  // A real device plans with the profile it was given (mode accudnn, the
  // predictions); the sim device runs on it and plans with its own.
  if (!s.profile.empty() && s.device != DeviceKind::sim) {
    model_ = std::make_unique<PerfModel>(session_options_.measured_profile ? *session_options_.measured_profile
                                                                           : resolve_profile(s.profile));
    topts.model = model_.get();
  }
  refuse_compression_without_values(s.memory, *device_);
  refuse_copy_threads_without_host_copies(s.memory, *device_);
  const PerfModel* model = topts.model ? topts.model : device_->perf_model();
  if (topts.memory.mode == OffloadMode::autoswap && topts.memory.swap_score == SwapScore::bo &&
      topts.memory.budget_bytes) {
    if (!model)
      throw std::invalid_argument("--swap-score bo tunes its weights on simulated iterations: give --profile (a "
                                  "file from `tidepool profile`, or a GPU specification), or run on --device sim");
    swap_weight_search_ = tune_swap_weights(*network_, rank_batch_, topts.memory,
                                            [&] { return make_sim_device(*model); });
    topts.memory.swap_weights = settings_.memory.swap_weights = swap_weight_search_->best;
  }
  trainer_ = std::make_unique<Trainer>(*device_, *network_, topts, sink);
  remember_kernel_choices(choices_file, device_->kernel_choices());  // what planning timed
  auto train_opts = loader_options(datasets::LoaderOptions::training(rank_batch_, s.seed));
  auto eval_opts = loader_options(datasets::LoaderOptions::evaluation(rank_batch_));
  // A device that computes no values never reads an image: the loaders
  // hand it labels only, or decoding would be all a simulated run waits for.
  train_opts.decode = eval_opts.decode = device_->caps().computes_values;
  train_loader_ = std::make_unique<datasets::BatchLoader>(
      *train_set_, trainer_->staging().subspan(0, train_staging_bytes_), train_opts);
  test_loader_ = std::make_unique<datasets::BatchLoader>(
      *test_set_, trainer_->staging().subspan(train_staging_bytes_, eval_staging_bytes_), eval_opts);
  if (train_loader_->batches_per_epoch() != per_epoch_)
    throw std::logic_error("the loader and the session disagree on the batches in an epoch");
}

// Every rank computes with rank 0's kernels: choices made by timing (the
// cuda device's `p` algorithms) differ from process to process, and ranks
// that ran different algorithms would end with different parameters. Rank 0
// makes its choices for the shapes this run plans (training and evaluation,
// a schedule each: no pool is placed) and sends them; the others adopt them
// before anything of theirs is planned.
void TrainingSession::share_kernel_choices(const MemorySettings& memory) {
  // Every rank has the same kind of device, so all skip this together.
  if (!comm_ || !device_->caps().times_kernels) return;
  std::string text;
  std::string failure;
  if (rank() == 0) {
    try {
      for (Phase phase : {Phase::train, Phase::eval})
        plan_schedule(*network_, rank_batch_, PlanSettings{phase, memory, {}}, device_->kernels());
      for (const std::string& line : device_->kernel_choices()) text += line + '\n';
    } catch (const std::exception& e) {
      failure = e.what();
    }
  }
  // -1: rank 0 failed, and every rank stops with it rather than wait.
  std::int64_t length = failure.empty() ? static_cast<std::int64_t>(text.size()) : -1;
  comm_->broadcast(&length, sizeof length, 0);
  if (length < 0)
    throw std::runtime_error(rank() == 0 ? failure : "rank 0 could not plan the run's kernels; it says why");
  text.resize(static_cast<std::size_t>(length));
  comm_->broadcast(text.data(), text.size(), 0);
  if (rank() == 0) return;
  std::vector<std::string> lines;
  for (std::size_t at = 0, end; at < text.size(); at = end + 1) {
    end = std::min(text.find('\n', at), text.size());
    lines.push_back(text.substr(at, end - at));
  }
  device_->adopt_kernel_choices(lines);
}

void TrainingSession::restore(const std::vector<float>& state, std::int64_t epoch, std::int64_t batch_in_epoch,
                              std::int64_t iteration, const LossScalerState& loss_scale) {
  // A checkpoint read with other data (--data) may not fit this epoch.
  if (epoch < 0 || iteration < 0 || batch_in_epoch < 0 || batch_in_epoch >= per_epoch_)
    throw std::invalid_argument("the checkpoint is at batch " + std::to_string(batch_in_epoch) + " of epoch " +
                                std::to_string(epoch + 1) + ", but an epoch of this training set has " +
                                std::to_string(per_epoch_) + " batches");
  // A simulated run's checkpoint keeps where it was, not parameters nobody
  // computed (app/batch_run.cpp): there is nothing to write back.
  if (!state.empty() || device_->caps().computes_values) trainer_->write_state(state);
  trainer_->set_loss_scaler(loss_scale);
  epoch_ = epoch;
  batch_in_epoch_ = batch_in_epoch;
  iteration_ = iteration;
  epoch_open_ = false;
  trainer_->set_iteration(iteration);
}

ApplyOutcome TrainingSession::apply(const MemorySettings& asked) {
  MemorySettings wanted = asked;  // the ranks, their buckets and --sync-bn are the run's
  wanted.ranks = settings_.memory.ranks;
  wanted.bucket_bytes = settings_.memory.bucket_bytes;
  wanted.sync_bn = settings_.memory.sync_bn;
  try {
    if (wanted.link_gbps != 0 && !device_->caps().simulated_link)
      throw std::invalid_argument("only a device that simulates its host link (cpu) can be throttled; " +
                                  device_->caps().name + " copies at the speed of its own");
    refuse_compression_without_values(wanted, *device_);
    refuse_copy_threads_without_host_copies(wanted, *device_);
    const bool dyn = wanted.mode == OffloadMode::dyn;
    // Throws, changing nothing, when the settings cannot work.
    const MemoryPlan& plan = trainer_->apply(dyn ? before_dyn(wanted) : wanted);
    device_->set_link_gbps(wanted.link_gbps);
    settings_.memory = wanted;
    choose_dyn_ = dyn;
    return {true, "applied before iteration " + std::to_string(iteration_ + 1) + ": pool " +
                      format_bytes(plan.pool_bytes) + ", " + fact_info(MemoryFact::minimum_pool).label + " " +
                      format_bytes(plan.minimum_pool_bytes) +
                      (dyn ? "; dyn profiles the modes that fit now" : "")};
  } catch (const std::exception& e) {
    return {false, std::string("refused: ") + e.what()};
  }
}

StepReport TrainingSession::train_iteration() {
  if (finished()) throw std::logic_error("train_iteration after the last planned iteration");
  if (diverged()) throw std::runtime_error(divergence_);  // no training on garbage
  StepReport report;
  if (!epoch_open_) {
    // Mid-epoch after a restore: the batches trained before the checkpoint
    // are skipped without being decoded.
    train_loader_->start_epoch(epoch_, batch_in_epoch_);
    epoch_open_ = true;
  }
  auto batch = train_loader_->next();
  if (!batch) throw std::logic_error("the epoch ended before its planned number of batches");
  if (choose_dyn_) {  // dyn: profile the modes that fit on this batch
    report.dyn = choose_dyn(*trainer_, batch->images, batch->labels);
    settings_.memory.mode = report.dyn->mode;
    choose_dyn_ = false;
  }
  report.lr = learning_rate(settings_.lr_schedule, settings_.lr, iteration_, total_);
  trainer_->set_learning_rate(report.lr);
  const auto t0 = Clock::now();
  report.result = trainer_->train_step(batch->images, batch->labels);
  // The sim device's iteration takes virtual time: its rate is the
  // simulated GPU's, not this host's.
  report.seconds = device_->caps().computes_values ? std::chrono::duration<double>(Clock::now() - t0).count()
                                                   : (report.result.end_us - report.result.start_us) * 1e-6;
  report.images = batch->size;
  if (comm_) {  // the global batch's figures, the same on every rank
    double sums[3] = {report.result.loss, static_cast<double>(report.result.correct),
                      static_cast<double>(report.result.correct_top5)};
    comm_->all_reduce_sum(sums, 3);
    report.result.loss = static_cast<float>(sums[0] / ranks());  // every rank's loss is the mean of as many images
    report.result.correct = static_cast<std::int64_t>(sums[1]);
    report.result.correct_top5 = static_cast<std::int64_t>(sums[2]);
    report.images = batch->size * ranks();
  }
  ++iteration_;
  if (++batch_in_epoch_ == per_epoch_) {
    report.epoch_end = true;
    ++epoch_;
    batch_in_epoch_ = 0;
    epoch_open_ = false;
  }
  // The loss covers forward. A NaN or infinite gradient can come with a
  // finite loss (backward overflowing). In fp16 such a step skips its
  // update (loss scaling), and a scale that halves past its minimum is
  // divergence. Otherwise it cannot pass the update unseen: w -= lr * (momentum * v + dw + weight_decay * w) is NaN or
  // infinite wherever dw is, even at lr 0. So finite parameters after the
  // step (batchnorm's running statistics among them) mean its gradients
  // were finite too. The loss alone would not do: a NaN parameter can be
  // hidden from it by a ReLU or a max pool and stay NaN. The scan is one
  // copy of the parameters per iteration (README: How a run ended).
  // A device that computes no values reads back zeros: nothing to scan
  // (VGG-16's 553 MB would be most of a simulated iteration's host time).
  if (!device_->caps().computes_values) return report;
  if (!std::isfinite(report.result.loss))
    diverge("the loss is " + nonfinite_text(report.result.loss));
  else if (trainer_->loss_scaler().exhausted()) {
    char scale[32];  // %g: the scale is 2^-24 here, which %f prints as 0
    std::snprintf(scale, sizeof scale, "%g", static_cast<double>(trainer_->loss_scaler().scale() * 2.0f));
    diverge(std::string("fp16's gradients are not finite even at loss scale ") + scale + " (" +
            std::to_string(trainer_->loss_scaler().state().skipped_steps) + " steps skipped)");
  }
  else if (const std::string p = trainer_->nonfinite_parameter(); !p.empty())
    diverge(p + " is no longer finite");
  return report;
}

// Where the last trained iteration was, counted from 1 as the progress
// line counts, and why it is garbage.
void TrainingSession::diverge(const std::string& what) {
  const std::int64_t last = std::max<std::int64_t>(iteration_, 1);
  char lr[32];
  std::snprintf(lr, sizeof lr, "%g", learning_rate(settings_.lr_schedule, settings_.lr, last - 1, total_));
  divergence_ = "training diverged at iteration " + std::to_string(iteration_) + " of " + std::to_string(total_) +
                " (epoch " + std::to_string((last - 1) / per_epoch_ + 1) + ", learning rate " + lr + "): " + what +
                "; try a lower --lr";
}

Evaluation TrainingSession::evaluate() {
  // A device that computes no values would score nothing, and an
  // evaluation's events reach no view: not worth the host's time (VGG-16
  // on imagenet-shapes' 50,000 test images at batch 64: 5 s).
  if (!device_->caps().computes_values) return {};
  MutedSink muted(*trainer_);
  trainer_->broadcast_statistics();  // every rank scores with rank 0's batch-norm statistics
  Evaluation e;
  // This rank's shard: loss sum, top-1, top-5, images, and the first
  // non-finite loss (0: none).
  double sums[5] = {0, 0, 0, 0, 0};
  test_loader_->start_epoch(0);
  while (auto batch = test_loader_->next()) {
    if (batch->size == 0) continue;
    const IterationResult r = trainer_->eval_step(batch->images, batch->labels, batch->size);
    // A NaN or +inf logit makes its row's loss NaN (softmax's normaliser
    // is); -inf on a class that is not the label is that class at
    // probability 0, a finite loss, and harmless.
    if (!std::isfinite(r.loss)) {
      sums[4] = r.loss;
      break;  // the other ranks still wait for this one's sums
    }
    sums[0] += static_cast<double>(r.loss) * batch->size;
    sums[1] += static_cast<double>(r.correct);
    sums[2] += static_cast<double>(r.correct_top5);
    sums[3] += static_cast<double>(batch->size);
  }
  if (comm_) {
    // A non-finite loss on any rank makes the sum of the flags non-finite
    // (NaN + anything is NaN; inf + -inf too), so every rank diverges.
    comm_->all_reduce_sum(sums, 5);
  }
  if (sums[4] != 0) {  // NaN != 0 too
    const float loss = static_cast<float>(sums[4]);
    diverge("the test loss is " + nonfinite_text(loss) + " in the evaluation after it");
    return {.loss = loss};  // no evaluation: the last good one stays the status's
  }
  e.loss = sums[0];
  e.images = static_cast<std::int64_t>(sums[3]);
  const auto correct = static_cast<std::int64_t>(sums[1]), correct5 = static_cast<std::int64_t>(sums[2]);
  if (e.images) {
    e.loss /= e.images;
    e.accuracy = static_cast<double>(correct) / e.images;
    e.top5 = static_cast<double>(correct5) / e.images;
  }
  test_accuracy_ = static_cast<float>(e.accuracy);
  return e;
}

void TrainingSession::check_ranks_agree() {
  if (!comm_) return;
  // With --sync-bn every rank computes its running statistics from the
  // same summed sums: the checksums below then check that they agree,
  // where sending rank 0's round would only paper over a difference.
  if (!settings_.memory.sync_bn) trainer_->broadcast_statistics();
  const std::vector<std::uint64_t> sums = comm_->all_gather(trainer_->param_checksum());
  std::string differ;
  for (std::size_t r = 1; r < sums.size(); ++r)
    if (sums[r] != sums[0]) differ += (differ.empty() ? "" : ", ") + std::to_string(r);
  if (!differ.empty())
    throw CommError("after iteration " + std::to_string(iteration_) + " the parameters of rank " + differ +
                    " differ from rank 0's (checksums of the same parameters): the ranks no longer train one model, "
                    "so the run stops; its last checkpoint is still good");
}

ui::SessionStatus TrainingSession::status() const {
  ui::SessionStatus s;
  s.settings = settings_;
  s.dataset_name = train_set_->name();
  s.iteration = iteration_;
  s.total_iterations = total_;
  s.epoch = epoch_;
  s.epochs = epochs_;
  s.test_accuracy = test_accuracy_;
  s.computes_values = device_computes_values(settings_.device);
  if (trainer_) {
    s.device = device_->caps().name;
    s.link_adjustable = device_->caps().simulated_link;
    s.computes_values = device_->caps().computes_values;
    const MemoryPlan& plan = trainer_->memory();
    s.memory = plan.summary();
    if (plan.predicted) s.predicted = ui::PredictedIteration{plan.predicted->iteration_us, plan.predicted->stall_us};
    if (plan.settings.precision == Precision::fp16) s.loss_scale = trainer_->loss_scaler().state();
  }
  return s;
}

}  // namespace tidepool::app
