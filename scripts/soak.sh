#!/usr/bin/env bash
# The cluster soak (issue 29 item 2), an opt-in job that CI does not run: bench/soak.py on
# a 3-node lab for CYCLES create/delete cycles (default 500, 4 at a time, after 40 warm-up
# cycles: about 35 minutes here), then
# its report: the census of the lab's kernel objects before and after, every daemon's RSS
# after warm-up and after the soak, the store's size at the start and after compaction.
# Exits non-zero when a check failed. As root; on a machine shared with other root tests,
# under their lock: `flock /tmp/pykube-root-tests.lock scripts/soak.sh 100`.
# SOAK_REPORT=FILE also writes the report to FILE.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$here"
cycles="${1:-${SOAK_CYCLES:-500}}"
exec .venv/bin/python bench/soak.py --cycles "$cycles" --parallel "${SOAK_PARALLEL:-4}" \
  ${SOAK_REPORT:+--report "$SOAK_REPORT"}
