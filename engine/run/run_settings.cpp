#include "engine/run/run_settings.h"

#include <charconv>
#include <cstdlib>

#include <cmath>
#include <limits>
#include <stdexcept>
#include <utility>

#include <nlohmann/json.hpp>

#include "engine/core/bytes_text.h"

namespace tidepool {
namespace {

// j.at(key) as an Int, refusing what does not fit: nlohmann's get<Int>()
// converts a float such as 1e30 with undefined behaviour (UBSan under fuzz/,
// fuzz/corpus/checkpoint/regress_float_*), and wraps a negative number into
// an unsigned one.
template <class Int>
Int integer(const nlohmann::json& j, const char* key) {
  const nlohmann::json& v = j.at(key);
  if (v.is_number_unsigned()) {
    const auto u = v.get<std::uint64_t>();
    if (std::cmp_less_equal(u, std::numeric_limits<Int>::max())) return static_cast<Int>(u);
  } else if (v.is_number_integer()) {
    const auto i = v.get<std::int64_t>();
    if (std::in_range<Int>(i)) return static_cast<Int>(i);
  }
  throw std::invalid_argument(std::string("'") + key + "' must be an integer from " +
                              std::to_string(std::numeric_limits<Int>::min()) + " to " +
                              std::to_string(std::numeric_limits<Int>::max()) + ", not " + v.dump());
}

// AutoSwap's mix, refused here (naming the key) rather than when a plan is
// first made: the weights must be finite and at least 0
// (engine/plan/autoswap.h).
SwapWeights swap_weights(const nlohmann::json& j) {
  if (!j.is_object()) throw std::invalid_argument("'swap_weights' must be an object, not " + j.dump());
  auto weight = [&](const char* key) {
    const nlohmann::json& v = j.at(key);
    if (!v.is_number() || !std::isfinite(v.get<double>()) || v.get<double>() < 0)
      throw std::invalid_argument(std::string("swap weight '") + key + "' must be a finite number of at least 0, not " +
                                  v.dump());
    return v.get<double>();
  };
  return {.aoa = weight("aoa"), .doa = weight("doa"), .wdoa = weight("wdoa"), .swdoa = weight("swdoa")};
}

}  // namespace

std::int64_t json_int64(const nlohmann::json& j, const char* key) { return integer<std::int64_t>(j, key); }

namespace {
// A float setting as it was given (0.1, not 0.10000000149011612): the
// double with the float's shortest text, which reads back as the same float.
double as_given(float v) {
  char text[32];
  const auto end = std::to_chars(text, text + sizeof text, v).ptr;
  double d = 0;
  std::from_chars(text, end, d);  // (from_chars, unlike strtod, ignores the locale)
  return static_cast<float>(d) == v ? d : static_cast<double>(v);
}
}  // namespace

nlohmann::json to_json(const RunSettings& s) {
  const MemorySettings& m = s.memory;
  return {{"model", s.model},
          {"fuse", to_string(s.fuse)},
          {"dataset", s.dataset},
          {"data_dir", s.data_dir},
          {"batch_size", s.batch_size},
          {"epochs", s.epochs},
          {"iterations", s.iterations},
          {"lr", as_given(s.lr)},
          {"lr_schedule", to_string(s.lr_schedule)},
          {"momentum", as_given(s.momentum)},
          {"weight_decay", as_given(s.weight_decay)},
          {"seed", s.seed},
          {"device", to_string(s.device)},
          {"profile", s.profile},
          {"compress_threads", s.compress_threads},
          {"heuristic", m.heuristic},
          {"algo", to_string(m.scheme)},
          {"precision", to_string(m.precision)},
          {"mode", to_string(m.mode)},
          {"transfer", to_string(m.transfer)},
          {"order", to_string(m.order)},
          {"lookahead", m.lookahead},
          {"compress", m.compress},
          {"swap_score", to_string(m.swap_score)},
          {"swap_weights",
           {{"aoa", m.swap_weights.aoa},
            {"doa", m.swap_weights.doa},
            {"wdoa", m.swap_weights.wdoa},
            {"swdoa", m.swap_weights.swdoa}}},
          {"budget", m.budget_bytes ? exact_bytes_text(m.budget_bytes) : ""},
          {"link_gbps", m.link_gbps},
          {"host_memory", to_string(m.host_memory)},
          {"copy_engine", to_string(m.copy_engine)},
          {"ranks", m.ranks},
          {"bucket_bytes", m.bucket_bytes},
          {"sync_bn", m.sync_bn},
          {"trace_iterations", s.trace_iterations},
          {"trace_from", s.trace_from}};
}

RunSettings run_settings_from_json(const nlohmann::json& j) {
  RunSettings s;
  MemorySettings& m = s.memory;
  s.model = j.at("model").get<std::string>();
  s.fuse = parse_choice<Fusion>(j.value("fuse", std::string("none")), "fusion");  // from before --fuse
  s.dataset = j.at("dataset").get<std::string>();
  s.data_dir = j.at("data_dir").get<std::string>();
  s.batch_size = integer<std::int64_t>(j, "batch_size");
  s.epochs = integer<std::int64_t>(j, "epochs");
  s.iterations = integer<std::int64_t>(j, "iterations");
  s.lr = j.at("lr").get<float>();
  s.lr_schedule = parse_choice<LrSchedule>(j.at("lr_schedule").get<std::string>(), "learning-rate schedule");
  s.momentum = j.at("momentum").get<float>();
  s.weight_decay = j.at("weight_decay").get<float>();
  s.seed = integer<std::uint64_t>(j, "seed");
  s.device = parse_choice<DeviceKind>(j.at("device").get<std::string>(), "device");
  s.profile = j.value("profile", "");  // from before the sim device existed
  s.compress_threads = j.contains("compress_threads") ? integer<int>(j, "compress_threads") : 0;  // from before compression existed
  m.heuristic = j.at("heuristic").get<std::string>();
  m.scheme = parse_choice<ConvScheme>(j.at("algo").get<std::string>(), "conv algorithm scheme");
  m.precision = parse_choice<Precision>(j.value("precision", std::string("fp32")), "precision");  // from before 16-bit
  m.mode = parse_choice<OffloadMode>(j.at("mode").get<std::string>(), "offload mode");
  m.transfer = parse_choice<TransferMode>(j.at("transfer").get<std::string>(), "transfer semantics");
  m.order = parse_choice<AllocOrder>(j.at("order").get<std::string>(), "allocation order");
  m.lookahead = integer<int>(j, "lookahead");
  m.compress = j.value("compress", false);
  m.swap_score = parse_choice<SwapScore>(j.value("swap_score", std::string("swdoa")), "swap score");
  if (j.contains("swap_weights")) m.swap_weights = swap_weights(j.at("swap_weights"));  // from before bo
  const std::string budget = j.at("budget").get<std::string>();
  m.budget_bytes = budget.empty() ? 0 : parse_bytes(budget);
  m.link_gbps = j.at("link_gbps").get<double>();
  // From before Zhuang's choices: pinned memory and stream copies.
  m.host_memory = parse_choice<HostMemory>(j.value("host_memory", std::string("pinned")), "host memory");
  m.copy_engine = parse_choice<CopyEngine>(j.value("copy_engine", std::string("stream")), "copy engine");
  // From before data-parallel training: one rank.
  m.ranks = j.contains("ranks") ? integer<int>(j, "ranks") : 1;
  if (j.contains("bucket_bytes")) m.bucket_bytes = integer<std::size_t>(j, "bucket_bytes");
  m.sync_bn = j.value("sync_bn", false);  // from before --sync-bn: each rank's statistics
  s.trace_iterations = integer<std::int64_t>(j, "trace_iterations");
  s.trace_from = j.contains("trace_from") ? integer<std::int64_t>(j, "trace_from") : 0;  // from before --trace-from
  return s;
}

}  // namespace tidepool
