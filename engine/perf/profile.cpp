#include "engine/perf/profile.h"

#include <cmath>
#include <stdexcept>

#include <nlohmann/json.hpp>

#include "engine/core/json_file.h"

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
