// The terminal's one owner (actors/protocol/console.hpp), on a pipe standing in for the
// terminal (stdout and stderr on the same one, as on a console): the progress line fits the
// width, is never redrawn with carriage returns off a TTY, and a log line never glues onto it.
#include "actors/chief/metrics.hpp"
#include "actors/protocol/console.hpp"

#include <doctest/doctest.h>

#include <cstdlib>
#include <regex>
#include <string>
#include <unistd.h>

using namespace actorps;

namespace {

/// A console whose stdout and stderr are one pipe; text() closes it and reads what came.
struct piped_console {
  int fds[2] = {-1, -1};
  std::unique_ptr<console> out;
  piped_console(bool tty, int width) {
    REQUIRE(pipe(fds) == 0);
    out = std::make_unique<console>(console_sinks{fds[1], fds[1], tty, width});
  }
  ~piped_console() {
    if (fds[0] >= 0) close(fds[0]);
    if (fds[1] >= 0) close(fds[1]);
  }
  std::string text() {
    close(fds[1]);
    fds[1] = -1;
    std::string all;
    char buf[4096];
    for (ssize_t n; (n = read(fds[0], buf, sizeof buf)) > 0;) all.append(buf, std::size_t(n));
    return all;
  }
};

const std::string clear = "\r\033[K";
const std::string long_line(200, 'x');

} // namespace

TEST_CASE("on a TTY the progress line is redrawn in place, cut to the terminal's width") {
  piped_console c(true, 40);
  c.out->progress("short");
  c.out->progress(long_line);
  c.out->end_progress();
  CHECK(c.text() == clear + "short" + clear + std::string(39, 'x') + "\n");
}

TEST_CASE("off a TTY the progress line is whole lines, with no carriage return") {
  piped_console c(false, 40);
  c.out->progress("clock 10");
  c.out->progress(long_line);  // not cut: a file or a pipe has no width
  c.out->end_progress();       // nothing on screen to end
  auto text = c.text();
  CHECK(text == "clock 10\n" + long_line + "\n");
  CHECK(text.find('\r') == std::string::npos);
}

TEST_CASE("a log line printed while the progress line is on screen never glues onto it") {
  piped_console c(true, 80);
  c.out->progress("clock 10");
  c.out->log(log_level::warn, "chief", "worker:1 lost");
  c.out->end_progress();
  auto text = c.text();
  // the progress line, cleared; the log line alone on its line; the progress line again
  std::regex shape("\r\033\\[Kclock 10\r\033\\[K[0-9TZ:.-]+ WARN chief: worker:1 lost\nclock 10\n");
  CHECK_MESSAGE(std::regex_match(text, shape), text);
}

TEST_CASE("log lines carry a UTC timestamp with milliseconds and their level") {
  piped_console c(false, 0);
  c.out->log(log_level::info, "ps:0", "serving");
  c.out->log(log_level::error, "worker:1", "cannot read the data");
  auto text = c.text();
  std::regex shape("[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}\\.[0-9]{3}Z INFO ps:0: "
                   "serving\n"
                   "[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}\\.[0-9]{3}Z ERROR "
                   "worker:1: cannot read the data\n");
  CHECK_MESSAGE(std::regex_match(text, shape), text);
}

TEST_CASE("the log level leaves out the levels after it") {
  piped_console c(false, 0);
  c.out->set_level(log_level::warn);
  CHECK(c.out->logs(log_level::error));
  CHECK(c.out->logs(log_level::warn));
  CHECK_FALSE(c.out->logs(log_level::info));
  c.out->log(log_level::info, "chief", "hidden");
  c.out->log(log_level::debug, "chief", "hidden too");
  c.out->log(log_level::warn, "chief", "shown");
  auto text = c.text();
  CHECK(text.find("hidden") == std::string::npos);
  CHECK(text.find("WARN chief: shown\n") != std::string::npos);
}

TEST_CASE("--log-level values parse, and nothing else does") {
  CHECK(parse_log_level("error") == log_level::error);
  CHECK(parse_log_level("warn") == log_level::warn);
  CHECK(parse_log_level("info") == log_level::info);
  CHECK(parse_log_level("debug") == log_level::debug);
  CHECK_FALSE(parse_log_level("INFO"));
  CHECK_FALSE(parse_log_level("verbose"));
}

TEST_CASE("without a terminal to ask, the width is COLUMNS, else 80") {
  piped_console c(true, 0);  // a pipe: TIOCGWINSZ fails
  const char* saved = std::getenv("COLUMNS");
  std::string keep = saved ? saved : "";
  setenv("COLUMNS", "50", 1);
  CHECK(c.out->width() == 50);
  unsetenv("COLUMNS");
  CHECK(c.out->width() == 80);
  if (saved) setenv("COLUMNS", keep.c_str(), 1);
}

TEST_CASE("the chief's progress line draws through the console: off a TTY only important lines") {
  piped_console c(false, 0);
  progress_line line(true, *c.out);
  CHECK_FALSE(line.due(false));
  line.show("every clock", false);
  line.show("an evaluation", true);
  line.finish();
  CHECK(c.text() == "an evaluation\n");
}
