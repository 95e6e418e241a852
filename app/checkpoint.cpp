#include "app/checkpoint.h"

#include <fcntl.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <nlohmann/json.hpp>
#include <thread>

#include "engine/core/fnv1a.h"

namespace tidepool::app {
namespace {

constexpr char kMagic[8] = {'T', 'I', 'D', 'E', 'P', 'C', 'K', '1'};

void append(std::vector<char>& out, const void* data, std::size_t bytes) {
  const auto* p = static_cast<const char*>(data);
  out.insert(out.end(), p, p + bytes);
}

// A file descriptor closed however the write ends.
class Fd {
 public:
  explicit Fd(int fd) : fd_(fd) {}
  ~Fd() {
    if (fd_ >= 0) ::close(fd_);
  }
  Fd(const Fd&) = delete;
  Fd& operator=(const Fd&) = delete;
  int get() const { return fd_; }
  // close() can report a write error that write() did not.
  bool close() {
    const int fd = fd_;
    fd_ = -1;
    return ::close(fd) == 0;
  }

 private:
  int fd_;
};

std::string error_text() { return std::strerror(errno); }

void write_all(int fd, const char* data, std::size_t bytes, const std::filesystem::path& file) {
  while (bytes > 0) {
    const ssize_t n = ::write(fd, data, bytes);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) throw CheckpointError("writing checkpoint " + file.string() + " failed: " + error_text());
    data += n;
    bytes -= static_cast<std::size_t>(n);
  }
}

// TIDEPOOL_TEST_CHECKPOINT_STALL (see checkpoint.h): whether this save is
// the one to stall in.
bool stall_this_save() {
  static std::atomic<long> saves{0};
  const long n = ++saves;
  const char* want = std::getenv("TIDEPOOL_TEST_CHECKPOINT_STALL");
  return want && std::atol(want) == n;
}

}  // namespace

