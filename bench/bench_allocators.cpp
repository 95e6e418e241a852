// The cost of one allocate + free per memory-pool heuristic, on the
// sequence they serve in training: a CNN-like iteration (forward keeps every
// layer's output, with a workspace per layer; backward allocates input
// gradients and frees as it goes; a third of the inputs offloaded), about
// 100 blocks live at the peak, replayed iteration after iteration on one
// pool, so smartpool is measured serving its learned plan by lookup.
//
// Reported: ns per alloc+free pair (the `ns_per_alloc_free` counter), the
// median of 5 repetitions. Target on the host: under 100 ns.
//
//   bench_allocators [--benchmark_filter=smartpool]
#include <benchmark/benchmark.h>

#include <cstdint>
#include <string>
#include <vector>

#include "engine/memory/allocator.h"

namespace {

using tidepool::kAllocGranularity;

struct Event {
  bool alloc;
  int id;
  std::size_t bytes;
  bool offload;
};

// One training iteration of a `layers`-layer CNN with ids 0.. reused every
// iteration; parameters are allocated once, before it.
std::vector<Event> cnn_iteration(int layers, int& ids) {
  std::vector<Event> t;
  auto act = [](int i) { return static_cast<std::size_t>(8 + 6 * (i % 5) + (i % 7 == 0 ? 40 : 0)) * 1024; };
  auto ws = [](int i) { return static_cast<std::size_t>(1 + (i * 13) % 17) * 1024 + 100; };
  const int activation = 0, workspace = layers + 1, gradient = 2 * layers + 2, bwd_ws = 3 * layers + 3;
  ids = 4 * layers + 4;
  t.push_back({true, activation, act(0), true});
  for (int i = 1; i <= layers; ++i) {
    t.push_back({true, workspace + i, ws(i), false});
    t.push_back({true, activation + i, act(i), i % 3 == 0});
    t.push_back({false, workspace + i, 0, false});
  }
  t.push_back({true, gradient + layers, act(layers), false});
  for (int i = layers; i >= 1; --i) {
    t.push_back({true, bwd_ws + i, ws(i + 1), false});
    t.push_back({true, gradient + i - 1, act(i - 1), false});
    t.push_back({false, bwd_ws + i, 0, false});
    t.push_back({false, gradient + i, 0, false});
    t.push_back({false, activation + i, 0, false});
  }
  t.push_back({false, gradient, 0, false});
  t.push_back({false, activation, 0, false});
  return t;
}

void BM_AllocFree(benchmark::State& state, const std::string& heuristic) {
  int ids = 0;
  const std::vector<Event> iteration = cnn_iteration(96, ids);
  std::size_t pairs = 0;
  for (const Event& e : iteration) pairs += e.alloc;
  auto allocator = tidepool::make_allocator(heuristic, std::size_t{1} << 40);
  std::vector<std::size_t> offset(static_cast<std::size_t>(ids), 0);
  for (int p = 0; p < 40; ++p)  // parameters: long-lived, below everything
    allocator->allocate({std::size_t(4096 + 512 * (p % 9)), ids + p, tidepool::Role::weight, false});
  auto run = [&] {
    for (const Event& e : iteration) {
      if (e.alloc) {
        const auto o = allocator->allocate({e.bytes, e.id, tidepool::Role::activation, e.offload});
        if (!o) {
          state.SkipWithError("allocation failed");
          return;
        }
        offset[e.id] = *o;
      } else {
        allocator->free(offset[e.id]);
      }
    }
  };
  for (int warm = 0; warm < 3; ++warm) run();  // smartpool learns the iteration here
  for (auto _ : state) run();
  // Seconds per pair (printed with an SI prefix: "54.2ns").
  state.counters["ns_per_alloc_free"] =
      benchmark::Counter(static_cast<double>(pairs) * static_cast<double>(state.iterations()),
                         benchmark::Counter::kIsRate | benchmark::Counter::kInvert);
  state.counters["pairs_per_iteration"] = static_cast<double>(pairs);
}

}  // namespace

int main(int argc, char** argv) {
  for (const std::string& name : tidepool::allocator_names())
    benchmark::RegisterBenchmark(("alloc_free/" + name).c_str(), BM_AllocFree, name)
        ->Repetitions(5)
        ->ReportAggregatesOnly(true);
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
