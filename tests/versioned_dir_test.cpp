// The versioned export directory: numbers count up from the largest one there, a version
// appears only when published and never replaces anything, and an unpublished staging leaves
// nothing behind.
#include "actors/serving/file_bytes.hpp"
#include "actors/serving/versioned_dir.hpp"

#include "tests/scratch_dir.hpp"

#include <doctest/doctest.h>

#include <filesystem>
#include <fstream>
#include <set>
#include <string>
#include <sys/stat.h>

namespace actorps {
namespace {

namespace fs = std::filesystem;
using test::dir_entries;

uint64_t publish_one(const std::string& root, const std::string& text) {
  staged_version v(root);
  v.write_file("a.txt", text);
  return v.publish();
}

} // namespace

TEST_CASE("versioned dir: versions 1, 2, 3 with their files, the root created on first use") {
  test::scratch_dir scratch;
  const std::string root = scratch.path + "/nested/export";
  CHECK(latest_version(root) == 0);
  CHECK(publish_one(root, "one") == 1);
  CHECK(publish_one(root, "two") == 2);
  staged_version v(root);
  v.write_file("a.txt", "three");
  v.write_file("b.bin", std::string("\0\1\2", 3));
  CHECK(v.path().find(root + "/.tmp-3-") == 0);  // written under a temporary sibling name
  CHECK(v.publish() == 3);
  CHECK(v.path() == root + "/3");
  CHECK(dir_entries(root) == std::set<std::string>{"1", "2", "3"});
  CHECK(read_file_bytes(root + "/1/a.txt") == "one");
  CHECK(read_file_bytes(root + "/3/b.bin") == std::string("\0\1\2", 3));
  CHECK(latest_version(root) == 3);
}

TEST_CASE("versioned dir: the next version follows the largest numbered directory only") {
  test::scratch_dir scratch;
  const std::string root = scratch.path;
  for (const char* d : {"2", "17", "007", "9x", ".tmp-40-1", "-5"})
    fs::create_directory(root + "/" + d);
  std::ofstream(root + "/99") << "a file, not a version";
  CHECK(latest_version(root) == 17);
  CHECK(publish_one(root, "x") == 18);
  CHECK(read_file_bytes(root + "/18/a.txt") == "x");
}

TEST_CASE("versioned dir: a number taken meanwhile is never replaced, not even an empty one") {
  test::scratch_dir scratch;
  const std::string root = scratch.path;
  fs::create_directory(root + "/staged");
  std::ofstream(root + "/staged/a.txt") << "new";
  fs::create_directory(root + "/1");          // empty: a plain rename(2) would replace it
  fs::create_directory(root + "/2");
  std::ofstream(root + "/2/a.txt") << "old";
  std::ofstream(root + "/3") << "a file";
  CHECK(rename_to_free_version(root + "/staged", root, 1) == 4);
  CHECK(fs::is_empty(root + "/1"));
  CHECK(read_file_bytes(root + "/2/a.txt") == "old");
  CHECK(read_file_bytes(root + "/3") == "a file");
  CHECK(read_file_bytes(root + "/4/a.txt") == "new");
  CHECK(!fs::exists(root + "/staged"));
}

TEST_CASE("versioned dir: an unpublished staging removes its temporary directory") {
  test::scratch_dir scratch;
  const std::string root = scratch.path;
  publish_one(root, "kept");
  {
    staged_version v(root);
    v.write_file("half.txt", "written, never published");
    CHECK(fs::exists(v.path() + "/half.txt"));
    CHECK(dir_entries(root).size() == 2);
  }
  CHECK(dir_entries(root) == std::set<std::string>{"1"});
  staged_version v(root);
  v.write_file("a.txt", "x");
  CHECK_THROWS_AS(v.write_file("a.txt", "again"), versioned_dir_error);  // files are new
}

TEST_CASE("versioned dir: a root that cannot be a directory is refused, naming it") {
  test::scratch_dir scratch;
  const std::string file = scratch.path + "/plain";
  std::ofstream(file) << "not a directory";
  for (const std::string& root : {file, file + "/below"}) {
    CAPTURE(root);
    try {
      staged_version v(root);
      FAIL("no error");
    } catch (const versioned_dir_error& e) {
      const std::string msg = e.what();
      CHECK(msg.find(root + ": ") == 0);
    }
  }
  CHECK(dir_entries(scratch.path) == std::set<std::string>{"plain"});
}

} // namespace actorps
