#include "actors/data/text_fields.hpp"

#include <charconv>
#include <cmath>
#include <system_error>

namespace actorps {

std::string_view trim(std::string_view s) {
  while (!s.empty() && is_blank(s.front())) s.remove_prefix(1);
  while (!s.empty() && is_blank(s.back())) s.remove_suffix(1);
  return s;
}

const char* skip_plus(const char* first, const char* last) {
  return last - first > 1 && first[0] == '+' && first[1] != '+' && first[1] != '-' ? first + 1
                                                                                     : first;
}

number parse_float_field(std::string_view text, float& value) {
  const char* last = text.data() + text.size();
  const auto [ptr, ec] = std::from_chars(skip_plus(text.data(), last), last, value);
  if (ptr != last || text.empty()) return number::not_a_number;
  if (ec == std::errc::result_out_of_range) {
    // Too small for a float is zero, as a cast from double would make it; too large is refused.
    double wide = 0;
    if (std::from_chars(skip_plus(text.data(), last), last, wide).ec != std::errc() ||
        std::fabs(wide) >= 1)
      return number::out_of_range;
    value = static_cast<float>(wide);
    return number::ok;
  }
  if (ec != std::errc()) return number::not_a_number;
  return std::isfinite(value) ? number::ok : number::not_finite;
}

const char* why_not(number n) {
  switch (n) {
    case number::not_finite: return " is not a finite number";
    case number::out_of_range: return " is out of float range";
    case number::not_a_number:
    case number::ok:  // (not asked)
      break;
  }
  return " is not a number";
}

std::string quoted(std::string_view text) {
  constexpr size_t shown = 40;
  return "'" + std::string(text.substr(0, shown)) + (text.size() > shown ? "...'" : "'");
}

} // namespace actorps
