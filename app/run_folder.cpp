#include "app/run_folder.h"

#include <algorithm>
#include <atomic>
#include <cstring>
#include <ctime>
#include <regex>
#include <vector>
#include <sstream>
#include <stdexcept>
#include <string>

#include "engine/core/json_file.h"

namespace fs = std::filesystem;

namespace tidepool::app {
namespace {

// A file a run folder holds (see run_folder.h), by its exact name: what
// --force may remove. A look-alike (checkpoint-best.bin) is the user's.
bool is_run_file(const std::string& name) {
  static const std::regex kRunFile(
      "(metrics\\.csv|summary\\.json|checkpoint\\.bin|profile\\.json|timeline\\.png|address_map\\.png|memory_load\\.png)"
      "|(trace|memory_load|events)(\\.rank[0-9]+)?\\.(json|csv|bin)"
      "|(checkpoint\\.bin|summary\\.json|metrics\\.csv)\\.tmp");
  return std::regex_match(name, kRunFile);
}

// --out may name a new folder, an empty one, or (with --force) one that
// holds a run and nothing else. Anything else is refused before a byte is
// written: a run folder is never overwritten or emptied unasked, and a
// folder of other files never at all.
void refuse_occupied(const fs::path& path, bool replace) {
  std::error_code ec;
  if (!fs::exists(path, ec)) return;
  if (!fs::is_directory(path, ec)) throw std::invalid_argument("--out " + path.string() + " is a file, not a folder");
  std::string run_file, other_file;
  for (const auto& entry : fs::directory_iterator(path)) {
    const std::string name = entry.path().filename().string();
    (entry.is_regular_file() && is_run_file(name) ? run_file : other_file) = name;
  }
  if (!other_file.empty())
    throw std::invalid_argument("--out " + path.string() + " holds files that are not a run's (" + other_file +
                                "): give a new or empty folder");
  if (!run_file.empty() && !replace)
    throw std::invalid_argument("--out " + path.string() + " holds a run (" + run_file +
                                "): continue it with --resume " + path.string() +
                                ", give --force to replace it, or give another --out");
}

constexpr const char* kMetricsHeader =
    "epoch,iteration,lr,train_loss,train_accuracy,test_loss,test_accuracy,test_top5,"
    "images_per_second,peak_load_bytes,footprint_bytes,seconds";

// metrics.csv back to the rows of the first `epochs` epochs, written to a
// temporary file and renamed so that a kill now loses nothing.
void rewind_metrics(const fs::path& file, std::int64_t epochs) {
  std::ifstream in(file);
  std::string text, line;
  std::getline(in, line);  // the header
  text = std::string(kMetricsHeader) + '\n';
  while (std::getline(in, line)) {
    std::int64_t epoch = 0;
    char comma = 0;
    std::istringstream row(line);
    // Rows are written before their epoch's checkpoint, so only rows past
    // it can be cut short by a kill; one whose epoch number was cut has no
    // comma left.
    if (!(row >> epoch >> comma) || comma != ',' || epoch > epochs || std::count(line.begin(), line.end(), ',') != 11)
      break;
    text += line + '\n';
  }
  in.close();
  fs::path tmp = file;
  tmp += ".tmp";
  {
    std::ofstream out(tmp, std::ios::trunc);
    out << text;
    if (!out) throw std::runtime_error("cannot write " + tmp.string());
  }
  fs::rename(tmp, file);
}

}  // namespace

// Events that arrive before open() (the set-up placement, while the trainer
// is built) wait here, in order; from open() on they go straight to the
// traced files. Before open() only the thread building the run sends
// events; open() publishes the target before any other thread of the run
// sends one.
class RunFolder::StartBuffer final : public EventSink {
 public:
  void on_span(const SpanEvent& e) override { pass(e); }
  void on_alloc(const AllocEvent& e) override { pass(e); }
  void on_load(const LoadSample& e) override { pass(e); }
  void on_iteration(const IterationSummary& e) override { pass(e); }
  void flush() override {
    if (EventSink* t = target_.load(std::memory_order_acquire)) t->flush();
  }
  void open(EventSink& target) {
    waiting_.send_to(target);
    waiting_.clear();
    target_.store(&target, std::memory_order_release);
  }

