#include "app/checkpoint.h"

#include <cstring>
#include <fstream>
#include <nlohmann/json.hpp>

#include "engine/core/fnv1a.h"

namespace tidepool::app {
namespace {

constexpr char kMagic[8] = {'T', 'I', 'D', 'E', 'P', 'C', 'K', '1'};

void append(std::vector<char>& out, const void* data, std::size_t bytes) {
  const auto* p = static_cast<const char*>(data);
  out.insert(out.end(), p, p + bytes);
}

}  // namespace

void save_checkpoint(const std::filesystem::path& file, const Checkpoint& c) {
  nlohmann::json header = {{"options", to_json(c.settings)},
                           {"epoch", c.epoch},
                           {"batch_in_epoch", c.batch_in_epoch},
                           {"iteration", c.iteration},
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
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    if (!out) throw CheckpointError("cannot write checkpoint " + tmp.string());
    out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
    out.flush();
    if (!out) throw CheckpointError("writing checkpoint " + tmp.string() + " failed (disk full?)");
  }
  std::error_code ec;
  std::filesystem::rename(tmp, file, ec);
  if (ec) throw CheckpointError("cannot move checkpoint into place at " + file.string() + ": " + ec.message());
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
    // Compared as counts, not as bytes: values * 4 wrapped around for 2^62
    // values and matched, and resize() then threw std::length_error
    // (regress_state_size_overflow).
    const std::int64_t values = json_int64(header, "values");
    const std::size_t state_bytes = room - length;
    if (values < 0 || state_bytes % sizeof(float) != 0 ||
        static_cast<std::uint64_t>(values) != state_bytes / sizeof(float))
      throw corrupt("the state size does not match the header");
    c.state.resize(static_cast<std::size_t>(values));
    std::memcpy(c.state.data(), bytes.data() + 16 + length, state_bytes);
  } catch (const nlohmann::json::exception& e) {
    throw corrupt(std::string("bad header: ") + e.what());
  } catch (const std::invalid_argument& e) {  // a setting no table knows
    throw corrupt(std::string("bad header: ") + e.what());
  }
  return c;
}

}  // namespace tidepool::app
