// The background batch loader, on a synthetic dataset whose samples say
// which index and which random draw produced them.
#include "datasets/loader.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstring>
#include <memory>
#include <mutex>
#include <numeric>
#include <set>
#include <thread>
#include <vector>

namespace tidepool::datasets {
namespace {

// Sample i: pixel 0 = i, pixel 1 = a draw from the rng (the "augmentation"),
// pixels 2, 3 = i * 2, i * 3; label i % 7. Indices in `bad` fail to decode
// (like a corrupt JPEG), `throw_at` throws, and `delay_us` makes each read slow
// so that workers are caught mid-chunk.
class IndexDataset final : public Dataset {
 public:
  explicit IndexDataset(std::int64_t n) : n_(n) {}

  std::string name() const override { return "index"; }
  Split split() const override { return Split::train; }
  std::int64_t size() const override { return n_; }
  ImageShape image_shape() const override { return {1, 2, 2}; }
  std::int64_t classes() const override { return 7; }
  Normalization normalization() const override { return {}; }
  bool augments() const override { return true; }
  std::int32_t label(std::int64_t i) const override { return static_cast<std::int32_t>(i % 7); }
  bool read(std::int64_t i, float* image, std::int32_t& label, Rng& rng) const override {
    started_.fetch_add(1);
    const struct Finished {
      std::atomic<std::int64_t>& count;
      ~Finished() { count.fetch_add(1); }
    } finished{finished_};
    if (gate_from >= 0 && i >= gate_from) hold();
    if (delay_us > 0) std::this_thread::sleep_for(std::chrono::microseconds(delay_us));
    if (i == throw_at) throw DatasetError("index: cannot read sample " + std::to_string(i));
    label = this->label(i);
    if (std::find(bad.begin(), bad.end(), i) != bad.end()) {
      skipped_.fetch_add(1);
      return false;
    }
    image[0] = static_cast<float>(i);
    image[1] = static_cast<float>(rng.below(1000000));
    image[2] = static_cast<float>(i * 2);
    image[3] = static_cast<float>(i * 3);
    return true;
  }
  std::int64_t skipped() const override { return skipped_.load(); }

  // Reads begun and reads returned (or thrown out of), counted by the
  // dataset itself: what a test checks instead of how long something took.
  std::int64_t reads_started() const { return started_.load(); }
  std::int64_t reads_finished() const { return finished_.load(); }
  // Reads of indices from `gate_from` on (-1: none) wait until open_gate():
  // the way a test holds workers inside their chunks at a known point.
  void open_gate() {
    {
      std::lock_guard lock(gate_mutex_);
      gate_open_ = true;
    }
    gate_cv_.notify_all();
  }
  // Waits until `n` reads are held at the gate.
  void wait_until_held(int n) const {
    std::unique_lock lock(gate_mutex_);
    gate_cv_.wait(lock, [&] { return held_ >= n; });
  }

  std::vector<std::int64_t> bad;
  std::atomic<std::int64_t> throw_at{-1};  // atomic: changed while stale workers may still read
  int delay_us = 0;
  std::int64_t gate_from = -1;

 private:
  void hold() const {
    std::unique_lock lock(gate_mutex_);
    ++held_;
    gate_cv_.notify_all();
    gate_cv_.wait(lock, [&] { return gate_open_; });
  }

