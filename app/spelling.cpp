#include "app/spelling.h"

#include <algorithm>
#include <cctype>

namespace tidepool::app {

int edit_distance(std::string_view a, std::string_view b) {
  auto same = [](char x, char y) {
    return std::tolower(static_cast<unsigned char>(x)) == std::tolower(static_cast<unsigned char>(y));
  };
  // Optimal string alignment: Levenshtein with neighbour swaps ("veiw").
  const std::size_t n = a.size(), m = b.size();
  std::vector<std::vector<int>> d(n + 1, std::vector<int>(m + 1, 0));
  for (std::size_t i = 0; i <= n; ++i) d[i][0] = static_cast<int>(i);
  for (std::size_t j = 0; j <= m; ++j) d[0][j] = static_cast<int>(j);
  for (std::size_t i = 1; i <= n; ++i)
    for (std::size_t j = 1; j <= m; ++j) {
      const int cost = same(a[i - 1], b[j - 1]) ? 0 : 1;
      d[i][j] = std::min({d[i - 1][j] + 1, d[i][j - 1] + 1, d[i - 1][j - 1] + cost});
      if (i > 1 && j > 1 && same(a[i - 1], b[j - 2]) && same(a[i - 2], b[j - 1]))
        d[i][j] = std::min(d[i][j], d[i - 2][j - 2] + 1);
    }
  return d[n][m];
}

std::string closest(std::string_view word, const std::vector<std::string>& candidates) {
  std::string best;
  // One slip in a short word, two in a longer one: more would guess at
  // words that were never meant ("r20" is a folder, not "tune").
  const int allowed = word.size() <= 3 ? 1 : 2;
  int best_distance = allowed + 1;
  for (const std::string& c : candidates) {
    const int distance = edit_distance(word, c);
    if (distance < best_distance) {
      best = c;
      best_distance = distance;
    }
  }
  return best;
}

}  // namespace tidepool::app
