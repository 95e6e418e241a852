// parse_checkpoint on checkpoints built byte by byte with a valid checksum,
// so each damage reaches the header and the state: the cases the fuzzer
// build (fuzz/checkpoint_fuzzer.cpp) showed reading past the end, throwing
// the wrong exception, or converting with undefined behaviour.
#include <gtest/gtest.h>

#include <cstring>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "app/checkpoint.h"
#include "engine/core/fnv1a.h"
#include "testing/temp_dir.h"

namespace tidepool::app {
namespace {

nlohmann::json header(std::size_t values) {
  return {{"options", to_json(RunSettings{})}, {"epoch", 1}, {"batch_in_epoch", 2}, {"iteration", 3}, {"values", values}};
}

void append(std::vector<char>& out, const void* data, std::size_t bytes) {
  const std::size_t at = out.size();
  out.resize(at + bytes);
  if (bytes) std::memcpy(out.data() + at, data, bytes);
}

// magic, the given header length, the header text, the state, the checksum.
std::vector<char> file_bytes(const std::string& text, std::uint64_t length, const std::vector<float>& state) {
  std::vector<char> out;
  append(out, "TIDEPCK1", 8);
  append(out, &length, sizeof length);
  append(out, text.data(), text.size());
  append(out, state.data(), state.size() * sizeof(float));
  const std::uint64_t hash = fnv1a(out.data(), out.size());
  append(out, &hash, sizeof hash);
  return out;
}

std::vector<char> file_bytes(const nlohmann::json& h, const std::vector<float>& state) {
  const std::string text = h.dump();
  return file_bytes(text, text.size(), state);
}

// Expects a CheckpointError whose message contains `part`.
void expect_refused(const std::vector<char>& bytes, const std::string& part) {
  try {
    parse_checkpoint(bytes, "ck.bin");
    ADD_FAILURE() << "accepted";
  } catch (const CheckpointError& e) {
    EXPECT_NE(std::string(e.what()).find(part), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("ck.bin"), std::string::npos) << e.what();
  }
}

TEST(CheckpointParse, AWellFormedFileReads) {
  const Checkpoint c = parse_checkpoint(file_bytes(header(2), {1.5f, -2.0f}), "ck.bin");
  EXPECT_EQ(c.iteration, 3);
  EXPECT_EQ(c.state, (std::vector<float>{1.5f, -2.0f}));
}

// The kernels the device chose by timing travel in the checkpoint, so the
// resumed run computes with the same ones (Device::adopt_kernel_choices);
// a checkpoint from before they were kept has none, and a list that is not
// text is refused by name.
TEST(CheckpointParse, KernelChoicesRoundTripAndOldCheckpointsHaveNone) {
  testing::TempDir dir("ck-choices");
  Checkpoint c;
  c.iteration = 4;
  c.kernel_choices = {"forward f32 n=32 c=64 h=32 w=32 k=64 r=3 s=3 stride=1x1 pad=1x1 dilation=1x1 groups=1 bias=0 -> 1 fma",
                      "backward-data f16 n=32 c=3 h=32 w=32 k=64 r=3 s=3 stride=1x1 pad=1x1 dilation=1x1 groups=1 "
                      "bias=0 -> 4 tensor-op"};
  c.state = {1.0f, 2.0f};
  const auto file = dir.path() / "checkpoint.bin";
  save_checkpoint(file, c);
  EXPECT_EQ(load_checkpoint(file).kernel_choices, c.kernel_choices);

  EXPECT_TRUE(parse_checkpoint(file_bytes(header(0), {}), "ck.bin").kernel_choices.empty());
  auto h = header(0);
  h["kernel_choices"] = {1, 2};
  expect_refused(file_bytes(h, {}), "kernel choice is not text");
  h["kernel_choices"] = "forward";
  expect_refused(file_bytes(h, {}), "kernel_choices is not a list");
}

// The header's length was checked against the file's size, not against what
// lies before the checksum, so the JSON parser could run past the end.
TEST(CheckpointParse, AHeaderLongerThanTheFileIsTruncatedNotReadPastTheEnd) {
  const std::string open_string = R"({"a":")";
  for (std::uint64_t extra : {1, 8, 9, 24}) {
    const auto bytes = file_bytes(open_string, 0, {});
    const std::uint64_t length = bytes.size() - 16 - 8 + extra;
    expect_refused(file_bytes(open_string, length, {}), "truncated header");
  }
}

// values * 4 wrapped around 2^64 and matched the file's size; resize() then
// threw std::length_error instead of a CheckpointError.
TEST(CheckpointParse, AStateCountThatOverflowsIsRefused) {
  expect_refused(file_bytes(header(std::size_t{1} << 62), {}), "state size does not match");
  expect_refused(file_bytes(header(3), {1.0f, 2.0f}), "state size does not match");
}

// nlohmann's get<std::int64_t>() converts 1e30 with undefined behaviour.
TEST(CheckpointParse, NumbersThatAreNotIntegersAreRefusedByName) {
  auto h = header(1);
  h["epoch"] = -1e30;
  expect_refused(file_bytes(h, {0.0f}), "'epoch' must be an integer");
  h = header(1);
  h["values"] = 1.0;
  expect_refused(file_bytes(h, {0.0f}), "'values' must be an integer");
  h = header(1);
  h["options"]["lookahead"] = 1e30;
  expect_refused(file_bytes(h, {0.0f}), "'lookahead' must be an integer");
  h = header(1);
  h["options"]["seed"] = -1;
  expect_refused(file_bytes(h, {0.0f}), "'seed' must be an integer");
}

}  // namespace
}  // namespace tidepool::app
