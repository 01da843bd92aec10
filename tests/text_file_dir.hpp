// A scratch directory for the text readers' tests: files written from a string as they are, or
// gzip-compressed.
#pragma once

#include "tests/scratch_dir.hpp"

#include <doctest/doctest.h>
#include <zlib.h>

#include <fstream>
#include <string>

namespace actorps::test {

struct text_file_dir : scratch_dir {
  explicit text_file_dir(const std::string& prefix) : scratch_dir(prefix) {}

  /// Writes `text` to `name` in this directory as it is; returns the path.
  std::string plain(const std::string& name, const std::string& text) const {
    const std::string file = path + "/" + name;
    std::ofstream(file, std::ios::binary) << text;
    return file;
  }

  /// Writes `text` gzip-compressed to `name` in this directory; returns the path.
  std::string gzip(const std::string& name, const std::string& text) const {
    const std::string file = path + "/" + name;
    gzFile f = gzopen(file.c_str(), "wb");
    REQUIRE(f != nullptr);
    REQUIRE(gzwrite(f, text.data(), static_cast<unsigned>(text.size())) ==
            static_cast<int>(text.size()));
    REQUIRE(gzclose(f) == Z_OK);
    return file;
  }
};

} // namespace actorps::test
