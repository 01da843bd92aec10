#include "kernels/sparse/parallel_parts.hpp"

#include <algorithm>
#include <exception>
#include <thread>
#include <vector>

namespace actorps {

std::size_t parts_for(std::size_t n, std::size_t most) {
  std::size_t parts = std::max<std::size_t>(1, n / min_keys_per_part);
  parts = std::min<std::size_t>(parts, std::max(1u, std::thread::hardware_concurrency()));
  if (most > 0) parts = std::min(parts, most);
  return parts;
}

void run_in_parts(std::size_t n, std::size_t parts, const part_work& work) {
  parts = std::max<std::size_t>(parts, 1);
  const auto begin_of = [&](std::size_t part) {
    return n / parts * part + std::min(part, n % parts);
  };
  std::vector<std::exception_ptr> failed(parts);
  const auto run = [&](std::size_t part) {
    try {
      work(part, begin_of(part), begin_of(part + 1));
    } catch (...) {
      failed[part] = std::current_exception();
    }
  };
  std::vector<std::thread> helpers;
  std::size_t started = 1;  // pieces 1 … started − 1 have a thread of their own
  try {
    helpers.reserve(parts - 1);
    for (; started < parts; ++started) helpers.emplace_back(run, started);
  } catch (const std::exception&) {
    // No thread to be had (std::system_error) or no room for one: the rest run here.
  }
  run(0);
  for (std::size_t part = started; part < parts; ++part) run(part);
  for (auto& t : helpers) t.join();
  for (const auto& e : failed)
    if (e) std::rethrow_exception(e);
}

} // namespace actorps
