#!/usr/bin/env bash
# The coverage-guided fuzzers (issue 29 item 3), an opt-in job: every target of
# bench/fuzz_bench.py for SECONDS (default 60) each, then its report (executions, coverage,
# crashes with the crashing input's file). Exits non-zero when a target crashed.
# Needs atheris: `.venv/bin/pip install -e '.[fuzz]'` (a wheel for CPython 3.11 on x86-64).
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$here"
seconds="${1:-${FUZZ_SECONDS:-60}}"
if ! .venv/bin/python -c 'import atheris' 2>/dev/null; then
  .venv/bin/pip install -q --disable-pip-version-check -e '.[fuzz]'
fi
exec .venv/bin/python bench/fuzz_bench.py --all --seconds "$seconds" ${FUZZ_OUT:+--out "$FUZZ_OUT"}
