#include "engine/run/run_settings.h"

#include <nlohmann/json.hpp>

#include "engine/core/bytes_text.h"

namespace tidepool {

nlohmann::json to_json(const RunSettings& s) {
  const MemorySettings& m = s.memory;
  return {{"model", s.model},
          {"dataset", s.dataset},
          {"data_dir", s.data_dir},
          {"batch_size", s.batch_size},
          {"epochs", s.epochs},
          {"iterations", s.iterations},
          {"lr", s.lr},
          {"lr_schedule", to_string(s.lr_schedule)},
          {"momentum", s.momentum},
          {"weight_decay", s.weight_decay},
          {"seed", s.seed},
          {"device", to_string(s.device)},
          {"compress_threads", s.compress_threads},
          {"heuristic", m.heuristic},
          {"algo", to_string(m.scheme)},
          {"mode", to_string(m.mode)},
          {"transfer", to_string(m.transfer)},
          {"order", to_string(m.order)},
          {"lookahead", m.lookahead},
          {"compress", m.compress},
          {"swap_score", to_string(m.swap_score)},
          {"budget", m.budget_bytes ? exact_bytes_text(m.budget_bytes) : ""},
          {"link_gbps", m.link_gbps},
          {"trace_iterations", s.trace_iterations}};
}

RunSettings run_settings_from_json(const nlohmann::json& j) {
  RunSettings s;
  MemorySettings& m = s.memory;
  s.model = j.at("model").get<std::string>();
  s.dataset = j.at("dataset").get<std::string>();
  s.data_dir = j.at("data_dir").get<std::string>();
  s.batch_size = j.at("batch_size").get<std::int64_t>();
  s.epochs = j.at("epochs").get<std::int64_t>();
  s.iterations = j.at("iterations").get<std::int64_t>();
  s.lr = j.at("lr").get<float>();
  s.lr_schedule = parse_choice<LrSchedule>(j.at("lr_schedule").get<std::string>(), "learning-rate schedule");
  s.momentum = j.at("momentum").get<float>();
  s.weight_decay = j.at("weight_decay").get<float>();
  s.seed = j.at("seed").get<std::uint64_t>();
  s.device = parse_choice<DeviceKind>(j.at("device").get<std::string>(), "device");
  s.compress_threads = j.value("compress_threads", 0);  // from before compression existed
  m.heuristic = j.at("heuristic").get<std::string>();
  m.scheme = parse_choice<ConvScheme>(j.at("algo").get<std::string>(), "conv algorithm scheme");
  m.mode = parse_choice<OffloadMode>(j.at("mode").get<std::string>(), "offload mode");
  m.transfer = parse_choice<TransferMode>(j.at("transfer").get<std::string>(), "transfer semantics");
  m.order = parse_choice<AllocOrder>(j.at("order").get<std::string>(), "allocation order");
  m.lookahead = j.at("lookahead").get<int>();
  m.compress = j.value("compress", false);
  m.swap_score = parse_choice<SwapScore>(j.value("swap_score", std::string("swdoa")), "swap score");
  const std::string budget = j.at("budget").get<std::string>();
  m.budget_bytes = budget.empty() ? 0 : parse_bytes(budget);
  m.link_gbps = j.at("link_gbps").get<double>();
  s.trace_iterations = j.at("trace_iterations").get<std::int64_t>();
  return s;
}

}  // namespace tidepool
