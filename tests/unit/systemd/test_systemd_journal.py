"""journald's level prefixes, and knowing when stderr is the journal."""

from __future__ import annotations

import logging
import os
from pathlib import Path

from pykubelet.systemd.journal import JournalFormatter, priority, writes_to_journal


def test_levels_become_syslog_priorities() -> None:
    assert [priority(lv) for lv in (logging.CRITICAL, logging.ERROR, logging.WARNING,
                                    logging.INFO, logging.DEBUG)] == [2, 3, 4, 6, 7]


def test_every_line_keeps_its_priority() -> None:
    rec = logging.LogRecord("pykubelet.kubelet", logging.ERROR, __file__, 1,
                            "sync failed\nsecond line", None, None)
    assert JournalFormatter().format(rec) == (
        "<3>pykubelet.kubelet: sync failed\n<3>second line")


def test_stderr_is_the_journal_only_when_dev_and_inode_match(tmp_path: Path) -> None:
    f = (tmp_path / "stream").open("w")
    st = os.fstat(f.fileno())
    assert writes_to_journal(f, {"JOURNAL_STREAM": f"{st.st_dev}:{st.st_ino}"})
    assert not writes_to_journal(f, {"JOURNAL_STREAM": f"{st.st_dev}:{st.st_ino + 1}"})
    assert not writes_to_journal(f, {})
    f.close()
