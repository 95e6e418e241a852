#include "app/commands/diff_command.h"

#include <cmath>
#include <cstdio>
#include <iostream>
#include <memory>
#include <optional>
#include <set>
#include <stdexcept>
#include <string>
#include <system_error>
#include <vector>

#include <nlohmann/json.hpp>

#include "app/recorded_run.h"

#include "engine/core/bytes_text.h"
#include "engine/plan/memory_facts.h"

namespace tidepool::app {
namespace fs = std::filesystem;

namespace {

// How a figure's values read and subtract.
enum class Kind { bytes, number, text };

struct Figure {
  std::string key, label;
  Kind kind;
  nlohmann::json a, b;          // as summary.json has them (null: absent, or none recorded)
  std::string a_text, b_text;  // in words, as every other view writes them
};

std::string value_text(Kind kind, const nlohmann::json& v);

// The run's own figures beside the memory ones: summary.json's keys
// (app/run_summary.cpp), in words.
struct RunFigure {
  const char* key;
  const char* label;
};
constexpr RunFigure kRunFigures[] = {
    {"images_per_second", "images/s"},
    {"wall_seconds", "wall seconds"},
    {"total_iterations", "iterations trained"},
    {"final_train_loss", "final train loss"},
    {"final_test_accuracy", "final test accuracy"},
};

std::vector<Figure> figures(const nlohmann::json& a, const nlohmann::json& b) {
  std::vector<Figure> out;
  // Memory figures through the facts table, so a summary written before a
  // fact existed reads as memory_from_json reads it.
  const MemorySummary ma = memory_from_json(a), mb = memory_from_json(b);
  const nlohmann::json ja = memory_json(ma), jb = memory_json(mb);
  for (const MemoryFactInfo& f : memory_facts()) {
    if (f.fact == MemoryFact::peak_load_by_role) {  // a byte row per role, so each has its delta
      for (int r = 0; r < kRoleCount; ++r) {
        const Role role = static_cast<Role>(r);
        const std::size_t va = ma.peak_load_by_role[static_cast<std::size_t>(r)],
                          vb = mb.peak_load_by_role[static_cast<std::size_t>(r)];
        out.push_back({std::string(f.key) + "." + std::string(to_string(role)), "  of it " + role_label(role),
                       Kind::bytes, va, vb, format_bytes(va), format_bytes(vb)});
      }
      continue;
    }
    // The ratio subtracts; the parking facts are words ("all", "up to 2").
    const Kind kind = fact_bytes(ma, f.fact)                      ? Kind::bytes
                      : f.fact == MemoryFact::competitive_ratio ? Kind::number
                                                                 : Kind::text;
    out.push_back({f.key, f.label, kind, ja.at(f.key), jb.at(f.key), fact_text(ma, f.fact), fact_text(mb, f.fact)});
  }
  for (const RunFigure& r : kRunFigures) {
    const nlohmann::json va = a.value(r.key, nlohmann::json()), vb = b.value(r.key, nlohmann::json());
    out.push_back({r.key, r.label, Kind::number, va, vb, value_text(Kind::number, va), value_text(Kind::number, vb)});
  }
  return out;
}

std::optional<double> delta(const Figure& f) {
  if (f.kind == Kind::text || !f.a.is_number() || !f.b.is_number()) return std::nullopt;
  return f.b.get<double>() - f.a.get<double>();
}
std::optional<double> relative(const Figure& f) {
  const auto d = delta(f);
  if (!d || f.a.get<double>() == 0) return std::nullopt;
  return *d / f.a.get<double>();
}

std::string value_text(Kind kind, const nlohmann::json& v) {
  if (v.is_null()) return "-";
  if (kind == Kind::bytes) return format_bytes(v.get<std::size_t>());
  if (v.is_boolean()) return v.get<bool>() ? "yes" : "no";
  if (v.is_number_integer()) return std::to_string(v.get<long long>());
  if (v.is_number()) {
    char text[32];
    std::snprintf(text, sizeof text, "%.4g", v.get<double>());
    return text;
  }
  return v.is_string() ? v.get<std::string>() : v.dump();
}

std::string delta_text(const Figure& f) {
  const auto d = delta(f);
  if (!d) return f.a == f.b ? "" : "changed";
  if (*d == 0) return "";
  const char* sign = *d > 0 ? "+" : "-";
  if (f.kind == Kind::bytes) return sign + format_bytes(static_cast<std::size_t>(std::fabs(*d)));
  char text[32];
  std::snprintf(text, sizeof text, "%s%.4g", sign, std::fabs(*d));
  return text;
}

std::string relative_text(const Figure& f) {
  const auto r = relative(f);
  if (!r || *r == 0) return "";
  char text[32];
  std::snprintf(text, sizeof text, "%+.1f %%", 100 * *r);
  return text;
}

// The settings (summary.json's "settings": one key per option, app/options/
// run_options.h) whose values differ, and the device each ran on.
std::vector<std::tuple<std::string, nlohmann::json, nlohmann::json>> settings_that_differ(const nlohmann::json& a,
                                                                                         const nlohmann::json& b) {
  std::vector<std::tuple<std::string, nlohmann::json, nlohmann::json>> out;
  const nlohmann::json sa = a.value("settings", nlohmann::json::object()),
                       sb = b.value("settings", nlohmann::json::object());
  std::set<std::string> keys;
  for (const auto& [k, _] : sa.items()) keys.insert(k);
  for (const auto& [k, _] : sb.items()) keys.insert(k);
  for (const std::string& k : keys) {
    const nlohmann::json va = sa.value(k, nlohmann::json()), vb = sb.value(k, nlohmann::json());
    if (va != vb) out.emplace_back(k, va, vb);
  }
  const nlohmann::json da = a.value("device", nlohmann::json()), db = b.value("device", nlohmann::json());
  if (da != db) out.emplace_back("device", da, db);
  return out;
}

std::string plain(const nlohmann::json& v) {
  if (v.is_null()) return "(none)";
  return v.is_string() ? v.get<std::string>() : v.dump();
}

}  // namespace

void diff_runs(const DiffRequest& q, std::ostream& out) {
  const nlohmann::json a = read_run_summary(q.a, false), b = read_run_summary(q.b, false);
  std::vector<Figure> rows;
  try {
    rows = figures(a, b);
  } catch (const nlohmann::json::exception& e) {  // a key holding something else than a summary writes
    throw std::runtime_error("a summary.json of " + q.a.string() + " or " + q.b.string() +
                             " is not a Tidepool run summary: " + e.what());
  }
  const auto differ = settings_that_differ(a, b);

  if (q.json) {
    nlohmann::json j = {{"a", q.a.string()}, {"b", q.b.string()}, {"settings", nlohmann::json::array()},
                        {"figures", nlohmann::json::array()}};
    for (const auto& [option, va, vb] : differ) j["settings"].push_back({{"option", option}, {"a", va}, {"b", vb}});
    for (const Figure& f : rows) {
      const auto d = delta(f), r = relative(f);
      j["figures"].push_back({{"key", f.key},
                              {"label", f.label},
                              {"a", f.a},
                              {"b", f.b},
                              {"delta", d ? nlohmann::json(*d) : nlohmann::json()},
                              {"relative", r ? nlohmann::json(*r) : nlohmann::json()}});
    }
    out << j.dump(2) << '\n';
    return;
  }

  out << "A: " << q.a.string() << "\nB: " << q.b.string() << '\n';
  if (differ.empty())
    out << "settings: the same\n";
  else
    out << "settings that differ:\n";
  for (const auto& [option, va, vb] : differ) out << "  " << option << ": " << plain(va) << " -> " << plain(vb) << '\n';
  char line[256];
  std::snprintf(line, sizeof line, "%-28s %13s %13s %13s %10s\n", "", "A", "B", "B - A", "B / A - 1");
  out << line;
  for (const Figure& f : rows) {
    std::snprintf(line, sizeof line, "%-28s %13s %13s %13s %10s\n", f.label.c_str(), f.a_text.c_str(), f.b_text.c_str(), delta_text(f).c_str(), relative_text(f).c_str());
    out << line;
  }
}

Command add_diff_command(CLI::App& cli) {
  auto q = std::make_shared<DiffRequest>();
  auto* cmd = cli.add_subcommand(
      "diff", "compare two finished run folders: the settings that differ, every memory figure and the speed, "
              "with B - A and B / A - 1");
  cmd->add_option("a", q->a, "the run folder to compare against")->required();
  cmd->add_option("b", q->b, "the run folder compared")->required();
  cmd->add_flag("--json", q->json, "one JSON object: the folders, the settings that differ and every figure");
  return {cmd, [q](bool) {
            diff_runs(*q, std::cout);
            return 0;
          }};
}

}  // namespace tidepool::app
