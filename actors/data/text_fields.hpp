// The pieces the text readers (CSV, libsvm) share for one field: blanks, numbers read
// locale-free, and the field as an error message quotes it.
#pragma once

#include <string>
#include <string_view>

namespace actorps {

inline bool is_blank(char c) { return c == ' ' || c == '\t'; }

/// `s` without the spaces and tabs around it.
std::string_view trim(std::string_view s);

/// from_chars refuses a leading '+', which some writers put before positive numbers: `first`
/// past a single '+' that starts a number.
const char* skip_plus(const char* first, const char* last);

enum class number { ok, not_a_number, not_finite, out_of_range };

/// Parses the whole of `text` as a float, correctly rounded and locale-free. A value too small
/// for a float is zero (as a cast from double would make it); NaN, infinity and values beyond
/// float's range are refused, since one of them silently poisons a model.
number parse_float_field(std::string_view text, float& value);

/// What a message says after the field when parse_float_field refused it, e.g.
/// " is not a finite number".
const char* why_not(number n);

/// The text of a field as a message quotes it: cut short, since it may be binary junk.
std::string quoted(std::string_view text);

} // namespace actorps
