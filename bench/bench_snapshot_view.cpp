// `tidepool view` on a big PyTorch snapshot: is a 10^6-event trace still
// interactive? What the window does with one, step by step:
//   load      read the pickle, make the trace, place it by pytorch through
//             the replay loop into the ring (SnapshotRun's constructor:
//             what happens before the window opens)
//   replace   the heuristic chooser: the trace placed again by another
//             heuristic (request, then wait for the link's thread)
//   copy      the dashboard's copy of the events when their version moves
//   map_scene, load_scene   the address map's and the load curves' scenes
//             built from that copy (once per new placement, not per frame)
//   map_draw, load_draw     the pictures drawn from the scenes into a
//             painter that only counts, working out afresh what they
//             take from every block and sample (the merged columns, the
//             load envelopes, the highest address): what a frame costs
//             after a new placement or a resize
//   map_frame, load_frame   the same drawn again with the cache the views
//             keep (paint::AddressMapCache, MemoryLoadCache): every other
//             frame, the CPU side of it less ImGui's vertices (`tidepool
//             view FILE --screenshot x.png --frames N` under Xvfb gives the
//             real frame rate)
//
//   python3 examples/make_snapshots.py --big 1000000 /tmp/big_snapshot.pickle
//   build/bench/bench_snapshot_view --snapshot /tmp/big_snapshot.pickle
//
// Without --snapshot it writes that file itself (python3, about a minute).
// Figures: docs/memory.md#viewing-a-pytorch-snapshot.
#include <benchmark/benchmark.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <memory>
#include <string>

#include "app/snapshot_run.h"
#include "ui/paint/address_map_picture.h"
#include "ui/paint/memory_load_picture.h"
#include "ui/scene/address_map.h"
#include "ui/scene/memory_load.h"

