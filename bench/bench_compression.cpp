// Zero-value compression of offloaded tensors (what a transfer stream does
// between its copy and its staging slot), against a plain memcpy of the
// same bytes: GB/s of the tensor as offloaded, by the fraction of non-zero
// values and the threads per tensor (vDNN++ Fig. 10 measures the same for
// AlexNet's activations). At 90% the store measures the tensor dense once
// and then keeps it as it is, which is what the figure shows.
//
//   build/bench/bench_compression
#include <benchmark/benchmark.h>

#include <cstring>
#include <random>
#include <vector>

#include "engine/run/zero_value_store.h"

namespace tidepool {
namespace {

constexpr std::size_t kValues = std::size_t{8} << 20 >> 2;  // an 8 MiB activation

std::vector<float> activation(double density) {
  std::mt19937 rng(1);
  std::uniform_real_distribution<double> u(0, 1);
  std::vector<float> v(kValues, 0.0f);
  for (float& x : v)
    if (u(rng) < density) x = static_cast<float>(u(rng)) + 0.01f;
  return v;
}

void set_rate(benchmark::State& state) {
  state.counters["GB/s"] = benchmark::Counter(static_cast<double>(kValues * sizeof(float)) * 1e-9,
                                              benchmark::Counter::kIsIterationInvariantRate);
}

void compress(benchmark::State& state) {
  const std::vector<float> in = activation(static_cast<double>(state.range(0)) / 100);
  ZeroValueStore store(static_cast<int>(state.range(1)));
  store.resize(1);
  for (auto _ : state) {
    store.compress(0, in.data(), in.size());
    benchmark::ClobberMemory();
  }
  set_rate(state);
  state.counters["stored"] = static_cast<double>(store.stored_bytes(0)) / static_cast<double>(kValues * 4);
}

void decompress(benchmark::State& state) {
  const std::vector<float> in = activation(static_cast<double>(state.range(0)) / 100);
  std::vector<float> out(in.size());
  ZeroValueStore store(static_cast<int>(state.range(1)));
  store.resize(1);
  store.compress(0, in.data(), in.size());
  for (auto _ : state) {
    store.decompress(0, out.data());
    benchmark::ClobberMemory();
  }
  set_rate(state);
}

void copy(benchmark::State& state) {
  const std::vector<float> in = activation(0.5);
  std::vector<float> out(in.size());
  for (auto _ : state) {
    std::memcpy(out.data(), in.data(), in.size() * sizeof(float));
    benchmark::ClobberMemory();
  }
  set_rate(state);
}

void shapes(benchmark::internal::Benchmark* b) {
  b->ArgNames({"density%", "threads"})->Unit(benchmark::kMillisecond)->UseRealTime();
  for (int threads : {1, 2, 4})
    for (int density : {10, 50, 90}) b->Args({density, threads});
}

BENCHMARK(compress)->Name("zvc/compress")->Apply(shapes);
BENCHMARK(decompress)->Name("zvc/decompress")->Apply(shapes);
BENCHMARK(copy)->Name("zvc/memcpy")->Unit(benchmark::kMillisecond)->UseRealTime();

}  // namespace
}  // namespace tidepool

BENCHMARK_MAIN();
