// How long planning takes: `tidepool plan` and the window's re-plan at an
// iteration boundary both wait for it.
//  - row/<model>/<heuristic>/<mode>: one plan_memory, one row of the plan
//    table (scheme p, prefetch-first: the row with the most blocks);
//  - table/<model>: the whole table `tidepool plan` prints for the run
//    (every mode, scheme, order and heuristic: 168 rows).
//  - slowest_row/<model>: every row of that table planned on its own,
//    each after the replay memo and SmartPool's kept layouts are emptied
//    (as the first row a process plans); the counters give the slowest
//    (slowest_ms; the label names it) and how many took 100 ms or more.
//  - again/<model>/<heuristic>/<mode>: the same row planned a second time,
//    as the window does when a setting is switched back: answered from the
//    replays the process has kept (engine/memory/replay_memo.h).
// Planned for this machine's cpu device, as `tidepool plan` without
// --profile does (its oneDNN queries are cached after the first call, which
// the first row pays). Each is planned once, after the replay memo is
// emptied, so that rows and tables time planning, not lookups (SmartPool's
// last layouts, engine/memory/allocators/smartpool.cpp, are kept too, but
// only the last few). Target (issue 37): every row under 100 ms,
// resnet152's table under 3 s.
//
//   build/bench/bench_plan --benchmark_filter='row/resnet152' [--benchmark_min_time=0.1]
//   build/bench/bench_plan --benchmark_filter='slowest_row/resnet152'   (about 5 s)
#include <benchmark/benchmark.h>

#include <chrono>
#include <memory>
#include <string>
#include <vector>

#include "app/commands/plan_command.h"
#include "app/model_shapes.h"
#include "engine/device/cpu/cpu_queries.h"
#include "engine/memory/allocator.h"
#include "engine/memory/replay_memo.h"
#include "engine/plan/memory_plan.h"

namespace tidepool {
namespace {

struct Workload {
  const char* model;
  const char* dataset;
  std::int64_t batch;
};

constexpr Workload kWorkloads[] = {{"resnet20", "cifar10", 128},
                                   {"resnet18", "cifar10", 128},
                                   {"resnet50", "imagenet", 32},
                                   {"resnet152", "imagenet", 32},
                                   {"vgg16", "imagenet", 64}};

const KernelQueries& queries() {
  static const std::unique_ptr<KernelQueries> q = make_cpu_queries();
  return *q;
}

MemorySettings row_settings(const std::string& heuristic, OffloadMode mode) {
  MemorySettings settings;
  settings.mode = mode;
  settings.heuristic = heuristic;
  settings.scheme = ConvScheme::p;
  settings.order = AllocOrder::prefetch_first;
  return settings;
}

void row(benchmark::State& state, Workload w, std::string heuristic, OffloadMode mode) {
  const Network net = app::model_for_dataset(w.model, w.dataset);
  const MemorySettings settings = row_settings(heuristic, mode);
  forget_replays();
  for (auto _ : state) benchmark::DoNotOptimize(plan_memory(net, w.batch, settings, queries()));
}

void again(benchmark::State& state, Workload w, std::string heuristic, OffloadMode mode) {
  const Network net = app::model_for_dataset(w.model, w.dataset);
  const MemorySettings settings = row_settings(heuristic, mode);
  forget_replays();
  benchmark::DoNotOptimize(plan_memory(net, w.batch, settings, queries()));
  for (auto _ : state) benchmark::DoNotOptimize(plan_memory(net, w.batch, settings, queries()));
}

void table(benchmark::State& state, Workload w) {
  const Network net = app::model_for_dataset(w.model, w.dataset);
  forget_replays();
  std::size_t rows = 0;
  for (auto _ : state) {
    const std::vector<app::PlanRow> planned = app::plan_table(net, w.batch, queries(), allocator_names());
    rows = planned.size();
  }
  state.counters["rows"] = static_cast<double>(rows);
}

void slowest_row(benchmark::State& state, Workload w) {
  const Network net = app::model_for_dataset(w.model, w.dataset);
  const std::vector<app::PlanRow> rows = app::plan_table(net, w.batch, queries(), allocator_names());
  double slowest_ms = 0;
  int over = 0;
  std::string name;
  for (auto _ : state)
    for (const app::PlanRow& r : rows) {
      if (!r.fits()) continue;  // refused: nothing to plan
      forget_replays();
      forget_smartpool_layouts();
      const auto start = std::chrono::steady_clock::now();
      benchmark::DoNotOptimize(plan_memory(net, w.batch, r.settings, queries()));
      const double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
      over += ms >= 100;
      if (ms > slowest_ms) {
        slowest_ms = ms;
        name = r.settings.heuristic + " " + to_string(r.settings.mode) + " " + to_string(r.settings.scheme) + " " +
               to_string(r.settings.order);
      }
    }
  state.counters["rows"] = static_cast<double>(rows.size());
  state.counters["slowest_ms"] = slowest_ms;
  state.counters["over_100ms"] = over;
  state.SetLabel(name);
}

// The tables first, each of a network not planned before in the process.
void register_all() {
  for (const Workload& w : kWorkloads)
    benchmark::RegisterBenchmark(("table/" + std::string(w.model)).c_str(), table, w)
        ->Unit(benchmark::kSecond)
        ->Iterations(1);
  for (const Workload& w : kWorkloads)
    benchmark::RegisterBenchmark(("slowest_row/" + std::string(w.model)).c_str(), slowest_row, w)
        ->Unit(benchmark::kSecond)
        ->Iterations(1);
  for (const Workload& w : kWorkloads)
    for (const std::string& h : allocator_names())
      for (OffloadMode mode : {OffloadMode::base, OffloadMode::all, OffloadMode::conv, OffloadMode::aconv})
        for (const auto& [name, time] : {std::pair<std::string, decltype(&row)>{"row/", &row}, {"again/", &again}})
          benchmark::RegisterBenchmark((name + w.model + "/" + h + "/" + to_string(mode)).c_str(), time, w, h, mode)
              ->Unit(benchmark::kMillisecond)
              ->Iterations(1);
}

}  // namespace
}  // namespace tidepool

int main(int argc, char** argv) {
  tidepool::register_all();
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
