#!/usr/bin/env bash
# Links this checkout's commands (pykubelet, pykubectl, pycni, pysched, from .venv/bin)
# into a directory on PATH (default /usr/local/bin), so they work without activating the
# virtualenv. A link is replaced only when it is a symlink into some .venv/bin (this or
# another checkout); a regular file or another link of that name is left alone, with a
# warning. Idempotent; scripts/install.sh runs it.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
dest="${1:-/usr/local/bin}"
mkdir -p "$dest"
for cmd in pykubelet pykubectl pycni pysched; do
  src="$here/.venv/bin/$cmd"
  [ -x "$src" ] || { echo "link-commands.sh: $src is missing (run scripts/install.sh)" >&2; exit 1; }
  link="$dest/$cmd"
  if [ -e "$link" ] || [ -L "$link" ]; then
    current="$(readlink "$link" || true)"
    if [ "$current" = "$src" ]; then
      continue
    fi
    case "$current" in
      */.venv/bin/"$cmd") ;;  # another checkout's: this one takes over
      *) echo "link-commands.sh: $link exists and is not ours; left as it is" >&2; continue ;;
    esac
  fi
  ln -sfn "$src" "$link"
done
