// "Did you mean": the word a user most likely meant, for misspelt
// subcommands, options and choice values (app/cli.cpp).
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace tidepool::app {

// The case-insensitive edit distance (insertions, deletions, substitutions
// and swaps of two neighbours, each 1) between two words.
int edit_distance(std::string_view a, std::string_view b);

// The candidate nearest to `word`, if it is near enough to be a slip: one
// edit for a word of up to 3 letters, two for a longer one; "" otherwise.
// Ties go to the earlier candidate.
std::string closest(std::string_view word, const std::vector<std::string>& candidates);

}  // namespace tidepool::app