namespace tidepool {
namespace {

std::string g_snapshot;
std::unique_ptr<app::SnapshotRun> g_run;

app::SnapshotRun& loaded() {
  if (!g_run) g_run = std::make_unique<app::SnapshotRun>(std::filesystem::path(g_snapshot));
  return *g_run;
}

// Counts what a picture asks for and draws nothing: the cost of deciding
// what to draw, which the window pays every frame.
class CountingPainter final : public ui::paint::Painter {
 public:
  std::size_t calls = 0;
  void fill_rect(const ui::paint::Box&, ui::paint::Colour) override { ++calls; }
  void line(ui::paint::Point, ui::paint::Point, ui::paint::Colour, float) override { ++calls; }
  void polyline(std::span<const ui::paint::Point> points, ui::paint::Colour, float) override { calls += points.size(); }
  void fill_convex(std::span<const ui::paint::Point>, ui::paint::Colour) override { ++calls; }
  ui::paint::Point text_size(std::string_view text, ui::paint::TextSize) const override {
    return {7.0f * static_cast<float>(text.size()), 13.0f};  // ImGui's default font, near enough
  }
  void text(ui::paint::Point, std::string_view, ui::paint::Colour, ui::paint::TextSize, ui::paint::HAlign,
            ui::paint::VAlign) override {
    ++calls;
  }
  void push_clip(const ui::paint::Box&) override {}
  void pop_clip() override {}
};

// The window's address map and load views at 1600x900 (ui/layout.cpp).
constexpr ui::paint::Box kMapArea{0, 0, 1000, 420}, kLoadArea{0, 0, 1000, 300};

void counters(benchmark::State& state) {
  const app::SnapshotRun& run = loaded();
  state.counters["events"] = static_cast<double>(run.trace().trace.size());
  state.counters["entries"] = static_cast<double>(run.trace().entries);
}

void BM_Load(benchmark::State& state) {
  for (auto _ : state) {
    app::SnapshotRun run{std::filesystem::path(g_snapshot)};
    benchmark::DoNotOptimize(run.events_version(0));
  }
  counters(state);
}
BENCHMARK(BM_Load)->Unit(benchmark::kMillisecond)->Iterations(2);

void BM_Replace(benchmark::State& state) {
  app::SnapshotRun& run = loaded();
  MemorySettings m = run.status().settings.memory;
  bool best_fit = true;
  for (auto _ : state) {
    m.heuristic = best_fit ? "best-fit" : "pytorch";
    best_fit = !best_fit;
    run.request(m);
    run.wait_idle();
  }
  if (run.status().settings.memory.heuristic != "pytorch") {  // leave it placed by pytorch for what follows
    m.heuristic = "pytorch";
    run.request(m);
    run.wait_idle();
  }
  counters(state);
}
BENCHMARK(BM_Replace)->Unit(benchmark::kMillisecond)->Iterations(2);

void BM_CopyEvents(benchmark::State& state) {
  const app::SnapshotRun& run = loaded();
  for (auto _ : state) benchmark::DoNotOptimize(run.events(0).allocs.size());
  counters(state);
}
BENCHMARK(BM_CopyEvents)->Unit(benchmark::kMillisecond);

void BM_AddressMapScene(benchmark::State& state) {
  const app::SnapshotRun& run = loaded();
  const RingSnapshot events = run.events(0);
  for (auto _ : state)
    benchmark::DoNotOptimize(ui::build_address_map(events, run.status().memory.pool_bytes).blocks.size());
  counters(state);
}
BENCHMARK(BM_AddressMapScene)->Unit(benchmark::kMillisecond);

void BM_MemoryLoadScene(benchmark::State& state) {
  const app::SnapshotRun& run = loaded();
  const RingSnapshot events = run.events(0);
  for (auto _ : state)
    benchmark::DoNotOptimize(ui::build_memory_load(events, run.status().memory.pool_bytes, 3, 0).points.size());
  counters(state);
}
BENCHMARK(BM_MemoryLoadScene)->Unit(benchmark::kMillisecond);

void BM_AddressMapDraw(benchmark::State& state) {
  const app::SnapshotRun& run = loaded();
  const ui::AddressMapScene map = ui::build_address_map(run.events(0), run.status().memory.pool_bytes);
  CountingPainter p;
  for (auto _ : state) ui::paint::draw_address_map(p, map, kMapArea, {map.peak_step});
  state.counters["calls_per_frame"] = static_cast<double>(p.calls) / static_cast<double>(state.iterations());
  counters(state);
}
BENCHMARK(BM_AddressMapDraw)->Unit(benchmark::kMillisecond);

void BM_MemoryLoadDraw(benchmark::State& state) {
  const app::SnapshotRun& run = loaded();
  const ui::MemoryLoadScene load = ui::build_memory_load(run.events(0), run.status().memory.pool_bytes, 3, 0);
  CountingPainter p;
  for (auto _ : state) ui::paint::draw_memory_load(p, load, kLoadArea);
  state.counters["calls_per_frame"] = static_cast<double>(p.calls) / static_cast<double>(state.iterations());
  counters(state);
}
BENCHMARK(BM_MemoryLoadDraw)->Unit(benchmark::kMillisecond);

// A frame like the window's: the view's cache kept from the frame before.
void BM_AddressMapFrame(benchmark::State& state) {
  const app::SnapshotRun& run = loaded();
  const ui::AddressMapScene map = ui::build_address_map(run.events(0), run.status().memory.pool_bytes);
  ui::paint::AddressMapCache cache;
  CountingPainter p;
  ui::paint::draw_address_map(p, map, kMapArea, {map.peak_step}, &cache);  // the first frame fills it
  p.calls = 0;
  for (auto _ : state) ui::paint::draw_address_map(p, map, kMapArea, {map.peak_step}, &cache);
  state.counters["calls_per_frame"] = static_cast<double>(p.calls) / static_cast<double>(state.iterations());
  counters(state);
}
BENCHMARK(BM_AddressMapFrame)->Unit(benchmark::kMillisecond);

void BM_MemoryLoadFrame(benchmark::State& state) {
  const app::SnapshotRun& run = loaded();
  const ui::MemoryLoadScene load = ui::build_memory_load(run.events(0), run.status().memory.pool_bytes, 3, 0);
  ui::paint::MemoryLoadCache cache;
  CountingPainter p;
  ui::paint::draw_memory_load(p, load, kLoadArea, {}, &cache);
  p.calls = 0;
  for (auto _ : state) ui::paint::draw_memory_load(p, load, kLoadArea, {}, &cache);
  state.counters["calls_per_frame"] = static_cast<double>(p.calls) / static_cast<double>(state.iterations());
  counters(state);
}
BENCHMARK(BM_MemoryLoadFrame)->Unit(benchmark::kMillisecond);

}  // namespace
}  // namespace tidepool

int main(int argc, char** argv) {
  // --snapshot FILE is ours; the rest are Google Benchmark's.
  int kept = 1;
  for (int i = 1; i < argc; ++i) {
    if (std::strcmp(argv[i], "--snapshot") == 0 && i + 1 < argc) tidepool::g_snapshot = argv[++i];
    else argv[kept++] = argv[i];
  }
  argc = kept;
  if (tidepool::g_snapshot.empty()) {
    tidepool::g_snapshot = (std::filesystem::temp_directory_path() / "tidepool_big_snapshot.pickle").string();
    if (!std::filesystem::exists(tidepool::g_snapshot)) {
      const std::string make = "python3 " TIDEPOOL_SOURCE_DIR "/examples/make_snapshots.py --big 1000000 " +
                               tidepool::g_snapshot;
      std::printf("writing a 10^6-event snapshot: %s\n", make.c_str());
      if (std::system(make.c_str()) != 0) {
        std::fprintf(stderr, "bench_snapshot_view: could not write %s\n", tidepool::g_snapshot.c_str());
        return 1;
      }
    }
  }
  benchmark::Initialize(&argc, argv);
  benchmark::RunSpecifiedBenchmarks();
  tidepool::g_run.reset();
  benchmark::Shutdown();
  return 0;
}
