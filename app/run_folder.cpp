#include "app/run_folder.h"

#include <ctime>
#include <stdexcept>

#include "ui/png/run_pictures.h"

namespace fs = std::filesystem;

namespace tidepool::app {
namespace {

fs::path created(fs::path path) {
  fs::create_directories(path);
  return path;
}

void write_json_atomically(const fs::path& file, const nlohmann::json& j) {
  fs::path tmp = file;
  tmp += ".tmp";
  {
    std::ofstream out(tmp);
    if (!out) throw std::runtime_error("cannot write " + tmp.string());
    out << j.dump(2) << '\n';
    if (!out) throw std::runtime_error("writing " + tmp.string() + " failed");
  }
  fs::rename(tmp, file);
}

}  // namespace

RunFolder::RunFolder(fs::path path, bool resumed, std::int64_t trace_iterations)
    : path_(created(std::move(path))),
      trace_((path_ / "trace.json").string()),
      load_csv_((path_ / "memory_load.csv").string()),
      events_((path_ / "events.bin").string()),
      filter_(files_, trace_iterations) {
  files_.add(trace_);
  files_.add(load_csv_);
  files_.add(events_);
  files_.add(pictures_);
  const fs::path metrics = path_ / "metrics.csv";
  const bool fresh = !resumed || !fs::exists(metrics);
  metrics_.open(metrics, fresh ? std::ios::trunc : std::ios::app);
  if (!metrics_) throw std::runtime_error("cannot write " + metrics.string());
  if (fresh)
    metrics_ << "epoch,iteration,lr,train_loss,train_accuracy,test_loss,test_accuracy,test_top5,"
                "images_per_second,peak_load_bytes,footprint_bytes,seconds\n";
}

fs::path RunFolder::default_path(const RunSettings& s) {
  const std::time_t now = std::time(nullptr);
  char stamp[32];
  std::strftime(stamp, sizeof stamp, "%Y%m%d-%H%M%S", std::localtime(&now));
  return fs::path("runs") / (s.model + "-" + s.dataset + "-" + stamp);
}

void RunFolder::append_metrics(const EpochRow& r) {
  metrics_ << r.epoch << ',' << r.iteration << ',' << r.lr << ',' << r.train_loss << ',' << r.train_accuracy << ','
           << r.test_loss << ',' << r.test_accuracy << ',' << r.test_top5 << ',' << r.images_per_second << ','
           << r.peak_load_bytes << ',' << r.footprint_bytes << ',' << r.seconds << '\n';
  metrics_.flush();
}

void RunFolder::save_checkpoint(const Checkpoint& checkpoint) { app::save_checkpoint(path_ / "checkpoint.bin", checkpoint); }

void RunFolder::finish(const MemorySummary& memory, std::int64_t batch, const nlohmann::json& summary) {
  filter_.flush();
  ui::write_run_pictures(pictures_.snapshot(), memory.pool_bytes, batch, path_, memory.load_limit_bytes);
  write_json_atomically(path_ / "summary.json", summary);
}

}  // namespace tidepool::app
