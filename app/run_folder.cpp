#include "app/run_folder.h"

#include <algorithm>
#include <ctime>
#include <sstream>
#include <stdexcept>
#include <string>

#include "engine/core/json_file.h"
#include "engine/observe/sinks/chrome_trace_writer.h"
#include "engine/observe/sinks/event_file_writer.h"
#include "engine/observe/sinks/iteration_filter.h"
#include "engine/observe/sinks/memory_load_csv_writer.h"
#include "engine/observe/sinks/ring_sink.h"
#include "ui/png/run_pictures.h"

namespace fs = std::filesystem;

namespace tidepool::app {
namespace {

fs::path created(fs::path path) {
  fs::create_directories(path);
  return path;
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

std::string ranked_file(const char* stem, const char* extension, int rank) {
  return std::string(stem) + (rank > 0 ? ".rank" + std::to_string(rank) : "") + extension;
}

struct RunFolder::Traced {
  Traced(const fs::path& folder, std::int64_t iterations, int rank)
      : trace((folder / ranked_file("trace", ".json", rank)).string()),
        load_csv((folder / ranked_file("memory_load", ".csv", rank)).string()),
        events((folder / ranked_file("events", ".bin", rank)).string()),
        filter(files, iterations) {
    files.add(trace);
    files.add(load_csv);
    files.add(events);
    files.add(pictures);
  }
  ChromeTraceWriter trace;
  MemoryLoadCsvWriter load_csv;
  EventFileWriter events;
  RingSink pictures;  // the same iterations, drawn as PNG when they are done
  FanOutSink files;
  IterationFilter filter;
  bool closed = false;
};

RunFolder::RunFolder(fs::path path, const Checkpoint* resumed, std::int64_t trace_iterations, int rank)
    : path_(created(std::move(path))), rank_(rank) {
  if (!resumed || resumed->iteration < trace_iterations)
    traced_ = std::make_unique<Traced>(path_, trace_iterations, rank_);
  if (rank_ > 0) return;  // the rest is rank 0's
  for (const char* leftover : {"checkpoint.bin.tmp", "summary.json.tmp", "metrics.csv.tmp"})
    fs::remove(path_ / leftover);  // a kill's; never read
  const fs::path metrics = path_ / "metrics.csv";
  const bool fresh = !resumed || !fs::exists(metrics);
  if (!fresh) rewind_metrics(metrics, resumed->epoch);
  metrics_.open(metrics, fresh ? std::ios::trunc : std::ios::app);
  if (!metrics_) throw std::runtime_error("cannot write " + metrics.string());
  if (fresh) metrics_ << kMetricsHeader << '\n';
}

RunFolder::~RunFolder() = default;

EventSink* RunFolder::sink() { return traced_ ? &traced_->filter : nullptr; }

fs::path RunFolder::default_path(const RunSettings& s) {
  const std::time_t now = std::time(nullptr);
  char stamp[32];
  std::strftime(stamp, sizeof stamp, "%Y%m%d-%H%M%S", std::localtime(&now));
  return fs::path("runs") / (s.model + "-" + s.dataset + "-" + stamp);
}

void RunFolder::append_metrics(const EpochRow& r) {
  if (rank_ > 0) return;
  metrics_ << r.epoch << ',' << r.iteration << ',' << r.lr << ',' << r.train_loss << ',' << r.train_accuracy << ','
           << r.test_loss << ',' << r.test_accuracy << ',' << r.test_top5 << ',' << r.images_per_second << ','
           << r.peak_load_bytes << ',' << r.footprint_bytes << ',' << r.seconds << '\n';
  metrics_.flush();
}

void RunFolder::save_checkpoint(const Checkpoint& checkpoint) {
  if (rank_ == 0) app::save_checkpoint(path_ / "checkpoint.bin", checkpoint);
}

void RunFolder::close_traced(const MemorySummary& memory, std::int64_t batch) {
  if (!traced_ || traced_->closed) return;
  traced_->closed = true;
  traced_->filter.flush();
  if (rank_ > 0) return;  // the pictures are rank 0's
  ui::write_run_pictures(traced_->pictures.snapshot(), memory.pool_bytes, batch, path_, memory.load_limit_bytes);
}

void RunFolder::finish(const MemorySummary& memory, std::int64_t batch, const nlohmann::json& summary) {
  close_traced(memory, batch);
  if (rank_ == 0) write_json_atomically((path_ / "summary.json").string(), summary);
}

}  // namespace tidepool::app
