#!/usr/bin/env bash
# Runs the whole test suite as root: lint, unit tests and the root-marked
# integration tests against the real kernel, runc and iptables.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$here"
"$here/scripts/install.sh"
.venv/bin/ruff check .
# strict types on the modules listed in pyproject.toml [tool.mypy] files
.venv/bin/mypy
# The root suite must really run here: a skipped root test is an error.
export PYKUBE_REQUIRE_ROOT=1
exec .venv/bin/python -m pytest -q -p no:cacheprovider "$@"
