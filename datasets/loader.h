// Batches of decoded, augmented samples, produced ahead of the consumer on
// background threads.
//
// Memory: the caller hands in one byte region (typically the device's pinned
// host region, so the host->device copy needs no staging) of at least
// required_bytes(). The loader splits it into `depth` slots of one batch
// each - images (NCHW f32) then labels (i32) - and never allocates batch
// memory itself. Batch n of an epoch always goes to slot n % depth.
//
// Protocol:
//
//   BatchLoader loader(dataset, pinned, LoaderOptions::training(128, seed));
//   for (int epoch = 0; epoch < epochs; ++epoch) {
//     loader.start_epoch(epoch);
//     while (auto batch = loader.next()) {
//       copy batch->images / batch->labels to the device, wait for the copy;
//       loader.release();   // optional: lets the slot refill during compute
//       ...
//     }
//   }
//
// A batch's memory belongs to the consumer from next() until the consumer's
// next call to next() (which releases it implicitly) or an explicit
// release(), whichever comes first; start_epoch() and the destructor release
// it too. While the consumer holds one slot, the workers fill up to depth - 1
// batches ahead.
//
// Determinism: the epoch order is a Fisher-Yates shuffle seeded from
// (seed, epoch), and sample i is augmented with an Rng seeded from
// (seed, epoch, i). Which thread fills which part of which batch does not
// matter: the same (dataset, options, epoch) gives byte-identical batches.
//
// Unreadable samples (Dataset::read returned false, e.g. a corrupt JPEG):
// with drop_last (training) the batch must stay full, so the sample is
// replaced by the next readable one in dataset order (index + 1, + 2, ...);
// without drop_last (evaluation) it is left out and the batch is smaller, so
// no image is scored twice. Either way it is counted in Batch::replaced or
// Batch::dropped and in the dataset's skipped().
//
// start_epoch(), next() and release() are for one consumer thread; the
// workers are the loader's own.
//
// A worker that throws (an I/O error, 100 unreadable samples in a row) stops
// the epoch; next() rethrows the exception on the consumer's thread.
#pragma once

#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <exception>
#include <mutex>
#include <optional>
#include <span>
#include <thread>
#include <vector>

#include "datasets/dataset.h"

namespace tidepool::datasets {

struct LoaderOptions {
  std::int64_t batch_size = 128;
  bool shuffle = true;     // a new order every epoch; false = dataset order
  bool drop_last = true;   // leave out the final partial batch
  int depth = 3;           // slots, including the one the consumer holds
  int workers = 0;         // decoding threads; 0 = one per hardware thread, at most 8
  std::uint64_t seed = 0;  // epoch order and augmentation
  // false: each sample's index and label (Dataset::label) only, its image
  // left as the slot held it. For a device that computes no values (the
  // sim device), which never reads an image: a simulated iteration takes
  // well under a millisecond of the host's time, and decoding a batch of
  // ImageNet JPEGs (or writing 38 MB of imagenet-shapes) would be all a
  // simulated run waits for. Nothing is unreadable then.
  bool decode = true;
  // Data-parallel training: this loader is shard `shard` of `shards`. The
  // epoch order is the same on every shard (the same seed); it is cut
  // into global batches of batch_size * shards samples, and this loader
  // delivers part `shard` of each (batch_size samples): the shards of one
  // global batch are disjoint and together are the batch one loader with
  // batch_size * shards would deliver. Without drop_last (evaluation) the
  // last global batch is split the same way, so a shard may end with a
  // short batch or one batch fewer; every sample is scored exactly once.
  int shard = 0;
  int shards = 1;

  static LoaderOptions training(std::int64_t batch_size, std::uint64_t seed) {
    return {batch_size, true, true, 3, 0, seed};
  }
  static LoaderOptions evaluation(std::int64_t batch_size) { return {batch_size, false, false, 3, 0, 0}; }
};

// A view of one slot, valid until it is released (see above).
struct Batch {
  std::int64_t epoch = 0;
  std::int64_t index = 0;  // batch number within the epoch
  std::int64_t size = 0;   // samples in this batch
  float* images = nullptr;            // size x C x H x W
  std::int32_t* labels = nullptr;     // size
  std::span<const std::int64_t> samples;  // the dataset index of each sample
  std::int64_t replaced = 0;  // unreadable samples replaced by a neighbour
  std::int64_t dropped = 0;   // unreadable samples left out
  int slot = 0;
};

class BatchLoader {
 public:
  // Bytes of one slot, and of the whole region the loader needs.
  static std::size_t slot_bytes(const Dataset& dataset, std::int64_t batch_size);
  static std::size_t required_bytes(const Dataset& dataset, const LoaderOptions& options);

