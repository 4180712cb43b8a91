// suggest.h: "did you mean" for a mistyped word among known ones: rule ids, subcommands, config
// keys (internal).
#pragma once

#include <algorithm>
#include <string>
#include <vector>

namespace headcount {

// Edit distance between two words, hyphens and underscores ignored: "max_params" is "max-params".
inline size_t edit_distance(std::string a, std::string b) {
  auto strip = [](std::string& s) { s.erase(std::remove_if(s.begin(), s.end(), [](char c) { return c == '-' || c == '_'; }), s.end()); };
  strip(a);
  strip(b);
  std::vector<size_t> row(b.size() + 1);
  for (size_t j = 0; j <= b.size(); ++j) row[j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    size_t diag = row[0];
    row[0] = i;
    for (size_t j = 1; j <= b.size(); ++j) {
      size_t up = row[j];
      row[j] = std::min({row[j] + 1, row[j - 1] + 1, diag + (a[i - 1] == b[j - 1] ? 0 : 1)});
      diag = up;
    }
  }
  return row[b.size()];
}

// Up to three candidates nearest to `word` ("'a', 'b' or 'c'"), else the ones containing it; "" when
// none is near.
inline std::string did_you_mean(const std::string& word, const std::vector<std::string>& candidates) {
  // The nearest candidates within a third of the word's length (at least 2 edits).
  std::vector<std::string> close, containing;
  const size_t limit = std::max<size_t>(2, word.size() / 3);
  size_t best = limit + 1;
  for (const auto& c : candidates) best = std::min(best, edit_distance(word, c));
  for (const auto& c : candidates) {
    if (best <= limit && edit_distance(word, c) == best) close.push_back(c);
    else if (word.size() >= 3 && c.find(word) != std::string::npos) containing.push_back(c);
  }
  const auto& pick = close.empty() ? containing : close;
  std::string out;
  for (size_t i = 0; i < pick.size() && i < 3; ++i) {
    if (i) out += i + 1 == std::min<size_t>(pick.size(), 3) ? " or " : ", ";
    out += "'" + pick[i] + "'";
  }
  return out;
}

}  // namespace headcount
