#include "engine/memory/allocator.h"

#include <algorithm>
#include <cstdint>
#include <stdexcept>

#include "engine/memory/allocators/pytorch.h"

namespace tidepool {

// Each policy lives in allocators/<name>.cpp and exposes one factory.
std::unique_ptr<Allocator> make_exact_allocator(std::size_t pool_bytes);
// (make_cnmem_allocator(pool_bytes, initial_pool_bytes) is declared in allocator.h.)
std::unique_ptr<Allocator> make_cnmem_allocator(std::size_t pool_bytes);
std::unique_ptr<Allocator> make_best_fit_allocator(std::size_t pool_bytes);
std::unique_ptr<Allocator> make_first_fit_allocator(std::size_t pool_bytes);
std::unique_ptr<Allocator> make_high_end_allocator(std::size_t pool_bytes);
std::unique_ptr<Allocator> make_smartpool_allocator(std::size_t pool_bytes);
// (make_pytorch_allocator(pool_bytes, conf) is declared in allocators/pytorch.h.)

namespace {
std::unique_ptr<Allocator> make_default_pytorch_allocator(std::size_t pool_bytes) {
  return make_pytorch_allocator(pool_bytes, {});
}

// The most of the pool a policy claims for one request nothing it holds
// serves (most_claimed_bytes).
std::size_t granules(std::size_t bytes) { return round_up(bytes); }
std::size_t pytorch_segment(std::size_t bytes) { return pytorch::allocation_size(pytorch::round_size(bytes)); }

struct Policy {
  const char* name;
  std::unique_ptr<Allocator> (*make)(std::size_t);
  std::size_t (*claim)(std::size_t);
};
constexpr Policy kPolicies[] = {
    {"exact", make_exact_allocator, granules},
    {"cnmem", make_cnmem_allocator, granules},
    {"best-fit", make_best_fit_allocator, granules},
    {"first-fit", make_first_fit_allocator, granules},
    {"high-end", make_high_end_allocator, granules},
    {"smartpool", make_smartpool_allocator, granules},
    {"pytorch", make_default_pytorch_allocator, pytorch_segment},
};
}  // namespace

std::size_t most_claimed_bytes(std::size_t bytes) {
  std::size_t most = 0;
  for (const auto& p : kPolicies) most = std::max(most, p.claim(bytes));
  return most;
}

std::vector<std::string> allocator_names() {
  std::vector<std::string> names;
  for (const auto& p : kPolicies) names.emplace_back(p.name);
  return names;
}

std::unique_ptr<Allocator> make_allocator(std::string_view name, std::size_t pool_bytes) {
  for (const auto& p : kPolicies)
    if (name == p.name) return p.make(usable_pool(pool_bytes));
  std::string valid;
  for (const auto& p : kPolicies) valid += (valid.empty() ? "" : ", ") + std::string(p.name);
  throw std::invalid_argument("unknown allocator heuristic '" + std::string(name) +
                              "' (valid: " + valid + ")");
}

std::size_t fails_alike_to(const Allocator& failed, std::size_t pool_bytes) {
  auto fails = [&](std::size_t pool) {
    const std::optional<std::size_t> lacking = failed.lacking_in_pool(pool);
    return lacking && *lacking > 0;
  };
  // Doubling steps past the range, then halving back to its last granule.
  std::size_t known = pool_bytes, step = kAllocGranularity;
  while (known < SIZE_MAX / 2 && step < SIZE_MAX / 2 && fails(known + step)) {
    known += step;
    step *= 2;
  }
  while (step > kAllocGranularity) {
    step /= 2;
    if (fails(known + step)) known += step;
  }
  return known;
}

}  // namespace tidepool
