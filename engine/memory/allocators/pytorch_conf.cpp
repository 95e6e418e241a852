// PYTORCH_CUDA_ALLOC_CONF, parsed as PyTorch's CUDAAllocatorConfig reads
// it: comma-separated key:value pairs, spaces ignored, values as PyTorch
// takes them (integers in MiB, True/False). Only the options that change
// where device memory goes matter to a replay; see pytorch.h.
#include <charconv>
#include <stdexcept>
#include <string>
#include <vector>

#include "engine/memory/allocators/pytorch.h"

namespace tidepool {
namespace {

std::string without_spaces(std::string_view text) {
  std::string s;
  for (char c : text)
    if (c != ' ' && c != '\t') s += c;
  return s;
}

std::vector<std::string> split(const std::string& s, char sep) {
  std::vector<std::string> parts;
  std::size_t from = 0;
  for (;;) {
    const std::size_t at = s.find(sep, from);
    parts.push_back(s.substr(from, at == std::string::npos ? std::string::npos : at - from));
    if (at == std::string::npos) return parts;
    from = at + 1;
  }
}

[[noreturn]] void bad(const std::string& what) {
  throw std::invalid_argument("PYTORCH_CUDA_ALLOC_CONF: " + what);
}

// A size in MiB of at least kLargeBuffer's 20: PyTorch refuses smaller
// ones for both options ("max_split_size_mb too small, must be >= 20";
// releases before 2.8 asked for > 20).
std::size_t mib_option(const std::string& key, const std::string& value) {
  std::size_t mib = 0;
  const auto [end, ec] = std::from_chars(value.data(), value.data() + value.size(), mib);
  if (ec != std::errc() || end != value.data() + value.size() || value.empty())
    bad(key + " takes a whole number of MiB, not '" + value + "'");
  constexpr std::size_t kMin = pytorch::kLargeBuffer / pytorch::kMiB;
  if (mib < kMin) bad(key + " too small, must be >= " + std::to_string(kMin) + " (got " + value + ")");
  constexpr std::size_t kMost = std::numeric_limits<std::size_t>::max() / pytorch::kMiB;
  return (mib > kMost ? kMost : mib) * pytorch::kMiB;
}

}  // namespace

PytorchAllocConf parse_pytorch_alloc_conf(std::string_view text) {
  PytorchAllocConf conf;
  const std::string s = without_spaces(text);
  if (s.empty()) return conf;
  for (const std::string& option : split(s, ',')) {
    if (option.empty()) continue;  // "a:1,,b:2" and a trailing comma, as PyTorch's tokenizer allows
    const std::size_t colon = option.find(':');
    if (colon == std::string::npos) bad("option '" + option + "' has no value (key:value)");
    const std::string key = option.substr(0, colon), value = option.substr(colon + 1);
    if (key == "max_split_size_mb") {
      conf.max_split_size_bytes = mib_option(key, value);
    } else if (key == "max_non_split_rounding_mb") {
      conf.max_non_split_rounding_bytes = mib_option(key, value);
    } else if (key == "expandable_segments") {
      if (value != "True" && value != "False") bad("expandable_segments takes True or False, not '" + value + "'");
      conf.expandable_segments = value == "True";
    } else if (key == "backend") {
      if (value == "cudaMallocAsync") bad("backend:cudaMallocAsync is CUDA's own pool, not the caching allocator modelled here");
      if (value != "native") bad("backend takes native or cudaMallocAsync, not '" + value + "'");
    } else if (key == "garbage_collection_threshold" || key == "roundup_power2_divisions") {
      bad("option '" + key + "' changes placement but is not modelled by the pytorch heuristic "
          "(modelled: max_split_size_mb, max_non_split_rounding_mb, expandable_segments)");
    } else if (key == "release_lock_on_cudamalloc" || key.rfind("pinned_", 0) == 0) {
      // Locking and pinned host memory: nothing a replay of device memory sees.
    } else {
      bad("unknown option '" + key + "' (known: max_split_size_mb, max_non_split_rounding_mb, expandable_segments, "
          "backend, garbage_collection_threshold, roundup_power2_divisions, release_lock_on_cudamalloc, pinned_*)");
    }
  }
  return conf;
}

}  // namespace tidepool
