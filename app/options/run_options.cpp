#include "app/options/run_options.h"

#include <algorithm>

#include <nlohmann/json.hpp>

#include "app/options/values.h"
#include "datasets/dataset.h"
#include "engine/memory/allocator.h"
#include "engine/perf/spec_profiles.h"

namespace tidepool::app {
namespace {

std::string joined(const std::vector<std::string>& names) {
  std::string s;
  for (const auto& n : names) s += (s.empty() ? "" : ", ") + n;
  return s;
}

// A memory choice: one word for a run; for plan, also a list (each filters
// the table to its values, `lists` keeping them in the order given).
template <HasChoices E>
CLI::Option* memory_choice(CLI::App& cmd, const std::string& flag, E& value, std::vector<E>* list,
                           const std::string& what, const std::string& help) {
  if (!list) return add_choice(cmd, flag, value, what, help);
  return cmd
      .add_option_function<std::vector<std::string>>(
          flag,
          [&value, list, what](const std::vector<std::string>& words) {
            list->clear();
            for (const std::string& w : words) list->push_back(choice_from_text<E>(w, what));
            value = list->front();
          },
          help + ": " + choice_help<E>() + " (a list plans each: a,b)")
      ->delimiter(',')
      ->default_str(to_string(value))
      ->type_name("WORD[,WORD]");
}

// The heuristic: a name of engine/memory/allocator.h's registry, checked as
// it is read, with a guess at a slip.
std::string heuristic_from_text(const std::string& text) {
  const std::vector<std::string> names = allocator_names();
  for (const std::string& n : names)
    if (n == text) return n;
  const std::string guess = closest(text, names);
  throw CLI::ValidationError("--heuristic", "unknown allocator heuristic '" + text + "' (valid: " + joined(names) +
                                                ")" + (guess.empty() ? "" : "; did you mean '" + guess + "'?"));
}

constexpr const char* kNetwork = "What is trained";
constexpr const char* kSchedule = "How it is trained (batch, schedule, optimiser)";
constexpr const char* kDevice = "Where";
constexpr const char* kMemory = "Memory settings (never change the numbers, but --algo and --precision)";
constexpr const char* kFolder = "The run folder";

}  // namespace

CLI::Option* RunOptions::keep(CLI::Option* o, std::string settings_key, OnResume on_resume, const char* group) {
  o->group(group);
  declared_.push_back({o, {o->get_lnames().front(), std::move(settings_key), on_resume, group == kFolder}});
  return o;
}

void RunOptions::network() {
  keep(cmd_.add_option("--model", s_.model, "network to train")->capture_default_str(), "model", OnResume::must_match,
       kNetwork);
  keep(add_choice(cmd_, "--fuse", s_.fuse, "fusion", "layers computed in one pass"), "fuse", OnResume::must_match,
       kNetwork);
  std::vector<std::string> dataset_names;
  for (auto n : datasets::dataset_names()) dataset_names.emplace_back(n);
  // Checked as it is read: an unknown name would otherwise be taken for a
  // dataset that reads files and be asked for a --data folder.
  auto known = [dataset_names](const std::string& text) -> std::string {
    if (std::find(dataset_names.begin(), dataset_names.end(), text) != dataset_names.end()) return "";
    const std::string guess = closest(text, dataset_names);
    return "unknown dataset '" + text + "' (valid: " + joined(dataset_names) + ")" +
           (guess.empty() ? "" : "; did you mean '" + guess + "'?");
  };
  keep(cmd_.add_option("--dataset", s_.dataset, "dataset: " + joined(dataset_names))
           ->capture_default_str()
           ->check(CLI::Validator(known, "", "dataset")),
       "dataset", OnResume::must_match, kNetwork);
  keep(cmd_.add_flag("--sync-bn", s_.memory.sync_bn,
                     "under mpirun: batch norm normalises with the mean and variance of the whole global batch, its "
                     "per-channel sums all-reduced in every forward and backward (PyTorch's SyncBatchNorm); without "
                     "it each rank uses its own part of the batch. On one process it changes nothing"),
       "sync_bn", OnResume::must_match, kNetwork);
}

void RunOptions::data() {
  keep(cmd_.add_option("--data", s_.data_dir,
                       "folder with the dataset's files (default: data/generated for generated, "
                       "/usr/share/datasets/fashion-mnist for fashion-mnist)"),
       "data_dir", OnResume::invocation, kNetwork);
}

void RunOptions::batch(const std::string& help) {
  keep(cmd_.add_option("--batch-size", s_.batch_size, help)
           ->capture_default_str()
           ->transform(number<std::int64_t>(1, kMostBatch)),
       "batch_size", OnResume::must_match, kSchedule);
}

void RunOptions::batch_and_lr() {
  batch();
  keep(cmd_.add_option("--lr", s_.lr, "initial learning rate")->capture_default_str()->transform(number(0.0f)), "lr",
       OnResume::must_match, kSchedule);
}

void RunOptions::schedule() {
  batch_and_lr();
  auto* epochs = keep(cmd_.add_option("--epochs", s_.epochs, "epochs to train (default 1)")
                          ->transform(number<std::int64_t>(1, kMostEpochs)),
                      "epochs", OnResume::invocation, kSchedule);
  keep(cmd_.add_option("--iterations", s_.iterations, "iterations to train instead of whole epochs")
           ->excludes(epochs)
           ->transform(number<std::int64_t>(1)),
       "iterations", OnResume::invocation, kSchedule);
  keep(add_choice(cmd_, "--lr-schedule", s_.lr_schedule, "learning-rate schedule", "learning-rate schedule"),
       "lr_schedule", OnResume::must_match, kSchedule);
  keep(cmd_.add_option("--momentum", s_.momentum, "SGD momentum")->capture_default_str()->transform(number(0.0f, 1.0f)),
       "momentum", OnResume::must_match, kSchedule);
  keep(cmd_.add_option("--weight-decay", s_.weight_decay, "SGD weight decay")
           ->capture_default_str()
           ->transform(number(0.0f)),
       "weight_decay", OnResume::must_match, kSchedule);
  keep(cmd_.add_option("--seed", s_.seed, "seed of initialisation, data order and dropout")
           ->capture_default_str()
           ->transform(number<std::uint64_t>(0)),
       "seed", OnResume::must_match, kSchedule);
}

void RunOptions::device() {
  keep(add_choice(cmd_, "--device", s_.device, "device", "device"), "device", OnResume::must_match, kDevice);
  keep(cmd_.add_option("--profile", s_.profile,
                       "the performance profile a sim device runs on and AccUDNN plans with: a file from `tidepool "
                       "profile`, or a GPU specification (" +
                           gpu_spec_names() + ")"),
       "profile", OnResume::must_match, kDevice);
  keep(cmd_.add_option("--link-gbps", s_.memory.link_gbps,
                       "cpu device: throttle host<->device copies to this GB/s (0 = off)")
           ->capture_default_str()
           ->transform(number(0.0)),
       "link_gbps", OnResume::may_change, kDevice);
}

void RunOptions::algo(const std::string& help) {
  keep(memory_choice(cmd_, "--algo", s_.memory.scheme, lists_ ? &lists_->schemes : nullptr, "conv algorithm scheme",
                     help),
       "algo", OnResume::must_match, kMemory);
}

void RunOptions::memory() {
  MemorySettings& m = s_.memory;
  auto* heuristic = cmd_.add_option_function<std::vector<std::string>>(
      "--heuristic",
      // (Not `this`: a command may declare its options and let RunOptions go.)
      [lists = lists_, &heuristic = m.heuristic](const std::vector<std::string>& words) {
        if (lists) lists->heuristics.clear();
        for (const std::string& w : words) {
          const std::string name = heuristic_from_text(w);
          if (lists) lists->heuristics.push_back(name);
        }
        heuristic = heuristic_from_text(words.front());
      },
      "memory-pool heuristic: " + joined(allocator_names()) + (lists_ ? " (a list plans each: a,b)" : ""));
  heuristic->default_str(m.heuristic)->type_name(lists_ ? "NAME[,NAME]" : "NAME");
  if (lists_) heuristic->delimiter(',');
  else heuristic->expected(1);
  keep(heuristic, "heuristic", OnResume::may_change, kMemory);
  algo();
  keep(memory_choice(cmd_, "--precision", m.precision, lists_ ? &lists_->precisions : nullptr, "precision",
                     "what activations and their gradients are stored in"),
       "precision", OnResume::must_match, kMemory);
  keep(memory_choice(cmd_, "--mode", m.mode, lists_ ? &lists_->modes : nullptr, "memory mode",
                     "how activations leave the device between forward and backward"),
       "mode", OnResume::may_change, kMemory);
  keep(add_choice(cmd_, "--swap-score", m.swap_score, "swap score", "autoswap's priority score"), "swap_score",
       OnResume::may_change, kMemory);
  keep(add_choice(cmd_, "--transfer", m.transfer, "transfer semantics", "transfers"), "transfer", OnResume::may_change,
       kMemory);
  keep(memory_choice(cmd_, "--order", m.order, lists_ ? &lists_->orders : nullptr, "allocation order",
                     "backward allocation order"),
       "order", OnResume::may_change, kMemory);
  keep(cmd_.add_option("--lookahead", m.lookahead, "prefetches kept in flight ahead of backward")
           ->capture_default_str()
           ->transform(number(0)),
       "lookahead", OnResume::may_change, kMemory);
  keep(cmd_.add_flag("--compress", m.compress,
                     "zero-value compress offloaded tensors into pageable host memory (vDNN++); pinned memory "
                     "shrinks to two staging slots"),
       "compress", OnResume::may_change, kMemory);
  keep(cmd_.add_option("--compress-threads", s_.compress_threads,
                       "host threads that compress one offloaded tensor (0: a quarter of the cores)")
           ->capture_default_str()
           ->transform(number(0, kMostCompressThreads)),
       "compress_threads", OnResume::may_change, kMemory);
  keep(add_size(cmd_, "--budget", m.budget_bytes,
                "memory pool size, e.g. 900MiB or 2g (default: what the run needs); sizes: k/m/g and KiB/MiB/GiB "
                "are powers of 1024, KB/MB/GB of 1000, any case"),
       "budget", OnResume::may_change, kMemory);
  keep(add_size(cmd_, "--bucket-size", m.bucket_bytes,
                "under mpirun: gradients are all-reduced in buckets of this size as backward produces them "
                "(default 1MiB)"),
       "bucket_bytes", OnResume::may_change, kMemory);
  keep(add_choice(cmd_, "--host-memory", m.host_memory, "host memory", "where offloads wait on the host (Zhuang)"),
       "host_memory", OnResume::may_change, kMemory);
  keep(add_choice(cmd_, "--copy-engine", m.copy_engine, "copy engine", "who copies offloads and prefetches (Zhuang)"),
       "copy_engine", OnResume::may_change, kMemory);
}

void RunOptions::folder() {
  keep(cmd_.add_option("--out", s_.out, "run folder (--batch: default runs/<model>-<dataset>-<time>; the window saves its session only when given one)"), "out",
       OnResume::invocation, kFolder);
  keep(cmd_.add_option("--resume", s_.resume, "continue the run in this folder from its checkpoint"), "resume",
       OnResume::invocation, kFolder);
  keep(cmd_.add_flag("--force", s_.force,
                     "with --out: replace the run that folder holds (its files are removed once the new run has "
                     "passed every check; a folder holding other files is never emptied)"),
       "force", OnResume::invocation, kFolder);
  // Not changeable on resume: the traces of the first invocation are kept.
  keep(cmd_.add_option("--trace-iterations", s_.trace_iterations,
                       "iterations recorded in trace.json, memory_load.csv and events.bin")
           ->capture_default_str()
           ->transform(number<std::int64_t>(0)),
       "trace_iterations", OnResume::must_match, kFolder);
  keep(cmd_.add_option("--trace-from", s_.trace_from,
                       "iterations to train before the recorded ones (as Nsight Systems' delay): 50 records "
                       "iterations 51 on")
           ->capture_default_str()
           ->transform(number<std::int64_t>(0)),
       "trace_from", OnResume::must_match, kFolder);
  keep(cmd_.add_option("--stop-after", s_.stop_after,
                       "stop after this many iterations, checkpointed, without changing the planned run (continue "
                       "with --resume)")
           ->transform(number<std::int64_t>(1)),
       "stop_after", OnResume::invocation, kFolder);
  keep(cmd_.add_option("--checkpoint-every", s_.checkpoint_every,
                       "also checkpoint every N iterations within an epoch, so that a kill loses at most N (0: only "
                       "at epoch ends and stops; default: every 5 minutes)")
           ->type_name("N")
           ->transform(number<std::int64_t>(0)),
       "checkpoint_every", OnResume::invocation, kFolder);
}

std::vector<RunOption> RunOptions::given() const {
  std::vector<RunOption> given;
  for (const auto& [option, info] : declared_)
    if (option->count() > 0) given.push_back(info);
  return given;
}

const std::vector<RunOption>& run_option_table() {
  static const std::vector<RunOption> table = [] {
    CLI::App cmd;
    RunSettings s;
    RunOptions options(cmd, s);
    options.all();
    std::vector<RunOption> t;
    for (const auto& [option, info] : options.declared()) t.push_back(info);
    return t;
  }();
  return table;
}

const RunOption* find_run_option(const std::string& name) {
  for (const RunOption& o : run_option_table())
    if (o.name == name) return &o;
  return nullptr;
}

std::vector<std::string> changes_the_numbers(const RunSettings& was, const RunSettings& is) {
  const nlohmann::json a = to_json(was), b = to_json(is);
  auto text = [](const nlohmann::json& v) { return v.is_string() ? v.get<std::string>() : v.dump(); };
  std::vector<std::string> changed;
  for (const RunOption& o : run_option_table())
    if (o.on_resume == OnResume::must_match && a.at(o.settings_key) != b.at(o.settings_key))
      changed.push_back("--" + o.name + " " + text(b.at(o.settings_key)) + " (was " + text(a.at(o.settings_key)) + ")");
  return changed;
}

}  // namespace tidepool::app
