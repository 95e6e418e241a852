#include "engine/memory/allocator.h"

#include <stdexcept>

namespace tidepool {

// Each policy lives in allocators/<name>.cpp and exposes one factory.
std::unique_ptr<Allocator> make_exact_allocator(std::size_t pool_bytes);
// (make_cnmem_allocator(pool_bytes, initial_pool_bytes) is declared in allocator.h.)
std::unique_ptr<Allocator> make_cnmem_allocator(std::size_t pool_bytes);
std::unique_ptr<Allocator> make_best_fit_allocator(std::size_t pool_bytes);
std::unique_ptr<Allocator> make_first_fit_allocator(std::size_t pool_bytes);
std::unique_ptr<Allocator> make_high_end_allocator(std::size_t pool_bytes);
std::unique_ptr<Allocator> make_smartpool_allocator(std::size_t pool_bytes);

namespace {
struct Policy {
  const char* name;
  std::unique_ptr<Allocator> (*make)(std::size_t);
};
constexpr Policy kPolicies[] = {
    {"exact", make_exact_allocator},
    {"cnmem", make_cnmem_allocator},
    {"best-fit", make_best_fit_allocator},
    {"first-fit", make_first_fit_allocator},
    {"high-end", make_high_end_allocator},
    {"smartpool", make_smartpool_allocator},
};
}  // namespace

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

}  // namespace tidepool