void save_checkpoint(const std::filesystem::path& file, const Checkpoint& c) {
  const EpochSoFar& e = c.epoch_so_far;
  nlohmann::json header = {{"options", to_json(c.settings)},
                           {"epoch", c.epoch},
                           {"batch_in_epoch", c.batch_in_epoch},
                           {"iteration", c.iteration},
                           {"epoch_so_far",
                            {{"images", e.images},
                             {"correct", e.correct},
                             {"loss_sum", e.loss_sum},
                             {"train_seconds", e.train_seconds},
                             {"wall_seconds", e.wall_seconds},
                             {"peak_load_bytes", e.peak_load_bytes},
                             {"footprint_bytes", e.footprint_bytes}}},
                           {"loss_scale",
                            {{"scale", c.loss_scale.scale},
                             {"good_steps", c.loss_scale.good_steps},
                             {"skipped_steps", c.loss_scale.skipped_steps}}},
                           {"kernel_choices", c.kernel_choices},
                           {"values", c.state.size()}};
  const std::string text = header.dump();
  const std::uint64_t length = text.size();
  std::vector<char> bytes;
  bytes.reserve(32 + text.size() + c.state.size() * sizeof(float));
  append(bytes, kMagic, sizeof kMagic);
  append(bytes, &length, sizeof length);
  append(bytes, text.data(), text.size());
  append(bytes, c.state.data(), c.state.size() * sizeof(float));
  const std::uint64_t hash = fnv1a(bytes.data(), bytes.size());
  append(bytes, &hash, sizeof hash);

  std::filesystem::path tmp = file;
  tmp += ".tmp";
  {
    Fd out(::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644));
    if (out.get() < 0) throw CheckpointError("cannot write checkpoint " + tmp.string() + ": " + error_text());
    std::size_t written = 0;
    if (stall_this_save()) {  // a test's chance to kill us with a torn temporary file
      written = bytes.size() / 2;
      write_all(out.get(), bytes.data(), written, tmp);
      std::fprintf(stderr, "tidepool: test hook: checkpoint save stalls half written\n");
      std::fflush(stderr);
      std::this_thread::sleep_for(std::chrono::minutes(10));
    }
    write_all(out.get(), bytes.data() + written, bytes.size() - written, tmp);
    // On the disk before the rename makes it the checkpoint: otherwise a
    // power cut could leave the new name on blocks never written.
    if (::fsync(out.get()) != 0 || !out.close())
      throw CheckpointError("writing checkpoint " + tmp.string() + " failed (disk full?): " + error_text());
  }
  std::error_code ec;
  std::filesystem::rename(tmp, file, ec);
  if (ec) throw CheckpointError("cannot move checkpoint into place at " + file.string() + ": " + ec.message());
  // The rename itself is durable once the folder is synced. Some file
  // systems cannot sync a folder (EINVAL); there the rename is as durable
  // as they make it.
  const std::filesystem::path folder = file.has_parent_path() ? file.parent_path() : ".";
  Fd dir(::open(folder.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  if (dir.get() < 0 || (::fsync(dir.get()) != 0 && errno != EINVAL && errno != ENOTSUP))
    throw CheckpointError("cannot sync the folder of checkpoint " + file.string() + ": " + error_text());
}

Checkpoint load_checkpoint(const std::filesystem::path& file) {
  std::ifstream in(file, std::ios::binary);
  if (!in) throw CheckpointError("no checkpoint at " + file.string());
  const std::vector<char> bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  return parse_checkpoint(bytes, file.string());
}

Checkpoint parse_checkpoint(std::span<const char> bytes, const std::string& source) {
  auto corrupt = [&](const std::string& why) {
    return CheckpointError("checkpoint " + source + " is not usable: " + why);
  };
  if (bytes.size() < sizeof kMagic + 16 || std::memcmp(bytes.data(), kMagic, sizeof kMagic) != 0)
    throw corrupt("not a Tidepool checkpoint");
  std::uint64_t length = 0, stored_hash = 0;
  std::memcpy(&length, bytes.data() + sizeof kMagic, sizeof length);
  std::memcpy(&stored_hash, bytes.data() + bytes.size() - sizeof stored_hash, sizeof stored_hash);
  // The header must end before the checksum does: a length up to the
  // file's size let the JSON parser read past the end (AddressSanitizer
  // under fuzz/, input fuzz/corpus/checkpoint/regress_header_past_end).
  const std::size_t room = bytes.size() - 16 - sizeof stored_hash;
  if (length > room) throw corrupt("truncated header");
  if (fnv1a(bytes.data(), bytes.size() - sizeof stored_hash) != stored_hash)
    throw corrupt("checksum mismatch (truncated or damaged file)");
  Checkpoint c;
  try {
    const auto header = nlohmann::json::parse(bytes.begin() + 16, bytes.begin() + 16 + static_cast<long>(length));
    c.settings = run_settings_from_json(header.at("options"));
    c.epoch = json_int64(header, "epoch");
    c.batch_in_epoch = json_int64(header, "batch_in_epoch");
    c.iteration = json_int64(header, "iteration");
    // Checkpoints from before mid-epoch checkpoints were written at epoch ends only.
    const auto so_far = header.value("epoch_so_far", nlohmann::json::object());
    if (!so_far.is_object()) throw corrupt("bad header: epoch_so_far is not an object");
    EpochSoFar& e = c.epoch_so_far;
    e.images = so_far.value("images", std::int64_t{0});
    e.correct = so_far.value("correct", std::int64_t{0});
    e.loss_sum = so_far.value("loss_sum", 0.0);
    e.train_seconds = so_far.value("train_seconds", 0.0);
    e.wall_seconds = so_far.value("wall_seconds", 0.0);
    e.peak_load_bytes = so_far.value("peak_load_bytes", std::uint64_t{0});
    e.footprint_bytes = so_far.value("footprint_bytes", std::uint64_t{0});
    // Checkpoints from before fp16 trained have none: the initial state.
    const auto scale = header.value("loss_scale", nlohmann::json::object());
    if (!scale.is_object()) throw corrupt("bad header: loss_scale is not an object");
    LossScalerState& l = c.loss_scale;
    l.scale = scale.value("scale", l.scale);
    if (scale.contains("good_steps")) l.good_steps = json_int64(scale, "good_steps");
    if (scale.contains("skipped_steps")) l.skipped_steps = json_int64(scale, "skipped_steps");
    // What LossScaler can reach: a power of two within its bounds, fewer
    // good steps than grow it.
    int exponent = 0;
    if (!std::isfinite(l.scale) || !(l.scale >= LossScaler::kMinScale && l.scale <= LossScaler::kMaxScale) ||
        std::frexp(l.scale, &exponent) != 0.5f || l.good_steps < 0 || l.good_steps >= LossScaler::kGrowthInterval ||
        l.skipped_steps < 0)
      throw corrupt("bad header: the loss scale must be a power of two from 2^-24 to 2^24, with 0 to " +
                    std::to_string(LossScaler::kGrowthInterval - 1) + " good steps and no negative count");
    // Compared as counts, not as bytes: values * 4 wrapped around for 2^62
    // values and matched, and resize() then threw std::length_error
    // (regress_state_size_overflow).
    const auto choices = header.value("kernel_choices", nlohmann::json::array());
    if (!choices.is_array()) throw corrupt("bad header: kernel_choices is not a list");
    for (const auto& line : choices) {
      if (!line.is_string()) throw corrupt("bad header: a kernel choice is not text");
      c.kernel_choices.push_back(line.get<std::string>());
    }
    const std::int64_t values = json_int64(header, "values");
    const std::size_t state_bytes = room - length;
    if (values < 0 || state_bytes % sizeof(float) != 0 ||
        static_cast<std::uint64_t>(values) != state_bytes / sizeof(float))
      throw corrupt("the state size does not match the header");
    c.state.resize(static_cast<std::size_t>(values));
    // An empty state (a sim run's checkpoint) has no buffer to copy into.
    if (state_bytes > 0) std::memcpy(c.state.data(), bytes.data() + 16 + length, state_bytes);
  } catch (const nlohmann::json::exception& e) {
    throw corrupt(std::string("bad header: ") + e.what());
  } catch (const std::invalid_argument& e) {  // a setting no table knows
    throw corrupt(std::string("bad header: ") + e.what());
  }
  return c;
}

}  // namespace tidepool::app
