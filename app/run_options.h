// Everything a training run is configured with, from the command line or a
// checkpoint being resumed.
#pragma once

#include <cstdint>
#include <string>

#include <nlohmann/json_fwd.hpp>

namespace tidepool::app {

struct RunOptions {
  std::string model = "resnet20";
  std::string dataset = "generated";
  std::string data_dir;  // default: data/generated for the generated dataset
  std::int64_t batch_size = 128;
  std::int64_t epochs = 0;      // 0 with iterations == 0 means 1 epoch
  std::int64_t iterations = 0;  // 0: run whole epochs
  float lr = 0.1f;
  std::string lr_schedule = "cosine";  // cosine | step | constant
  float momentum = 0.9f;
  float weight_decay = 5e-4f;
  std::uint64_t seed = 1;
  std::string device = "cpu";
  std::string out;     // run folder; default runs/<model>-<dataset>-<time>
  std::string resume;  // a run folder holding checkpoint.bin
  std::string heuristic = "best-fit";
  std::string algo = "p";  // conv algorithm scheme: m (least workspace) or p (fastest)
  std::string mode = "base";            // offload: base | all | conv | aconv | dyn
  std::string transfer = "async";       // sync (vDNN) | async (vDNN++)
  std::string order = "prefetch-first";  // backward allocation order | derivative-first
  int lookahead = 1;                    // prefetches in flight beyond the current layer's
  bool compress = false;                // zero-value compress offloads into pageable host memory
  int compress_threads = 0;             // host threads per compressed tensor; 0: a quarter of the cores
  std::string swap_score = "swdoa";     // AutoSwap's priority score: doa | aoa | wdoa | swdoa
  std::string budget;                   // the pool size, e.g. 900MiB; empty: what the run needs
  double link_gbps = 0;    // cpu device: throttle host<->device copies (0 = unthrottled)
  std::int64_t trace_iterations = 5;  // iterations written to trace.json and memory_load.csv
  // Stop this invocation after so many iterations (checkpointed; continue
  // with --resume) without changing the planned run or its schedule. 0 = off.
  std::int64_t stop_after = 0;
  bool progress = true;
};

nlohmann::json to_json(const RunOptions& o);
RunOptions options_from_json(const nlohmann::json& j);

}  // namespace tidepool::app
