#include "engine/perf/profile.h"

#include <algorithm>
#include <cmath>
#include <stdexcept>

#include <nlohmann/json.hpp>

#include "engine/core/json_file.h"
#include "engine/perf/spec_profiles.h"
#include "engine/schedule/memory_settings.h"  // the ConvScheme words

namespace tidepool {

namespace {

using nlohmann::json;

constexpr const char* kFormat = "tidepool-profile";
constexpr int kVersion = 1;

double number(const json& j, const char* key, const std::string& where, double low = 0,
              double high = std::numeric_limits<double>::infinity()) {
  if (!j.contains(key)) throw std::invalid_argument(where + ": '" + key + "' is missing");
  if (!j.at(key).is_number()) throw std::invalid_argument(where + ": '" + key + "' is not a number");
  const double v = j.at(key).get<double>();
  if (!std::isfinite(v) || v < low || v > high)
    throw std::invalid_argument(where + ": '" + key + "' is " + j.at(key).dump() + ", outside [" +
                                std::to_string(low) + ", " + (std::isinf(high) ? "inf" : std::to_string(high)) + "]");
  return v;
}

int count(const json& j, const char* key, const std::string& where) {
  const double v = j.contains(key) ? number(j, key, where, 0, 1e9) : 0;
  if (v != std::floor(v)) throw std::invalid_argument(where + ": '" + key + "' is not a whole number");
  return static_cast<int>(v);
}

json link_json(const LinkFit& l) { return {{"latency_us", l.latency_us}, {"gbps", l.gbps}, {"samples", l.samples}}; }

LinkFit link_from(const json& j, const std::string& where) {
  if (!j.is_object()) throw std::invalid_argument(where + " is not an object");
  LinkFit l{number(j, "latency_us", where), number(j, "gbps", where), count(j, "samples", where)};
  if (l.gbps <= 0) throw std::invalid_argument(where + ": 'gbps' must be more than 0");
  return l;
}

constexpr const char* kPassWords[] = {"forward", "backward_data", "backward_weights"};

template <std::size_t N>
int word_index(const json& j, const char* key, const char* const (&words)[N], const std::string& where) {
  const std::string w = j.contains(key) && j.at(key).is_string() ? j.at(key).get<std::string>() : "";
  for (std::size_t i = 0; i < N; ++i)
    if (w == words[i]) return static_cast<int>(i);
  std::string list;
  for (const char* word : words) list += (list.empty() ? "" : ", ") + std::string(word);
  throw std::invalid_argument(where + ": '" + key + "' is \"" + w + "\" (one of " + list + ")");
}

std::int64_t whole(const json& j, const char* key, const std::string& where, double low) {
  const double v = number(j, key, where, low, 1e15);
  if (v != std::floor(v)) throw std::invalid_argument(where + ": '" + key + "' is not a whole number");
  return static_cast<std::int64_t>(v);
}

json workspace_json(const MeasuredWorkspace& m) {
  const ConvShape& s = m.shape;
  return {{"shape",
           {{"n", s.n}, {"c", s.c}, {"h", s.h}, {"w", s.w}, {"k", s.k}, {"r", s.r}, {"s", s.s},
            {"stride", {s.stride_h, s.stride_w}}, {"pad", {s.pad_h, s.pad_w}}, {"dilation", {s.dil_h, s.dil_w}},
            {"groups", s.groups}, {"bias", s.bias}, {"dtype", std::string(to_string(s.dtype))}}},
          {"scheme", to_string(m.scheme)},
          {"pass", kPassWords[static_cast<int>(m.pass)]},
          {"bytes", m.bytes}};
}

MeasuredWorkspace workspace_from(const json& j) {
  const std::string where = "profile: kernels.workspaces[]";
  if (!j.is_object() || !j.contains("shape") || !j.at("shape").is_object())
    throw std::invalid_argument(where + ": 'shape' is missing");
  const json& sh = j.at("shape");
  auto pair = [&](const char* key, std::int64_t& a, std::int64_t& b, double low) {
    if (!sh.contains(key) || !sh.at(key).is_array() || sh.at(key).size() != 2)
      throw std::invalid_argument(where + ": 'shape." + key + "' is not a pair of numbers");
    const json two = {{"a", sh.at(key)[0]}, {"b", sh.at(key)[1]}};
    a = whole(two, "a", where + " shape." + key, low);
    b = whole(two, "b", where + " shape." + key, low);
  };
  MeasuredWorkspace m;
  ConvShape& s = m.shape;
  s.n = whole(sh, "n", where, 1);
  s.c = whole(sh, "c", where, 1);
  s.h = whole(sh, "h", where, 1);
  s.w = whole(sh, "w", where, 1);
  s.k = whole(sh, "k", where, 1);
  s.r = whole(sh, "r", where, 1);
  s.s = whole(sh, "s", where, 1);
  pair("stride", s.stride_h, s.stride_w, 1);
  pair("pad", s.pad_h, s.pad_w, 0);
  pair("dilation", s.dil_h, s.dil_w, 1);
  s.groups = whole(sh, "groups", where, 1);
  s.bias = sh.value("bias", false);
  const std::string dtype = sh.value("dtype", "f32");
  const auto float_types = {DType::f32, DType::f16, DType::bf16};
  const auto named = std::find_if(float_types.begin(), float_types.end(), [&](DType t) { return to_string(t) == dtype; });
  if (named == float_types.end())
    throw std::invalid_argument(where + ": 'shape.dtype' is \"" + dtype + "\" (one of f32, f16, bf16)");
  s.dtype = *named;
  m.scheme = parse_choice<ConvScheme>(j.value("scheme", ""), "a measured workspace's algorithm scheme");
  m.pass = static_cast<ConvPass>(word_index(j, "pass", kPassWords, where));
  m.bytes = static_cast<std::size_t>(whole(j, "bytes", where, 0));
  validate(s);
  return m;
}

json kernels_json(const Profile& p) {
  if (p.kernels == ProfiledKernels::cpu) return {{"device", "cpu"}};
  json workspaces = json::array();
  for (const MeasuredWorkspace& m : p.gpu.workspaces) workspaces.push_back(workspace_json(m));
  return {{"device", "cuda"}, {"gpu", p.gpu.gpu}, {"f16", p.gpu.f16}, {"bf16", p.gpu.bf16},
          {"workspaces", workspaces}};
}

void kernels_from(const json& j, Profile& p) {
  if (!j.contains("kernels")) {
    // Profiles from before answers were kept: a measured one was measured
    // on the cpu device (the cuda device had never run); a GPU's
    // specification would silently plan with the host's answers.
    if (p.source == "specification")
      throw std::invalid_argument("this GPU profile was written before profiles carried the GPU's own answers "
                                  "(workspaces, 16-bit types): write it again with `tidepool profile --spec KEY -o "
                                  "FILE`, or give the specification's name (" + gpu_spec_names() + ")");
    return;
  }
  const json& k = j.at("kernels");
  const std::string device = k.is_object() ? k.value("device", "") : "";
  if (device == "cpu") return;
  if (device != "cuda")
    throw std::invalid_argument("profile: 'kernels.device' is \"" + device + "\"; it must be \"cpu\" or \"cuda\"");
  p.kernels = ProfiledKernels::cuda;
  p.gpu.gpu = k.value("gpu", p.name);
  p.gpu.f16 = k.value("f16", true);
  p.gpu.bf16 = k.value("bf16", false);
  for (const json& w : k.value("workspaces", json::array())) p.gpu.workspaces.push_back(workspace_from(w));
}

}  // namespace

json to_json(const Profile& p) {
  json compute = json::object();
  for (const Choice<WorkClass>& c : kWorkClasses)
    if (const auto& f = p.fit(c.value))
      compute[c.name] = {{"peak_gflops", f->peak_gflops},
                         {"saturation_flops", f->saturation_flops},
                         {"slope", f->slope},
                         {"launch_us", f->launch_us},
                         {"samples", f->samples}};
  json samples = json::array();
  for (const ComputeSample& s : p.compute_samples)
    samples.push_back({{"class", to_string(s.work_class)},
                       {"layer", s.layer},
                       {"batch", s.batch},
                       {"flops", s.flops},
                       {"kernels", s.kernels},
                       {"us", s.us}});
  json copies = json::array();
  for (const CopySample& s : p.copy_samples)
    copies.push_back({{"direction", s.to_host ? "to_host" : "to_device"}, {"bytes", s.bytes}, {"us", s.us}});
  return {{"format", kFormat},       {"version", kVersion},
          {"name", p.name},          {"source", p.source},
          {"notes", p.notes},        {"memory_bytes", p.memory_bytes},
          {"kernels", kernels_json(p)}, {"dense_16bit_speedup", p.dense_16bit_speedup},
          {"compute", compute},      {"link", {{"to_host", link_json(p.to_host)}, {"to_device", link_json(p.to_device)}}},
          {"compute_samples", samples}, {"copy_samples", copies}};
}

Profile profile_from_json(const json& j) {
  if (!j.is_object() || j.value("format", "") != kFormat)
    throw std::invalid_argument("not a Tidepool profile (its 'format' is not \"" + std::string(kFormat) + "\")");
  if (j.value("version", 0) != kVersion)
    throw std::invalid_argument("profile version " + j.value("version", json()).dump() + " is not one this build reads (" +
                                std::to_string(kVersion) + ")");
  Profile p;
  auto text = [&](const char* key) {
    if (!j.contains(key) || !j.at(key).is_string()) throw std::invalid_argument(std::string("profile: '") + key + "' is missing or not text");
    return j.at(key).get<std::string>();
  };
  p.name = text("name");
  p.source = text("source");
  if (p.source != "measured" && p.source != "specification")
    throw std::invalid_argument("profile: 'source' is \"" + p.source + "\"; it must be \"measured\" or \"specification\"");
  p.notes = j.value("notes", "");
  p.memory_bytes = static_cast<std::size_t>(number(j, "memory_bytes", "profile", 0, 1e18));
  kernels_from(j, p);
  if (j.contains("dense_16bit_speedup")) p.dense_16bit_speedup = number(j, "dense_16bit_speedup", "profile", 0.01, 1e3);
  if (!j.contains("compute") || !j.at("compute").is_object()) throw std::invalid_argument("profile: 'compute' is missing");
  for (const auto& [name, f] : j.at("compute").items()) {
    const WorkClass c = parse_choice<WorkClass>(name, "class of work in the profile's 'compute'");
    const std::string where = "profile: compute." + name;
    ClassFit fit{number(f, "peak_gflops", where), number(f, "saturation_flops", where), number(f, "slope", where, 0, 1),
                 number(f, "launch_us", where), count(f, "samples", where)};
    if (fit.peak_gflops <= 0) throw std::invalid_argument(where + ": 'peak_gflops' must be more than 0");
    p.fit(c) = fit;
  }
  if (!j.contains("link")) throw std::invalid_argument("profile: 'link' is missing");
  p.to_host = link_from(j.at("link").value("to_host", json()), "profile: link.to_host");
  p.to_device = link_from(j.at("link").value("to_device", json()), "profile: link.to_device");
  for (const json& s : j.value("compute_samples", json::array())) {
    ComputeSample c;
    c.work_class = parse_choice<WorkClass>(s.value("class", ""), "class of work in a compute sample");
    c.layer = s.value("layer", "");
    c.batch = static_cast<std::int64_t>(number(s, "batch", "profile: compute sample", 0, 1e12));
    c.flops = number(s, "flops", "profile: compute sample");
    c.kernels = count(s, "kernels", "profile: compute sample");
    c.us = number(s, "us", "profile: compute sample");
    p.compute_samples.push_back(std::move(c));
  }
  for (const json& s : j.value("copy_samples", json::array())) {
    const std::string dir = s.value("direction", "");
    if (dir != "to_host" && dir != "to_device")
      throw std::invalid_argument("profile: a copy sample's direction is \"" + dir + "\" (to_host or to_device)");
    p.copy_samples.push_back({dir == "to_host", static_cast<std::size_t>(number(s, "bytes", "profile: copy sample", 0, 1e15)),
                              number(s, "us", "profile: copy sample")});
  }
  return p;
}

Profile load_profile(const std::string& path) {
  const json j = read_json_file(path);
  try {
    return profile_from_json(j);
  } catch (const std::exception& e) {
    throw std::runtime_error(path + ": " + e.what());
  }
}

void save_profile(const Profile& p, const std::string& path) { write_json_atomically(path, to_json(p)); }

}  // namespace tidepool
