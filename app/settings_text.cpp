#include "app/settings_text.h"

#include <cmath>
#include <cstdio>
#include <stdexcept>

namespace tidepool::app {

OffloadMode parse_mode(const std::string& s) {
  for (OffloadMode m : {OffloadMode::base, OffloadMode::all, OffloadMode::conv, OffloadMode::aconv, OffloadMode::autoswap})
    if (s == to_string(m)) return m;
  throw std::invalid_argument("unknown offload mode '" + s + "' (valid: base, all, conv, aconv, autoswap, dyn)");
}

SwapScore parse_swap_score(const std::string& s) {
  for (SwapScore v : {SwapScore::doa, SwapScore::aoa, SwapScore::wdoa, SwapScore::swdoa})
    if (s == to_string(v)) return v;
  throw std::invalid_argument("unknown swap score '" + s + "' (valid: doa, aoa, wdoa, swdoa)");
}

TransferMode parse_transfer(const std::string& s) {
  if (s == "sync") return TransferMode::sync;
  if (s == "async") return TransferMode::async;
  throw std::invalid_argument("unknown transfer semantics '" + s + "' (valid: sync, async)");
}

AllocOrder parse_order(const std::string& s) {
  if (s == "prefetch-first") return AllocOrder::prefetch_first;
  if (s == "derivative-first") return AllocOrder::derivative_first;
  throw std::invalid_argument("unknown allocation order '" + s + "' (valid: prefetch-first, derivative-first)");
}

ConvScheme parse_scheme(const std::string& s) {
  if (s == "m") return ConvScheme::m;
  if (s == "p") return ConvScheme::p;
  throw std::invalid_argument("unknown conv algorithm scheme '" + s + "' (valid: m = least workspace, p = fastest)");
}

const char* to_string(ConvScheme s) { return s == ConvScheme::m ? "m" : "p"; }

int park_horizon_number(int park_horizon) { return park_horizon == kParkUntilNeeded ? -1 : park_horizon; }

std::size_t parse_bytes(const std::string& s) {
  std::size_t used = 0;
  double value = 0;
  try {
    value = std::stod(s, &used);
  } catch (const std::exception&) {
    used = 0;
  }
  std::string unit = s.substr(used);
  while (!unit.empty() && unit.front() == ' ') unit.erase(0, 1);
  struct Unit {
    const char* name;
    double scale;
  };
  constexpr Unit kUnits[] = {{"", 1},          {"B", 1},         {"KiB", 1024.0},    {"MiB", 1048576.0},
                             {"GiB", 1073741824.0}, {"KB", 1e3}, {"MB", 1e6},        {"GB", 1e9},
                             {"K", 1024.0},    {"M", 1048576.0}, {"G", 1073741824.0}};
  if (used > 0 && value > 0 && std::isfinite(value))
    for (const Unit& u : kUnits)
      if (unit == u.name) return static_cast<std::size_t>(std::llround(value * u.scale));
  throw std::invalid_argument("cannot read the size '" + s + "' (write e.g. 900MiB, 1.5GiB, 512MB or a byte count)");
}

}  // namespace tidepool::app
