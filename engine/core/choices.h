// One table per settings enum: its values, their names and a line of help
// each. The table drives everything that names a value: to_string, parsing
// (with an error that lists the valid names), the command line's help and
// the window's combo boxes, so a new value is added in one place.
//
//   enum class TransferMode { sync, async };
//   inline constexpr Choice<TransferMode> kTransferModes[] = {
//       {TransferMode::sync, "sync", "vDNN: each layer ends when its transfers do"}, ...};
//   constexpr std::span<const Choice<TransferMode>> choices(TransferMode) { return kTransferModes; }
//
//   to_string(TransferMode::async)              // "async"
//   parse_choice<TransferMode>("sync", "transfer semantics")
#pragma once

#include <span>
#include <stdexcept>
#include <string>
#include <string_view>

namespace tidepool {

template <class E>
struct Choice {
  E value;
  const char* name;
  const char* help;
};

// An enum with a table: `choices(E)` found by argument-dependent lookup.
template <class E>
concept HasChoices = std::is_enum_v<E> && requires(E e) {
  { choices(e) } -> std::convertible_to<std::span<const Choice<E>>>;
};

template <HasChoices E>
const char* to_string(E value) {
  for (const Choice<E>& c : choices(E{}))
    if (c.value == value) return c.name;
  return "?";
}

// "a, b, c"
template <HasChoices E>
std::string choice_names() {
  std::string names;
  for (const Choice<E>& c : choices(E{})) names += (names.empty() ? "" : ", ") + std::string(c.name);
  return names;
}

// "a (what a does), b (what b does)", for help texts.
template <HasChoices E>
std::string choice_help() {
  std::string help;
  for (const Choice<E>& c : choices(E{}))
    help += (help.empty() ? "" : ", ") + std::string(c.name) + (*c.help ? " (" + std::string(c.help) + ")" : "");
  return help;
}

// Throws std::invalid_argument "unknown <what> '<text>' (valid: ...)".
template <HasChoices E>
E parse_choice(std::string_view text, std::string_view what) {
  for (const Choice<E>& c : choices(E{}))
    if (text == c.name) return c.value;
  throw std::invalid_argument("unknown " + std::string(what) + " '" + std::string(text) +
                              "' (valid: " + choice_names<E>() + ")");
}

}  // namespace tidepool
