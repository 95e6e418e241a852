// `tidepool view snap.pickle`'s side of a snapshot: SnapshotRun's events
// are the replay loop's placements of the snapshot's trace, as a run's
// device pool reports them; choosing another heuristic re-places the trace
// and moves the version on; the address map built from its events names
// blocks by their frames and the link gives their stacks; a file that is
// no snapshot is refused with a message that says why.
#include "app/snapshot_run.h"

#include <gtest/gtest.h>

#include <atomic>
#include <filesystem>
#include <set>
#include <stdexcept>
#include <thread>
#include <vector>

#include "engine/core/file_bytes.h"
#include "engine/memory/allocator.h"
#include "engine/memory/replay.h"
#include "engine/memory/snapshot/snapshot_file.h"
#include "testing/examples.h"
#include "testing/run_command.h"
#include "testing/temp_dir.h"
#include "ui/scene/address_map.h"
#include "ui/scene/memory_load.h"

namespace tidepool::app {
namespace {

const std::string kResnet = testing::example_path("resnet_snapshot.pickle");

struct Recorder final : PoolObserver {
  std::vector<PoolEvent> events;
  void on_pool_event(const PoolEvent& e) override { events.push_back(e); }
};

// The loop's own events for the trace under `heuristic`, and its figures.
std::vector<PoolEvent> replayed(const SnapshotTrace& t, const std::string& heuristic, TraceReplay* result = nullptr) {
  Recorder rec;
  auto allocator = make_allocator(heuristic, total_alloc_bytes(t.trace));
  const TraceReplay r = replay(t.trace, *allocator, kParkUntilNeeded, &rec);
  EXPECT_TRUE(r.fits);
  if (result) *result = r;
  return rec.events;
}

void expect_events_are(const RingSnapshot& got, const std::vector<PoolEvent>& want) {
  ASSERT_EQ(got.allocs.size(), want.size());
  ASSERT_EQ(got.loads.size(), want.size());
  EXPECT_EQ(got.dropped_allocs, 0u);
  for (std::size_t i = 0; i < want.size(); ++i) {
    const AllocEvent& a = got.allocs[i];
    SCOPED_TRACE("pool event " + std::to_string(i));
    EXPECT_EQ(a.iteration, 0);
    EXPECT_EQ(a.step, want[i].event);
    EXPECT_EQ(a.action, want[i].action);
    EXPECT_EQ(a.tensor, want[i].id);
    EXPECT_EQ(a.offset, want[i].block.offset);
    EXPECT_EQ(a.bytes, want[i].block.bytes);
    EXPECT_EQ(got.loads[i].load_bytes, want[i].load_bytes);
    EXPECT_EQ(got.loads[i].extent_bytes, want[i].extent_bytes);
    EXPECT_EQ(got.loads[i].largest_free_bytes, want[i].largest_free_bytes);
  }
}

std::vector<std::size_t> offsets(const RingSnapshot& events) {
  std::vector<std::size_t> out;
  for (const AllocEvent& a : events.allocs)
    if (a.action == PoolAction::place) out.push_back(a.offset);
  return out;
}

TEST(SnapshotRun, ItsEventsAreTheReplayLoopsPlacementsByPytorch) {
  const SnapshotRun run{std::filesystem::path(kResnet)};
  const SnapshotTrace& t = run.trace();
  ASSERT_GT(t.trace.size(), 100u);
  TraceReplay r;
  const std::vector<PoolEvent> want = replayed(t, "pytorch", &r);
  const RingSnapshot got = run.events(0);
  expect_events_are(got, want);

  // One iteration: the loop's figures, as a run's summary carries them.
  ASSERT_EQ(got.iterations.size(), 1u);
  EXPECT_EQ(got.iterations[0].peak_load_bytes, r.figures.peak_load_bytes);
  EXPECT_EQ(got.iterations[0].footprint_bytes, r.figures.footprint_bytes);
  EXPECT_EQ(got.iterations[0].peak_step, r.figures.peak_event);
  EXPECT_EQ(got.iterations[0].largest_free_at_peak, r.figures.largest_free_at_peak);

  const ui::SessionStatus s = run.status();
  EXPECT_EQ(s.state, ui::RunState::snapshot);
  EXPECT_EQ(s.settings.memory.heuristic, "pytorch");
  EXPECT_EQ(s.memory.footprint_bytes, r.figures.footprint_bytes);
  EXPECT_EQ(s.memory.pool_bytes, std::max<std::size_t>(r.figures.footprint_bytes, t.peak_reserved));
  EXPECT_FALSE(run.read_only());  // the heuristic can change
  EXPECT_EQ(run.events(1).allocs.size(), 0u);  // one rank only
}

TEST(SnapshotRun, ItsJsonGivesTheSameEventsAsItsPickle) {
  const SnapshotRun pickle{std::filesystem::path(kResnet)};
  const SnapshotRun json{std::filesystem::path(testing::example_path("resnet_snapshot.json"))};
  EXPECT_EQ(json.events(0).allocs, pickle.events(0).allocs);
}

TEST(SnapshotRun, ChoosingAHeuristicReplacesTheTraceAndMovesTheVersion) {
  SnapshotRun run{std::filesystem::path(kResnet)};
  const std::uint64_t before = run.events_version(0);
  const std::vector<std::size_t> by_pytorch = offsets(run.events(0));

  MemorySettings m = run.status().settings.memory;
  m.heuristic = "first-fit";
  run.request(m);
  run.wait_idle();
  const ui::SessionStatus s = run.status();
  EXPECT_EQ(s.settings.memory.heuristic, "first-fit");
  EXPECT_EQ(s.requests, 1u);
  EXPECT_FALSE(s.refused) << s.message;
  EXPECT_FALSE(s.replanning);
  EXPECT_GT(run.events_version(0), before);
  const RingSnapshot after = run.events(0);
  EXPECT_EQ(after.version, run.events_version(0));  // what the window compares to copy again
  expect_events_are(after, replayed(run.trace(), "first-fit"));
  // first-fit packs PyTorch's per-stream, per-segment blocks otherwise.
  EXPECT_NE(offsets(after), by_pytorch);
  EXPECT_EQ(s.memory.footprint_bytes, after.iterations.at(0).footprint_bytes);
}

TEST(SnapshotRun, AnUnknownHeuristicIsRefusedAndTheEventsStay) {
  SnapshotRun run{std::filesystem::path(kResnet)};
  const std::uint64_t before = run.events_version(0);
  MemorySettings m;
  m.heuristic = "no-such-heuristic";
  run.request(m);
  run.wait_idle();
  const ui::SessionStatus s = run.status();
  EXPECT_TRUE(s.refused);
  EXPECT_NE(s.message.find("no heuristic named no-such-heuristic"), std::string::npos) << s.message;
  EXPECT_EQ(s.settings.memory.heuristic, "pytorch");
  EXPECT_EQ(run.events_version(0), before);
  EXPECT_THROW(SnapshotRun(std::filesystem::path(kResnet), std::nullopt, "no-such-heuristic"), std::invalid_argument);
}

// The window reads the link from its thread while the link re-places on
// its own: each copy is one whole placement (TSan checks the rest).
TEST(SnapshotRun, ReadsWhileReplacingSeeWholePlacements) {
  SnapshotRun run{std::filesystem::path(kResnet)};
  const std::size_t events = run.events(0).allocs.size();
  std::atomic<bool> done{false};
  std::thread reader([&] {
    while (!done.load()) {
      const RingSnapshot e = run.events(0);
      const ui::SessionStatus s = run.status();
      EXPECT_EQ(e.iterations.size(), 1u);
      EXPECT_GE(e.allocs.size(), events / 2);
      EXPECT_FALSE(s.settings.memory.heuristic.empty());
    }
  });
  MemorySettings m;
  for (const char* h : {"best-fit", "cnmem", "pytorch", "smartpool"}) {
    m.heuristic = h;
    run.request(m);
  }
  run.wait_idle();
  done = true;
  reader.join();
  EXPECT_EQ(run.status().settings.memory.heuristic, "smartpool");  // the last asked for is the one placed
  expect_events_are(run.events(0), replayed(run.trace(), "smartpool"));
}

TEST(SnapshotRun, TheAddressMapNamesBlocksByTheirFramesAndTheLinkGivesTheStacks) {
  const SnapshotRun run{std::filesystem::path(kResnet)};
  const ui::AddressMapScene map = ui::build_address_map(run.events(0), run.status().memory.pool_bytes);
  ASSERT_FALSE(map.empty());
  EXPECT_EQ(map.steps, static_cast<int>(run.trace().trace.size()));
  std::set<std::string> names;
  for (const ui::MapBlock& b : map.blocks) names.insert(b.name);
  // The example's forward activations, its optimiser's momenta and its
  // batches, by their innermost user frames (examples/make_snapshots.py).
  EXPECT_TRUE(names.count("model.py:70:forward")) << ::testing::PrintToString(names);
  EXPECT_TRUE(names.count("train.py:80:make_optimizer")) << ::testing::PrintToString(names);
  EXPECT_TRUE(names.count("data.py:58:prefetch")) << ::testing::PrintToString(names);

  for (const ui::MapBlock& b : map.blocks) {
    if (b.name != "model.py:70:forward") continue;
    const std::string stack = run.block_stack(b.tensor);
    // Innermost first: PyTorch's frames, then the user's, out to runpy.
    EXPECT_NE(stack.find("/home/user/model.py:70 forward"), std::string::npos) << stack;
    EXPECT_LT(stack.find("nn/modules/conv.py"), stack.find("/home/user/model.py:70"));
    EXPECT_LT(stack.find("/home/user/train.py:96 train_step"), stack.find("/usr/lib/python3.11/runpy.py:88 _run_code"));
    break;
  }
  EXPECT_EQ(run.block_stack(-5), "");

  const ui::MemoryLoadScene load = ui::build_memory_load(run.events(0), run.status().memory.pool_bytes, 3, 0);
  EXPECT_EQ(load.points.size(), run.events(0).loads.size());
  EXPECT_EQ(load.peak_load_bytes, run.events(0).iterations.at(0).peak_load_bytes);
}

TEST(SnapshotRun, AFileThatIsNoSnapshotIsRefused) {
  const testing::TempDir dir{"snapshot-run"};
  const auto refusal = [](const std::filesystem::path& p, std::optional<int> device = std::nullopt) -> std::string {
    try {
      SnapshotRun run(p, device);
    } catch (const std::invalid_argument& e) {
      return e.what();
    }
    return "";
  };
  const std::filesystem::path csv = dir / "trace.csv", broken = dir / "broken.pickle";
  testing::write_text(csv, "event,id,bytes\nalloc,0,512\n");
  const std::string bytes = read_file_bytes(kResnet, "snapshot");
  testing::write_text(broken, bytes.substr(0, bytes.size() / 2));
  EXPECT_NE(refusal(csv).find(csv.string() + " is not a PyTorch memory snapshot"), std::string::npos) << refusal(csv);
  EXPECT_NE(refusal(broken).find(broken.string()), std::string::npos) << refusal(broken);
  EXPECT_NE(refusal(dir / "missing.pickle").find("missing.pickle"), std::string::npos);
  EXPECT_NE(refusal(kResnet, 7).find("device"), std::string::npos) << refusal(kResnet, 7);
}

// Refused before any window opens, so no display is needed: a clear
// message and status 1.
TEST(ViewCommand, ASnapshotItCannotReadIsRefusedWithItsReason) {
  const testing::TempDir dir{"view-snapshot"};
  const std::filesystem::path broken = dir / "broken.pickle";
  testing::write_text(broken, std::string("\x80\x04\x95", 3) + "garbage");
  const testing::CommandResult r =
      testing::run_command("env -u DISPLAY " + std::string(TIDEPOOL_BINARY) + " view " + broken.string());
  EXPECT_EQ(r.status, 1) << r.output;
  EXPECT_NE(r.output.find("tidepool: error: " + broken.string()), std::string::npos) << r.output;
  const testing::CommandResult device = testing::run_command("env -u DISPLAY " + std::string(TIDEPOOL_BINARY) +
                                                             " view " + kResnet + " --device-index 9");
  EXPECT_EQ(device.status, 1) << device.output;
  EXPECT_NE(device.output.find("device"), std::string::npos) << device.output;
}

}  // namespace
}  // namespace tidepool::app
