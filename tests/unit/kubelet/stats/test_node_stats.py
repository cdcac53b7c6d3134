"""The node's usage read from a root cgroup tree laid out as v1 and as v2."""

from __future__ import annotations

from pathlib import Path

from pykubelet.kubelet.stats.node_stats import (
    parse_flat_keyed,
    parse_meminfo,
    read_node_usage,
    working_set,
)


def test_flat_keyed_files_are_read_as_ints() -> None:
    text = "usage_usec 1500\nuser_usec 1000\nnr_periods 0\nbogus\nkey -\n"
    assert parse_flat_keyed(text) == {"usage_usec": 1500, "user_usec": 1000, "nr_periods": 0}


def test_meminfo_is_in_bytes() -> None:
    text = "MemTotal:       16318484 kB\nMemFree:         1000000 kB\nHugePages_Total:       0\n"
    assert parse_meminfo(text) == {"MemTotal": 16318484 * 1024, "MemFree": 1000000 * 1024,
                                   "HugePages_Total": 0}


def test_working_set_is_usage_less_inactive_file_never_negative() -> None:
    assert working_set(1000, 300) == 700
    assert working_set(100, 300) == 0


def test_v1_root_cgroup(tmp_path: Path) -> None:
    (tmp_path / "cpuacct").mkdir()
    (tmp_path / "memory").mkdir()
    (tmp_path / "cpuacct" / "cpuacct.usage").write_text("32802404612066\n")
    (tmp_path / "memory" / "memory.usage_in_bytes").write_text("3198517248\n")
    (tmp_path / "memory" / "memory.stat").write_text(
        "inactive_file 32768\ntotal_inactive_file 986472448\n")
    usage = read_node_usage(tmp_path, tmp_path / "meminfo")
    assert usage.cpu_usage_core_nanoseconds == 32802404612066
    assert usage.memory_working_set_bytes == 3198517248 - 986472448
    assert usage.timestamp_ns > 0


def test_v2_root_cgroup_takes_memory_from_meminfo(tmp_path: Path) -> None:
    (tmp_path / "cgroup.controllers").write_text("cpu memory\n")
    (tmp_path / "cpu.stat").write_text("usage_usec 2500000\nuser_usec 2000000\n")
    (tmp_path / "memory.stat").write_text("anon 1000\ninactive_file 4096\n")
    (tmp_path / "meminfo").write_text("MemTotal:  100 kB\nMemFree:  40 kB\n")
    usage = read_node_usage(tmp_path, tmp_path / "meminfo")
    assert usage.cpu_usage_core_nanoseconds == 2_500_000_000
    assert usage.memory_working_set_bytes == 60 * 1024 - 4096
