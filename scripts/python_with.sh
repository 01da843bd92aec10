# Sourced by scripts that need Python: `python=$(python_with matplotlib)` prints the first
# python3 that can import the module ($PYTHON, python3 on PATH, then Debian's /usr/bin/python3:
# a pyenv/venv python3 first on PATH often lacks Debian's python3-matplotlib), or nothing.
python_with() {
  local p
  for p in "${PYTHON:-}" python3 /usr/bin/python3; do
    if [ -n "$p" ] && command -v "$p" > /dev/null && "$p" -c "import $1" 2> /dev/null; then
      echo "$p"
      return 0
    fi
  done
  return 1
}