  std::int64_t n_;
  mutable std::atomic<std::int64_t> skipped_{0};
  mutable std::atomic<std::int64_t> started_{0}, finished_{0};
  mutable std::mutex gate_mutex_;
  mutable std::condition_variable gate_cv_;
  mutable int held_ = 0;
  bool gate_open_ = false;
};

struct Delivered {
  std::vector<std::int64_t> samples;  // in delivery order
  std::vector<std::int64_t> sizes;    // per batch
  std::vector<float> images;
  std::vector<std::int32_t> labels;
};

Delivered run_epoch(BatchLoader& loader, std::int64_t epoch) {
  Delivered d;
  loader.start_epoch(epoch);
  while (auto b = loader.next()) {
    EXPECT_EQ(b->epoch, epoch);
    EXPECT_EQ(b->index, static_cast<std::int64_t>(d.sizes.size()));
    d.sizes.push_back(b->size);
    d.samples.insert(d.samples.end(), b->samples.begin(), b->samples.end());
    d.images.insert(d.images.end(), b->images, b->images + b->size * 4);
    d.labels.insert(d.labels.end(), b->labels, b->labels + b->size);
  }
  EXPECT_FALSE(loader.next().has_value());  // stays at the end
  return d;
}

struct Harness {
  Harness(const Dataset& d, LoaderOptions opt)
      : memory(BatchLoader::required_bytes(d, opt)), loader(d, memory, opt) {}
  std::vector<std::byte> memory;
  BatchLoader loader;
};

LoaderOptions options(std::int64_t batch, bool train, std::uint64_t seed = 11, int workers = 3, int depth = 3) {
  LoaderOptions o = train ? LoaderOptions::training(batch, seed) : LoaderOptions::evaluation(batch);
  o.workers = workers;
  o.depth = depth;
  return o;
}

TEST(BatchLoader, TrainingDeliversEveryIndexOnceShuffledInFullBatches) {
  IndexDataset data(103);
  Harness h(data, options(8, true));
  EXPECT_EQ(h.loader.batches_per_epoch(), 12);
  const Delivered d = run_epoch(h.loader, 0);
  ASSERT_EQ(d.sizes.size(), 12u);
  for (auto s : d.sizes) EXPECT_EQ(s, 8);
  std::set<std::int64_t> unique(d.samples.begin(), d.samples.end());
  EXPECT_EQ(unique.size(), 96u);  // drop_last: 7 samples wait for another epoch
  EXPECT_FALSE(std::is_sorted(d.samples.begin(), d.samples.end()));
  for (std::size_t k = 0; k < d.samples.size(); ++k) {
    EXPECT_EQ(d.images[k * 4], static_cast<float>(d.samples[k]));
    EXPECT_EQ(d.images[k * 4 + 3], static_cast<float>(d.samples[k] * 3));
    EXPECT_EQ(d.labels[k], d.samples[k] % 7);
  }
}

// Data-parallel: shard r of 3 delivers part r of each global batch; the
// parts are the batches one loader of the global size delivers, images
// (augmentation included) and all.
TEST(BatchLoader, ShardsSplitEachGlobalBatchIntoDisjointParts) {
  IndexDataset data(103);
  Harness whole(data, options(12, true));
  const Delivered all = run_epoch(whole.loader, 2);
  std::vector<Delivered> parts;
  for (int r = 0; r < 3; ++r) {
    LoaderOptions o = options(4, true);
    o.shard = r;
    o.shards = 3;
    Harness h(data, o);
    EXPECT_EQ(h.loader.batches_per_epoch(), whole.loader.batches_per_epoch());
    parts.push_back(run_epoch(h.loader, 2));
  }
  for (std::size_t g = 0; g < all.sizes.size(); ++g)
    for (std::size_t r = 0; r < 3; ++r)
      for (std::size_t j = 0; j < 4; ++j) {
        const std::size_t k = g * 12 + r * 4 + j, mine = g * 4 + j;
        EXPECT_EQ(parts[r].samples[mine], all.samples[k]);
        EXPECT_EQ(parts[r].images[mine * 4 + 1], all.images[k * 4 + 1]) << "the same augmentation";
      }
}

// Evaluation: the last, partial global batch (103 = 8 * 12 + 7) is split
// as the others, so shard 1 ends short and shard 2 a batch early; every
// sample is scored once.
TEST(BatchLoader, EvaluationShardsScoreEverySampleOnce) {
  IndexDataset data(103);
  std::vector<std::int64_t> seen;
  const std::vector<std::int64_t> last_sizes = {4, 3, 4};
  const std::vector<std::int64_t> batches = {9, 9, 8};
  for (int r = 0; r < 3; ++r) {
    LoaderOptions o = options(4, false);
    o.shard = r;
    o.shards = 3;
    Harness h(data, o);
    const Delivered d = run_epoch(h.loader, 0);
    EXPECT_EQ(static_cast<std::int64_t>(d.sizes.size()), batches[static_cast<std::size_t>(r)]);
    EXPECT_EQ(d.sizes.back(), last_sizes[static_cast<std::size_t>(r)]);
    seen.insert(seen.end(), d.samples.begin(), d.samples.end());
  }
  std::sort(seen.begin(), seen.end());
  std::vector<std::int64_t> expected(103);
  std::iota(expected.begin(), expected.end(), 0);
  EXPECT_EQ(seen, expected);
}

TEST(BatchLoader, RefusesAShardThatDoesNotExist) {
  IndexDataset data(10);
  LoaderOptions o = options(2, true);
  o.shard = 2;
  o.shards = 2;
  std::vector<std::byte> memory(BatchLoader::required_bytes(data, o));
  EXPECT_THROW(BatchLoader(data, memory, o), std::invalid_argument);
}

TEST(BatchLoader, EvaluationDeliversAllInOrderWithAPartialLastBatch) {
  IndexDataset data(103);
  Harness h(data, options(8, false));
  const Delivered d = run_epoch(h.loader, 0);
  ASSERT_EQ(d.sizes.size(), 13u);
  EXPECT_EQ(d.sizes.back(), 7);
  std::vector<std::int64_t> expected(103);
  std::iota(expected.begin(), expected.end(), 0);
  EXPECT_EQ(d.samples, expected);
}

TEST(BatchLoader, SameSeedSameBatchesWhateverTheThreads) {
  IndexDataset data(200);
  data.delay_us = 5;  // let the workers interleave
  Harness one(data, options(16, true, 5, 1, 2));
  Harness many(data, options(16, true, 5, 4, 4));
  const Delivered a = run_epoch(one.loader, 3);
  const Delivered b = run_epoch(many.loader, 3);
  EXPECT_EQ(a.samples, b.samples);
  EXPECT_EQ(a.images, b.images);  // includes the per-sample random draw
  EXPECT_EQ(a.labels, b.labels);
  // Rerunning an epoch repeats it.
  EXPECT_EQ(run_epoch(many.loader, 3).images, a.images);
}

TEST(BatchLoader, EpochsAndSeedsChangeTheOrderAndTheDraws) {
  IndexDataset data(200);
  Harness h(data, options(20, true, 5));
  Harness other_seed(data, options(20, true, 6));
  const Delivered e0 = run_epoch(h.loader, 0);
  const Delivered e1 = run_epoch(h.loader, 1);
  EXPECT_NE(e0.samples, e1.samples);
  EXPECT_NE(run_epoch(other_seed.loader, 0).samples, e0.samples);
  // The same sample gets a different augmentation draw in another epoch.
  auto draw_of = [](const Delivered& d, std::int64_t index) {
    for (std::size_t k = 0; k < d.samples.size(); ++k)
      if (d.samples[k] == index) return d.images[k * 4 + 1];
    return -1.0f;
  };
  int same = 0;
  for (std::int64_t i = 0; i < 200; ++i) same += draw_of(e0, i) == draw_of(e1, i);
  EXPECT_LT(same, 5);
}

TEST(BatchLoader, HeldBatchIsNotOverwrittenUntilReleased) {
  IndexDataset data(64);
  Harness h(data, options(4, false, 0, 2, 2));
  h.loader.start_epoch(0);
  auto first = h.loader.next();
  ASSERT_TRUE(first.has_value());
  const std::vector<float> copy(first->images, first->images + 16);
  // With two slots the workers fill batch 1 and then must wait for batch 0's
  // slot; give them time to do something wrong.
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  EXPECT_EQ(std::vector<float>(first->images, first->images + 16), copy);
  h.loader.release();
  auto second = h.loader.next();
  ASSERT_TRUE(second.has_value());
  EXPECT_EQ(second->images[0], 4.0f);
  auto third = h.loader.next();  // back in slot 0
  ASSERT_TRUE(third.has_value());
  EXPECT_EQ(third->slot, first->slot);
  EXPECT_EQ(third->images[0], 8.0f);
}

// Destroyed with every worker inside a chunk and batches queued, the loader
// stops: its destructor returns (a loader that waited for the epoch would
// never return, and ctest's timeout would fail the test), every read that
// began has ended (the workers were joined, none is left reading), and no
// worker read past the batches its slots could hold.
TEST(BatchLoader, ShutsDownCleanlyMidEpoch) {
  constexpr int kWorkers = 4, kDepth = 4;
  constexpr std::int64_t kBatch = 64;
  IndexDataset data(5000);
  data.delay_us = 50;       // a worker the gate lets go is still mid-chunk when the loader stops
  data.gate_from = 2 * kBatch;  // dataset order: batches 0 and 1 read freely, later reads wait
  LoaderOptions o = options(kBatch, true, 1, kWorkers, kDepth);
  o.shuffle = false;
  auto h = std::make_unique<Harness>(data, o);
  h->loader.start_epoch(0);
  ASSERT_TRUE(h->loader.next().has_value());
  ASSERT_TRUE(h->loader.next().has_value());  // releases batch 0: batches 2 to 4 may be filled
  data.wait_until_held(kWorkers);             // each worker has taken a chunk and is reading it
  data.open_gate();
  h.reset();
  EXPECT_EQ(data.reads_finished(), data.reads_started()) << "a worker still reading after the loader was destroyed";
  EXPECT_LE(data.reads_started(), (1 + kDepth) * kBatch) << "workers read past the slots they could fill";
  EXPECT_GE(data.reads_started(), 2 * kBatch + kWorkers);
  {
    Harness never_started(data, options(kBatch, true));
  }
  EXPECT_EQ(data.reads_finished(), data.reads_started());
}

TEST(BatchLoader, RestartingAnEpochMidwayStartsClean) {
  IndexDataset data(300);
  data.delay_us = 10;
  Harness h(data, options(10, true, 9));
  const Delivered full = run_epoch(h.loader, 2);
  h.loader.start_epoch(1);
  for (int i = 0; i < 3; ++i) ASSERT_TRUE(h.loader.next().has_value());
  EXPECT_EQ(run_epoch(h.loader, 2).images, full.images);
}

// A run resumed mid-epoch starts the loader at the checkpoint's batch: it
// must get what the uninterrupted epoch delivered from there, in the same
// slots, whatever the depth.
TEST(BatchLoader, StartingAtABatchDeliversTheRestOfTheUninterruptedEpoch) {
  IndexDataset data(130);
  data.delay_us = 10;
  Harness h(data, options(10, true, 4, 3, 3));
  const Delivered full = run_epoch(h.loader, 5);
  for (std::int64_t first : {1, 7, 12, 13}) {
    h.loader.start_epoch(5, first);
    std::vector<float> images;
    std::int64_t index = first;
    while (auto b = h.loader.next()) {
      EXPECT_EQ(b->index, index);
      EXPECT_EQ(b->slot, index % 3);
      images.insert(images.end(), b->images, b->images + b->size * 4);
      ++index;
    }
    EXPECT_EQ(index, 13);
    EXPECT_EQ(images, std::vector<float>(full.images.begin() + first * 10 * 4, full.images.end())) << first;
  }
  EXPECT_THROW(h.loader.start_epoch(5, 14), std::out_of_range);
  EXPECT_THROW(h.loader.start_epoch(5, -1), std::out_of_range);
}

TEST(BatchLoader, UnreadableSamplesAreReplacedInTrainingAndDroppedInEvaluation) {
  IndexDataset data(40);
  data.bad = {5, 6, 17};
  Harness train(data, options(8, true, 2));
  const Delivered t = run_epoch(train.loader, 0);
  for (auto s : t.sizes) EXPECT_EQ(s, 8);
  for (std::int64_t s : t.samples) EXPECT_TRUE(s != 5 && s != 6 && s != 17);
  for (std::size_t k = 0; k < t.samples.size(); ++k) EXPECT_EQ(t.images[k * 4], static_cast<float>(t.samples[k]));
  EXPECT_GE(data.skipped(), 3);

  Harness eval(data, options(8, false));
  eval.loader.start_epoch(0);
  std::vector<std::int64_t> seen;
  std::int64_t dropped = 0;
  while (auto b = eval.loader.next()) {
    dropped += b->dropped;
    for (std::int64_t i = 0; i < b->size; ++i) {
      EXPECT_EQ(b->images[i * 4], static_cast<float>(b->samples[static_cast<std::size_t>(i)]));
      EXPECT_EQ(b->labels[i], b->samples[static_cast<std::size_t>(i)] % 7);
      seen.push_back(b->samples[static_cast<std::size_t>(i)]);
    }
  }
  EXPECT_EQ(dropped, 3);
  EXPECT_EQ(seen.size(), 37u);
  EXPECT_TRUE(std::is_sorted(seen.begin(), seen.end()));
}

// For a device that computes no values: the same samples and labels in
// the same order, and no image read (the slots keep what they held).
TEST(BatchLoader, WithoutDecodingDeliversTheSameSamplesAndLabelsAndReadsNoImage) {
  IndexDataset data(40);
  LoaderOptions labels_only = options(8, true, 2);
  labels_only.decode = false;
  // Marked, and the dataset armed, before a loader's workers exist: they
  // may start on the first batches at once (ThreadSanitizer saw the test's
  // own writes race with them).
  std::vector<std::byte> memory(BatchLoader::required_bytes(data, labels_only), std::byte{0xAB});
  data.throw_at = 9;  // sample 9 is in every epoch: reading it would throw
  Delivered d;
  {
    BatchLoader plain(data, memory, labels_only);
    d = run_epoch(plain, 0);
  }
  data.throw_at = -1;
  Harness decoded(data, options(8, true, 2));
  const Delivered reference = run_epoch(decoded.loader, 0);
  EXPECT_EQ(d.samples, reference.samples);
  EXPECT_EQ(d.labels, reference.labels);
  float untouched;
  std::memset(&untouched, 0xAB, sizeof untouched);
  for (float v : d.images) ASSERT_EQ(std::memcmp(&v, &untouched, sizeof v), 0);
}

TEST(BatchLoader, WorkerErrorsReachTheConsumer) {
  IndexDataset data(100);
  data.throw_at = 42;
  Harness h(data, options(10, false));
  h.loader.start_epoch(0);
  EXPECT_THROW(
      {
        while (h.loader.next()) {
        }
      },
      DatasetError);
  // A new epoch on a fixed dataset works again.
  data.throw_at = -1;
  EXPECT_EQ(run_epoch(h.loader, 1).samples.size(), 100u);

  IndexDataset all_bad(10);
  all_bad.bad = {0, 1, 2, 3, 4, 5, 6, 7, 8, 9};
  Harness hopeless(all_bad, options(5, true));
  hopeless.loader.start_epoch(0);
  EXPECT_THROW(hopeless.loader.next(), DatasetError);
}

TEST(BatchLoader, RejectsTooLittleMemoryAndMisuse) {
  IndexDataset data(10);
  LoaderOptions opt = options(4, true);
  std::vector<std::byte> small(BatchLoader::required_bytes(data, opt) - 1);
  EXPECT_THROW(BatchLoader(data, small, opt), std::invalid_argument);
  Harness h(data, opt);
  EXPECT_THROW(h.loader.next(), std::logic_error);
}

}  // namespace
}  // namespace tidepool::datasets
