#!/usr/bin/env bash
# README names only what the repository has, and its commands write nothing git would see:
# 1. every repository path it mentions (a path under a top-level folder of the repository, or
#    a file named with a source or script extension) is tracked by git; absolute paths (the
#    host's) are not the repository's;
# 2. every relative output of its commands (--export-dir, --metrics, --checkpoint-dir, -o, ...)
#    is ignored by .gitignore, so that a run's outputs never show up as sources.
# usage: tests/readme_paths_test.sh [README]
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
readme=${1:-$root/README.md}
python=$(command -v /usr/bin/python3 || command -v python3)
"$python" - "$root" "$readme" <<'PY'
import os, re, subprocess, sys
root, readme = sys.argv[1], sys.argv[2]
tracked = subprocess.run(["git", "-C", root, "ls-files"], capture_output=True, text=True).stdout.split()
top = {p.split("/")[0] for p in tracked if "/" in p}
names = {os.path.basename(p) for p in tracked}
# what a clone has: the tracked files and their folders (a file only this checkout holds is not)
known = set(tracked) | {os.path.dirname(p)[:i] for p in tracked
                        for i in range(len(os.path.dirname(p)) + 1)
                        if os.path.dirname(p)[i:i + 1] in ("", "/")}
exts = (".cpp", ".hpp", ".cu", ".sh", ".py", ".md")  # run outputs (model.capnp) are not
missing = []
for lineno, line in enumerate(open(readme, encoding="utf-8"), 1):
    for m in re.finditer(r"(?<![\w/.~$-])[A-Za-z0-9_.-]+(?:/[A-Za-z0-9_.-]*)*", line):
        token = m.group(0).rstrip(".")
        if any(c in line[m.end():m.end() + 1] for c in "*<{"):  # a pattern, not a path
            continue
        first = token.split("/")[0]
        if "/" in token and first in top:
            if token.rstrip("/") not in known:
                missing.append(f"{lineno}: {token}")
        elif "/" not in token and token.endswith(exts) and token not in names:
            missing.append(f"{lineno}: {token}")
outputs = re.compile(r"(?:^|\s)(?:--export-dir|--metrics|--checkpoint-dir|--keep-cluster|--out|"
                     r"--output|-o)[ =]([^\s`|]+)")
in_code = False
for lineno, line in enumerate(open(readme, encoding="utf-8"), 1):
    if line.startswith("```"):
        in_code = not in_code
        continue
    if not in_code:
        continue
    for value in outputs.findall(line):
        if value.startswith(("/", "$", "~")) or value.isupper():  # the host's, or a placeholder
            continue
        probe = value if "." in os.path.basename(value) else value.rstrip("/") + "/x"
        ignored = subprocess.run(["git", "-C", root, "check-ignore", "-q", "--no-index", probe])
        if ignored.returncode != 0:
            missing.append(f"{lineno}: {value} (a run output git does not ignore)")
if missing:
    print(f"{readme} names paths the repository does not have, or outputs git would see:")
    print("\n".join(f"  line {m}" for m in missing))
    sys.exit(1)
print(f"every repository path {os.path.basename(readme)} names exists; its outputs are ignored")
PY
