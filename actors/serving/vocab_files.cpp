#include "actors/serving/vocab_files.hpp"

#include <charconv>
#include <stdexcept>

namespace actorps {

namespace {

constexpr std::string_view header = "key\trow";

/// A decimal unsigned integer that is all of `text`.
template <class T>
bool parse_whole(std::string_view text, T& out) {
  const auto* end = text.data() + text.size();
  auto [at, err] = std::from_chars(text.data(), end, out);
  return err == std::errc() && at == end && !text.empty();
}

} // namespace

std::string vocab_file_name(std::size_t field) {
  return std::string(vocab_dir_name) + "/C" + std::to_string(field + 1) + ".tsv";
}

std::string vocab_file_text(const std::vector<uint64_t>& keys) {
  std::string out(header);
  out += '\n';
  out.reserve(out.size() + keys.size() * 28);
  for (std::size_t i = 0; i < keys.size(); ++i) {
    out += std::to_string(keys[i]);
    out += '\t';
    out += std::to_string(i + 1);
    out += '\n';
  }
  return out;
}

std::vector<uint64_t> parse_vocab_file(const std::string& text, const std::string& origin) {
  std::vector<uint64_t> keys;
  std::size_t pos = 0, line = 0;
  while (pos < text.size()) {
    auto end = text.find('\n', pos);
    if (end == std::string::npos) end = text.size();
    const std::string_view got(text.data() + pos, end - pos);
    pos = end + 1;
    ++line;
    auto fail = [&](const std::string& what) {
      return std::invalid_argument(origin + ":" + std::to_string(line) + ": " + what);
    };
    if (line == 1) {
      if (got != header) throw fail("expected the header 'key<TAB>row'");
      continue;
    }
    const auto tab = got.find('\t');
    uint64_t key = 0, row = 0;
    if (tab == std::string_view::npos || !parse_whole(got.substr(0, tab), key)
        || !parse_whole(got.substr(tab + 1), row))
      throw fail("not 'key<TAB>row' in decimal");
    if (row != keys.size() + 1)
      throw fail("row " + std::to_string(row) + ", expected " + std::to_string(keys.size() + 1));
    if (!keys.empty() && key <= keys.back()) throw fail("keys not ascending");
    keys.push_back(key);
  }
  if (line == 0) throw std::invalid_argument(origin + ": empty, expected the header 'key<TAB>row'");
  return keys;
}

} // namespace actorps