 private:
  static void send(EventSink& t, const SpanEvent& e) { t.on_span(e); }
  static void send(EventSink& t, const AllocEvent& e) { t.on_alloc(e); }
  static void send(EventSink& t, const LoadSample& e) { t.on_load(e); }
  static void send(EventSink& t, const IterationSummary& e) { t.on_iteration(e); }
  template <class E>
  void pass(const E& e) {
    if (EventSink* t = target_.load(std::memory_order_acquire))
      send(*t, e);
    else
      waiting_.add(e);
  }
  std::atomic<EventSink*> target_{nullptr};
  KeptEvents waiting_;
};

RunFolder::RunFolder(fs::path path, const Checkpoint* resumed, const fs::path& resumed_from,
                     TraceWindow traced, int rank, bool replace)
    : path_(std::move(path)), rank_(rank), replace_(replace), traced_window_(traced) {
  // Continuing in the folder the checkpoint came from; a resumed run given
  // another --out starts that folder anew, under the same rules as a new run.
  std::error_code ec;
  const bool continuing = resumed && !resumed_from.empty() && fs::equivalent(path_, resumed_from, ec);
  if (continuing) resumed_epoch_ = resumed->epoch;
  traces_ = !resumed || resumed->iteration < traced.end();
  if (traces_) start_ = std::make_unique<StartBuffer>();
  // --force replaces another run, never the one being continued here.
  replace_ = replace && !continuing;
  if (rank_ == 0 && !continuing) refuse_occupied(path_, replace_);
}

void RunFolder::open() {
  if (opened_) return;
  opened_ = true;
  if (rank_ == 0 && replace_) {  // refuse_occupied() saw run files only
    std::error_code ec;
    if (fs::exists(path_, ec))
      for (const auto& entry : fs::directory_iterator(path_)) fs::remove(entry.path());
  }
  fs::create_directories(path_);
  if (traces_) {
    traced_ = std::make_unique<TracedFiles>(path_, traced_window_, rank_);
    start_->open(traced_->sink());
  }
  if (rank_ > 0) return;  // the rest is rank 0's
  for (const char* leftover : {"checkpoint.bin.tmp", "summary.json.tmp", "metrics.csv.tmp"})
    fs::remove(path_ / leftover);  // a kill's; never read
  const fs::path metrics = path_ / "metrics.csv";
  const bool fresh = resumed_epoch_ < 0 || !fs::exists(metrics);
  if (!fresh) rewind_metrics(metrics, resumed_epoch_);
  metrics_.open(metrics, fresh ? std::ios::trunc : std::ios::app);
  if (!metrics_) throw std::runtime_error("cannot write " + metrics.string());
  if (fresh) metrics_ << kMetricsHeader << '\n';
}

RunFolder::~RunFolder() = default;

EventSink* RunFolder::sink() { return start_.get(); }

fs::path RunFolder::default_path(const RunSettings& s) {
  const std::time_t now = std::time(nullptr);
  char stamp[32];
  std::strftime(stamp, sizeof stamp, "%Y%m%d-%H%M%S", std::localtime(&now));
  return fs::path("runs") / (s.model + "-" + s.dataset + "-" + stamp);
}

void RunFolder::append_metrics(const EpochRow& r) {
  if (rank_ > 0) return;
  metrics_ << r.epoch << ',' << r.iteration << ',' << r.lr << ',';
  if (r.numbers)
    metrics_ << r.train_loss << ',' << r.train_accuracy << ',' << r.test_loss << ',' << r.test_accuracy << ','
             << r.test_top5 << ',';
  else
    metrics_ << ",,,,,";  // a simulated run's: no numbers, not zeros
  metrics_ << r.images_per_second << ',' << r.peak_load_bytes << ',' << r.footprint_bytes << ',' << r.seconds << '\n';
  metrics_.flush();
}

void RunFolder::save_checkpoint(const Checkpoint& checkpoint) {
  if (!opened_) throw std::logic_error("run folder: a checkpoint before open()");
  if (rank_ == 0) app::save_checkpoint(path_ / "checkpoint.bin", checkpoint);
}

void RunFolder::close_traced(const MemorySummary& memory, std::int64_t batch, bool computes_values) {
  if (traced_) traced_->close(memory, batch, computes_values);
}

void RunFolder::finish(const MemorySummary& memory, std::int64_t batch, bool computes_values,
                       const nlohmann::json& summary) {
  if (!opened_) throw std::logic_error("run folder: finished before open()");
  close_traced(memory, batch, computes_values);
  if (rank_ == 0) write_json_atomically((path_ / "summary.json").string(), summary);
}

}  // namespace tidepool::app