  // `dataset` must outlive the loader. `memory` must hold required_bytes()
  // and be float-aligned; std::invalid_argument otherwise.
  BatchLoader(const Dataset& dataset, std::span<std::byte> memory, LoaderOptions options);
  ~BatchLoader();  // stops the workers (each finishes at most its current chunk) and joins them
  BatchLoader(const BatchLoader&) = delete;
  BatchLoader& operator=(const BatchLoader&) = delete;

  // Abandons whatever epoch was running and starts loading `epoch` at batch
  // `first_batch` (a run resumed mid-epoch): the batches are those an
  // uninterrupted epoch delivers from there on, and the ones before are
  // never decoded. An out-of-range first batch throws std::out_of_range.
  void start_epoch(std::int64_t epoch, std::int64_t first_batch = 0);
  // The next batch of the epoch, waiting for it if needed; nullopt at the
  // end of the epoch. Releases the previously returned batch.
  std::optional<Batch> next();
  // Gives the batch last returned by next() back for refilling.
  void release();

  std::int64_t batches_per_epoch() const { return batches_; }
  std::int64_t samples_per_epoch() const;
  const LoaderOptions& options() const { return options_; }
  const Dataset& dataset() const { return dataset_; }

 private:
  struct Slot {
    float* images = nullptr;
    std::int32_t* labels = nullptr;
    std::int64_t batch = -1;  // which batch of the current epoch it holds
    std::int64_t size = 0;
    int chunks_left = 0;
    bool ready = false;
    std::vector<std::int64_t> samples;
    std::vector<std::uint8_t> ok;  // per sample: read, or unreadable (evaluation)
    std::int64_t replaced = 0;
    std::int64_t dropped = 0;
  };

  void work();
  // Fills samples [begin, end) of `slot`'s batch, whose first sample is at
  // order_[first]; no lock held. Returns how many were unreadable.
  std::int64_t fill(Slot& slot, std::int64_t epoch, std::int64_t first, std::int64_t begin, std::int64_t end);
  void finish(Slot& slot);  // compaction of dropped samples, under the lock
  void release_locked();
  std::int64_t batch_samples(std::int64_t batch) const;
  int chunks_of(std::int64_t batch) const;

  const Dataset& dataset_;
  const LoaderOptions options_;
  const std::int64_t sample_elements_;
  const std::int64_t chunk_;  // samples per work item
  std::int64_t batches_ = 0;
  std::int64_t samples_ = 0;  // this shard's samples per epoch: order_'s length

  std::mutex mutex_;
  std::condition_variable work_cv_;      // workers: work available, or stop
  std::condition_variable consumer_cv_;  // consumer: a batch ready, an error, or workers idle
  std::vector<Slot> slots_;
  std::vector<std::int64_t> order_;  // this shard's samples of the epoch, in order; rewritten only with no chunk in flight
  std::vector<std::int64_t> epoch_order_;  // the whole epoch's order, every shard's (start_epoch's scratch)
  std::int64_t epoch_ = -1;
  std::uint64_t generation_ = 0;  // bumped by start_epoch, so late finishers of an old epoch are ignored
  std::int64_t next_batch_ = 0;   // the next work item: (batch, chunk)
  int next_chunk_ = 0;
  std::int64_t consumed_ = 0;  // batches handed to the consumer this epoch
  std::int64_t released_ = 0;  // batches the consumer has given back
  std::int64_t held_ = -1;     // the batch the consumer holds, or -1
  int in_flight_ = 0;          // chunks being filled outside the lock
  bool stop_ = false;
  std::exception_ptr error_;

  std::vector<std::jthread> threads_;  // last: started once everything above exists
};

}  // namespace tidepool::datasets
