#include "datasets/loader.h"

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <numeric>
#include <stdexcept>
#include <string>

namespace tidepool::datasets {
namespace {

// Offsets inside a slot are kept at this alignment so that device copies and
// vector loads start on nice boundaries whatever the batch size.
constexpr std::size_t kAlign = 256;
// Consecutive unreadable samples tolerated while looking for a replacement:
// more than this and the data set (or the disk) is broken, not one file.
constexpr std::int64_t kMaxReplacementTries = 100;

std::size_t round_up(std::size_t v) { return (v + kAlign - 1) / kAlign * kAlign; }

std::size_t image_bytes(const Dataset& d, std::int64_t batch) {
  return round_up(static_cast<std::size_t>(batch * d.image_shape().elements()) * sizeof(float));
}

}  // namespace

std::size_t BatchLoader::slot_bytes(const Dataset& dataset, std::int64_t batch_size) {
  return image_bytes(dataset, batch_size) + round_up(static_cast<std::size_t>(batch_size) * sizeof(std::int32_t));
}

std::size_t BatchLoader::required_bytes(const Dataset& dataset, const LoaderOptions& options) {
  return static_cast<std::size_t>(options.depth) * slot_bytes(dataset, options.batch_size);
}

BatchLoader::BatchLoader(const Dataset& dataset, std::span<std::byte> memory, LoaderOptions options)
    : dataset_(dataset),
      options_([&] {
        if (options.batch_size < 1) throw std::invalid_argument("BatchLoader: batch_size must be at least 1");
        if (options.depth < 1) throw std::invalid_argument("BatchLoader: depth must be at least 1");
        if (options.shards < 1 || options.shard < 0 || options.shard >= options.shards)
          throw std::invalid_argument("BatchLoader: shard " + std::to_string(options.shard) + " of " +
                                      std::to_string(options.shards) + " does not exist");
        if (options.workers <= 0) {
          options.workers = static_cast<int>(std::clamp(std::thread::hardware_concurrency(), 1u, 8u));
        }
        return options;
      }()),
      sample_elements_(dataset.image_shape().elements()),
      // Enough pieces per batch that every worker can help with the batch the
      // consumer waits for, while keeping a lock round trip rare.
      chunk_((options_.batch_size + options_.workers - 1) / options_.workers) {
  const std::size_t need = required_bytes(dataset_, options_);
  if (memory.size() < need) {
    throw std::invalid_argument("BatchLoader: batch memory holds " + std::to_string(memory.size()) +
                                " bytes; " + std::to_string(options_.depth) + " batches of " +
                                std::to_string(options_.batch_size) + " need " + std::to_string(need));
  }
  if (reinterpret_cast<std::uintptr_t>(memory.data()) % alignof(float) != 0) {
    throw std::invalid_argument("BatchLoader: batch memory is not float-aligned");
  }

  // This shard's part of each global batch (LoaderOptions::shards).
  const std::int64_t n = dataset_.size(), b = options_.batch_size, global = b * options_.shards;
  if (options_.drop_last) {
    batches_ = n / global;
    samples_ = batches_ * b;
  } else {
    samples_ = n / global * b + std::clamp(n % global - options_.shard * b, std::int64_t{0}, b);
    batches_ = (samples_ + b - 1) / b;
  }

  const std::size_t per_slot = slot_bytes(dataset_, options_.batch_size);
  const std::size_t labels_at = image_bytes(dataset_, options_.batch_size);
  slots_.resize(static_cast<std::size_t>(options_.depth));
  for (std::size_t i = 0; i < slots_.size(); ++i) {
    std::byte* base = memory.data() + i * per_slot;
    slots_[i].images = reinterpret_cast<float*>(base);
    slots_[i].labels = reinterpret_cast<std::int32_t*>(base + labels_at);
    slots_[i].samples.resize(static_cast<std::size_t>(options_.batch_size));
    slots_[i].ok.resize(static_cast<std::size_t>(options_.batch_size));
  }
  epoch_order_.resize(static_cast<std::size_t>(n));
  order_.resize(static_cast<std::size_t>(samples_));

  threads_.reserve(static_cast<std::size_t>(options_.workers));
  for (int i = 0; i < options_.workers; ++i) threads_.emplace_back([this] { work(); });
}

BatchLoader::~BatchLoader() {
  {
    std::lock_guard lock(mutex_);
    stop_ = true;
  }
  work_cv_.notify_all();
  threads_.clear();  // joins; a worker mid-chunk finishes that chunk first
}

std::int64_t BatchLoader::samples_per_epoch() const {
  return samples_;
}

std::int64_t BatchLoader::batch_samples(std::int64_t batch) const {
  return std::min(options_.batch_size, samples_ - batch * options_.batch_size);
}

int BatchLoader::chunks_of(std::int64_t batch) const {
  return static_cast<int>((batch_samples(batch) + chunk_ - 1) / chunk_);
}

void BatchLoader::start_epoch(std::int64_t epoch, std::int64_t first_batch) {
  if (first_batch < 0 || first_batch > batches_)
    throw std::out_of_range("BatchLoader: epoch of " + std::to_string(batches_) + " batches has no batch " +
                            std::to_string(first_batch));
  std::unique_lock lock(mutex_);
  ++generation_;
  held_ = -1;
  // Hand out nothing more of the old epoch, and let the chunks already being
  // filled land before their slots and order_ are reused.
  next_batch_ = batches_;
  consumer_cv_.wait(lock, [&] { return in_flight_ == 0; });

  for (Slot& s : slots_) {
    s.batch = -1;
    s.ready = false;
  }
  std::vector<std::int64_t>& all = epoch_order_;
  std::iota(all.begin(), all.end(), std::int64_t{0});
  if (options_.shuffle) {
    // The seed's third word can never be a sample index, so the order's
    // stream is distinct from every sample's augmentation stream.
    Rng rng(mix_seed(options_.seed, static_cast<std::uint64_t>(epoch), ~std::uint64_t{0}));
    for (std::size_t i = all.size(); i > 1; --i) std::swap(all[i - 1], all[rng.below(i)]);
  }
  // This shard's part of each global batch, in order.
  const std::size_t b = static_cast<std::size_t>(options_.batch_size);
  const std::size_t global = b * static_cast<std::size_t>(options_.shards);
  const std::size_t offset = b * static_cast<std::size_t>(options_.shard);
  for (std::size_t i = 0; i < order_.size(); ++i) order_[i] = all[i / b * global + offset + i % b];
  // The order is the whole epoch's; work starts at the first batch wanted
  // (its slot is first_batch % depth, as in an uninterrupted epoch).
  epoch_ = epoch;
  next_batch_ = first_batch;
  next_chunk_ = 0;
  consumed_ = first_batch;
  released_ = first_batch;
  error_ = nullptr;
  work_cv_.notify_all();
}

void BatchLoader::release_locked() {
  if (held_ < 0) return;
  slots_[static_cast<std::size_t>(held_ % options_.depth)].ready = false;
  released_ = held_ + 1;
  held_ = -1;
  work_cv_.notify_all();
}

void BatchLoader::release() {
  std::lock_guard lock(mutex_);
  release_locked();
}

std::optional<Batch> BatchLoader::next() {
  std::unique_lock lock(mutex_);
  if (epoch_ < 0) throw std::logic_error("BatchLoader::next() before start_epoch()");
  release_locked();
  if (error_) std::rethrow_exception(error_);
  if (consumed_ >= batches_) return std::nullopt;

  const std::int64_t b = consumed_;
  Slot& slot = slots_[static_cast<std::size_t>(b % options_.depth)];
  consumer_cv_.wait(lock, [&] { return error_ || (slot.ready && slot.batch == b); });
  if (error_) std::rethrow_exception(error_);

  held_ = b;
  ++consumed_;
  Batch out;
  out.epoch = epoch_;
  out.index = b;
  out.size = slot.size;
  out.images = slot.images;
  out.labels = slot.labels;
  out.samples = std::span<const std::int64_t>(slot.samples.data(), static_cast<std::size_t>(slot.size));
  out.replaced = slot.replaced;
  out.dropped = slot.dropped;
  out.slot = static_cast<int>(b % options_.depth);
  return out;
}

void BatchLoader::work() {
  std::unique_lock lock(mutex_);
  for (;;) {
    work_cv_.wait(lock, [&] {
      return stop_ || (next_batch_ < batches_ && next_batch_ < released_ + options_.depth);
    });
    if (stop_) return;

    // Take the next chunk; the first taker of a batch claims its slot, which
    // the consumer has released (next_batch_ < released_ + depth).
    const std::int64_t b = next_batch_;
    const int c = next_chunk_;
    Slot& slot = slots_[static_cast<std::size_t>(b % options_.depth)];
    if (c == 0) {
      slot.batch = b;
      slot.size = batch_samples(b);
      slot.chunks_left = chunks_of(b);
      slot.ready = false;
      slot.replaced = 0;
      slot.dropped = 0;
    }
    if (++next_chunk_ == chunks_of(b)) {
      ++next_batch_;
      next_chunk_ = 0;
    }
    const std::uint64_t generation = generation_;
    const std::int64_t epoch = epoch_;
    const std::int64_t begin = c * chunk_;
    const std::int64_t end = std::min(begin + chunk_, batch_samples(b));
    ++in_flight_;
    lock.unlock();

    std::exception_ptr error;
    std::int64_t unreadable = 0;
    try {
      unreadable = fill(slot, epoch, b * options_.batch_size, begin, end);
    } catch (...) {
      error = std::current_exception();
    }

    lock.lock();
    --in_flight_;
    if (generation == generation_ && !stop_) {
      if (error) {
        if (!error_) error_ = error;
        next_batch_ = batches_;
      } else {
        (options_.drop_last ? slot.replaced : slot.dropped) += unreadable;
        if (--slot.chunks_left == 0) {
          finish(slot);
          slot.ready = true;
        }
      }
    }
    // The consumer waits either for a batch, an error, or (start_epoch) for
    // the last in-flight chunk to land.
    consumer_cv_.notify_all();
  }
}

std::int64_t BatchLoader::fill(Slot& slot, std::int64_t epoch, std::int64_t first, std::int64_t begin,
                               std::int64_t end) {
  const std::int64_t n = dataset_.size();
  std::int64_t unreadable = 0;
  for (std::int64_t j = begin; j < end; ++j) {
    std::int64_t index = order_[static_cast<std::size_t>(first + j)];
    float* image = slot.images + j * sample_elements_;
    std::int32_t label = 0;
    Rng rng(sample_seed(options_.seed, epoch, index));
    bool ok = true;
    if (options_.decode) ok = dataset_.read(index, image, label, rng);
    else label = dataset_.label(index);
    if (!ok) {
      ++unreadable;
      if (options_.drop_last) {
        // The replacement depends only on the data, never on timing: the
        // next readable index, augmented with its own seed.
        const std::int64_t tries = std::min(kMaxReplacementTries, n - 1);
        for (std::int64_t k = 1; k <= tries && !ok; ++k) {
          const std::int64_t candidate = (index + k) % n;
          Rng candidate_rng(sample_seed(options_.seed, epoch, candidate));
          if (dataset_.read(candidate, image, label, candidate_rng)) {
            index = candidate;
            ok = true;
          }
        }
        if (!ok) {
          throw DatasetError(dataset_.name() + ": " + std::to_string(tries + 1) +
                             " unreadable samples in a row from index " + std::to_string(index) +
                             " (" + std::to_string(dataset_.skipped()) + " skipped in all)");
        }
      }
    }
    slot.samples[static_cast<std::size_t>(j)] = index;
    slot.labels[j] = label;
    slot.ok[static_cast<std::size_t>(j)] = ok ? 1 : 0;
  }
  return unreadable;
}

void BatchLoader::finish(Slot& slot) {
  if (slot.dropped == 0) return;
  // Evaluation: close the gaps left by unreadable samples, keeping order.
  std::int64_t kept = 0;
  for (std::int64_t j = 0; j < slot.size; ++j) {
    if (!slot.ok[static_cast<std::size_t>(j)]) continue;
    if (kept != j) {
      std::memmove(slot.images + kept * sample_elements_, slot.images + j * sample_elements_,
                   static_cast<std::size_t>(sample_elements_) * sizeof(float));
      slot.labels[kept] = slot.labels[j];
      slot.samples[static_cast<std::size_t>(kept)] = slot.samples[static_cast<std::size_t>(j)];
    }
    ++kept;
  }
  slot.size = kept;
}

}  // namespace tidepool::datasets
