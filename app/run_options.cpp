#include "app/run_options.h"

#include <nlohmann/json.hpp>

namespace tidepool::app {

nlohmann::json to_json(const RunOptions& o) {
  return {{"model", o.model},         {"dataset", o.dataset},
          {"data_dir", o.data_dir},   {"batch_size", o.batch_size},
          {"epochs", o.epochs},       {"iterations", o.iterations},
          {"lr", o.lr},               {"lr_schedule", o.lr_schedule},
          {"momentum", o.momentum},   {"weight_decay", o.weight_decay},
          {"seed", o.seed},           {"device", o.device},
          {"heuristic", o.heuristic}, {"algo", o.algo},
          {"mode", o.mode},           {"transfer", o.transfer},
          {"order", o.order},         {"lookahead", o.lookahead},
          {"compress", o.compress},   {"compress_threads", o.compress_threads},
          {"swap_score", o.swap_score},
          {"budget", o.budget},
          {"link_gbps", o.link_gbps}, {"trace_iterations", o.trace_iterations}};
}

RunOptions options_from_json(const nlohmann::json& j) {
  RunOptions o;
  o.model = j.at("model").get<std::string>();
  o.dataset = j.at("dataset").get<std::string>();
  o.data_dir = j.at("data_dir").get<std::string>();
  o.batch_size = j.at("batch_size").get<std::int64_t>();
  o.epochs = j.at("epochs").get<std::int64_t>();
  o.iterations = j.at("iterations").get<std::int64_t>();
  o.lr = j.at("lr").get<float>();
  o.lr_schedule = j.at("lr_schedule").get<std::string>();
  o.momentum = j.at("momentum").get<float>();
  o.weight_decay = j.at("weight_decay").get<float>();
  o.seed = j.at("seed").get<std::uint64_t>();
  o.device = j.at("device").get<std::string>();
  o.heuristic = j.at("heuristic").get<std::string>();
  o.algo = j.at("algo").get<std::string>();
  o.mode = j.at("mode").get<std::string>();
  o.transfer = j.at("transfer").get<std::string>();
  o.order = j.at("order").get<std::string>();
  o.lookahead = j.at("lookahead").get<int>();
  o.compress = j.value("compress", false);  // checkpoints from before compression existed
  o.compress_threads = j.value("compress_threads", 0);
  o.swap_score = j.value("swap_score", std::string("swdoa"));
  o.budget = j.at("budget").get<std::string>();
  o.link_gbps = j.at("link_gbps").get<double>();
  o.trace_iterations = j.at("trace_iterations").get<std::int64_t>();
  return o;
}

}  // namespace tidepool::app
