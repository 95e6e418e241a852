// How an option's text becomes a value, for every command's options: a
// number checked against its range as it is read, a word from an enum's
// table, a size with its unit. Each refuses bad text naming the option and
// what it accepts ("--lr: must be a finite number, not nan"), with a guess
// at a misspelt word ("--mode al: ... did you mean 'all'?").
#pragma once

#include <CLI/CLI.hpp>

#include <charconv>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <limits>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <vector>

#include "app/spelling.h"
#include "engine/core/bytes_text.h"
#include "engine/core/choices.h"

namespace tidepool::app {

// Ranges of the numeric options beyond "at least": a batch of a million
// images is far beyond any device's memory and keeps the plan's byte
// counts well inside 64 bits; a million epochs keeps the iteration count
// there too; more compression threads than 256 only wait for each other;
// a window's side from what ImGui can lay out to what a GPU can draw.
inline constexpr std::int64_t kMostBatch = 1 << 20, kMostEpochs = 1'000'000;
inline constexpr int kMostRanks = 1 << 16;  // more processes than any MPI job this tool will see
inline constexpr int kMostCompressThreads = 256;
inline constexpr int kLeastWidth = 320, kLeastHeight = 240, kMostWindow = 16384;

// A number as the user would write it back: integers in full, floats in
// the fewest digits that read back the same value (0.1f is "0.1").
template <typename T>
std::string number_text(T v) {
  if constexpr (std::is_integral_v<T>) {
    return std::to_string(v);
  } else {
    char text[40];
    const auto [end, error] = std::to_chars(text, text + sizeof text, v);
    return error == std::errc() ? std::string(text, end) : std::string("?");
  }
}

// The one check of every numeric option: its text must be a decimal number
// of the option's type, finite, from `least` to `most`, or the command line
// is refused naming the option and the text (CLI11 adds the option's
// name). The number is handed on in canonical form, because CLI11's own
// conversion reads "010" as octal, "-1" as 2^64 - 1 for an unsigned option
// and saturates on overflow: what it converts is then exactly what was
// checked.
template <typename T>
CLI::Validator number(T least, T most = std::numeric_limits<T>::max()) {
  const bool bounded = most != std::numeric_limits<T>::max();
  return CLI::Validator(
      [least, most](std::string& text) -> std::string {
        const char* first = text.data() + (text.size() > 1 && text[0] == '+');  // from_chars takes no '+'
        const char* end = text.data() + text.size();
        T v{};
        const auto [stop, error] = std::from_chars(first, end, v);
        if (error == std::errc::result_out_of_range)
          return text + (std::is_integral_v<T>       ? " is too large a number"
                         : std::is_same_v<T, float> ? " is outside a 32-bit float's range"
                                                    : " is outside a double's range");
        if (std::is_unsigned_v<T> && !text.empty() && text[0] == '-')
          return "must be at least " + number_text(least) + ", not " + text;
        if (error != std::errc() || stop != end)
          return std::string("must be ") + (std::is_integral_v<T> ? "a whole number" : "a number") + ", not " + text;
        if constexpr (std::is_floating_point_v<T>)
          if (!std::isfinite(v)) return "must be a finite number, not " + text;
        if (v < least) return "must be at least " + number_text(least) + ", not " + text;
        if (v > most) return "must be at most " + number_text(most) + ", not " + text;
        if constexpr (std::is_floating_point_v<T>) {
          char exact[40];  // every digit CLI11's conversion needs to read back the same value
          std::snprintf(exact, sizeof exact, "%.*g", std::is_same_v<T, float> ? 9 : 17, static_cast<double>(v));
          text = exact;
        } else {
          text = number_text(v);
        }
        return {};
      },
      bounded                                    ? number_text(least) + " to " + number_text(most)
      : least == std::numeric_limits<T>::lowest() ? std::string()  // any (a seed)
                                                  : "at least " + number_text(least));
}

// A word of an enum's table (engine/core/choices.h), or std::invalid_argument
// naming the valid ones and, for a slip, the one probably meant.
template <HasChoices E>
E choice_from_text(const std::string& text, const std::string& what) {
  try {
    return parse_choice<E>(text, what);
  } catch (const std::invalid_argument& e) {
    std::vector<std::string> names;
    for (const Choice<E>& c : choices(E{})) names.emplace_back(c.name);
    const std::string guess = closest(text, names);
    if (guess.empty()) throw;
    throw std::invalid_argument(std::string(e.what()) + "; did you mean '" + guess + "'?");
  }
}

// An option whose words come from an enum's table: the help lists them.
template <HasChoices E>
CLI::Option* add_choice(CLI::App& cli, const std::string& flag, E& value, const std::string& what,
                        const std::string& help) {
  return cli
      .add_option_function<std::string>(
          flag, [&value, what](const std::string& text) { value = choice_from_text<E>(text, what); },
          help + ": " + choice_help<E>())
      ->default_str(to_string(value))
      ->type_name("WORD");
}

// A size: bytes, or with a unit (engine/core/bytes_text.h).
inline CLI::Option* add_size(CLI::App& cli, const std::string& flag, std::size_t& bytes, const std::string& help) {
  return cli
      .add_option_function<std::string>(
          flag,
          [&bytes, flag](const std::string& text) {
            try {
              bytes = parse_bytes(text);
            } catch (const std::invalid_argument& e) {
              throw CLI::ValidationError(flag, e.what());
            }
          },
          help)
      ->type_name("SIZE");
}

}  // namespace tidepool::app
