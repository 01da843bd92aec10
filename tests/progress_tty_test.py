#!/usr/bin/env python3
"""The progress line as a person sees it: `actorps simulate` on a 60-column pseudo-terminal, with
a planned kill so that log lines come while the progress line is on screen.

- every redraw of the progress line fits in the terminal (at most 59 columns: filling the last
  one makes some terminals wrap);
- no log line glues onto it: a log line starts a line, or follows the sequence that clears it;
- the summary starts on a line of its own;
- the same run on a pipe has no carriage return at all.

usage: tests/progress_tty_test.py path/to/actorps
"""
import fcntl
import os
import pty
import re
import struct
import subprocess
import sys
import termios

COLUMNS = 60
ARGS = ["simulate", "--dataset", "synthetic", "--model", "784-32-10", "--steps", "400",
        "--eval-every", "50", "--synthetic-rows", "4096", "--synthetic-test-rows", "512",
        "--kill", "worker:1@clock=100", "--slow", "worker:0=2"]
STAMP = re.compile(rb"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z (ERROR|WARN|INFO|DEBUG) ")
CLEAR = b"\r\x1b[K"


def fail(why: str, output: bytes) -> None:
    print(f"FAIL: {why}\n--- output:\n{output.decode(errors='replace')}", file=sys.stderr)
    sys.exit(1)


def run_on_tty(binary: str) -> bytes:
    master, slave = pty.openpty()
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 24, COLUMNS, 0, 0))
    env = dict(os.environ)
    env.pop("COLUMNS", None)  # the terminal's own width must be the one used
    proc = subprocess.Popen([binary, *ARGS], stdin=subprocess.DEVNULL, stdout=slave,
                            stderr=slave, env=env, close_fds=True)
    os.close(slave)
    out = b""
    while True:
        try:
            chunk = os.read(master, 65536)
        except OSError:  # EIO: every writer has closed the terminal
            break
        if not chunk:
            break
        out += chunk
    os.close(master)
    if proc.wait(timeout=120) != 0:
        fail(f"actorps exited {proc.returncode}", out)
    return out.replace(b"\r\n", b"\n")  # the terminal's own newline translation


def main() -> None:
    binary = sys.argv[1]
    out = run_on_tty(binary)
    if b"epoch" not in out:
        fail("no progress line on the terminal", out)
    if not STAMP.search(out):
        fail("no log line (the planned kill should log)", out)
    # every drawing of the progress line: from a clear to the next control character (a log
    # line may follow a clear too: it is not the progress line, and wraps as it must)
    for m in re.finditer(rb"\r\x1b\[K([^\r\n]*)", out):
        if len(m.group(1)) > COLUMNS - 1 and not STAMP.match(m.group(1)):
            fail(f"a progress line of {len(m.group(1))} columns on a {COLUMNS}-column terminal:"
                 f" {m.group(1)!r}", out)
    for m in STAMP.finditer(out):
        before = out[max(0, m.start() - len(CLEAR)):m.start()]
        if m.start() > 0 and not before.endswith(b"\n") and before != CLEAR:
            fail(f"a log line glued onto other output: {out[max(0, m.start() - 40):m.end()]!r}",
                 out)
    at = out.find(b"summary:")
    if at < 0 or (at > 0 and out[at - 1:at] != b"\n"):
        fail("the summary does not start on a line of its own", out)

    piped = subprocess.run([binary, *ARGS], capture_output=True, timeout=120)
    if piped.returncode != 0:
        fail(f"actorps on a pipe exited {piped.returncode}", piped.stdout + piped.stderr)
    if b"\r" in piped.stdout + piped.stderr:
        fail("a carriage return on a pipe", piped.stdout + piped.stderr)
    print("PASS: the progress line fits 60 columns, no log line glues onto it, no \\r off a TTY")


if __name__ == "__main__":
    main()
