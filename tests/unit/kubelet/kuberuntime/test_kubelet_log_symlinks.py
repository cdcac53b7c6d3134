"""Legacy container log symlinks (/var/log/containers): naming, creation, removal."""

from __future__ import annotations

from pathlib import Path

from pykubelet.kubelet.kuberuntime.log_symlinks import (
    container_logs_dir,
    create_log_symlink,
    log_symlink_path,
    remove_dangling,
    remove_log_symlink,
)


def test_dir_is_the_containers_sibling_of_pod_logs_dir(tmp_path: Path) -> None:
    assert container_logs_dir("/var/log/pods") == Path("/var/log/containers")
    assert container_logs_dir("/var/log/pods/") == Path("/var/log/containers")
    assert container_logs_dir(str(tmp_path / "logs")) == tmp_path / "containers"


def test_name_follows_kubelet_and_is_cut_to_255_bytes() -> None:
    d = Path("/var/log/containers")
    assert log_symlink_path(d, "web", "default", "app", "abc123") == Path(
        "/var/log/containers/web_default_app-abc123.log"
    )
    long = log_symlink_path(d, "p" * 200, "ns", "c" * 60, "f" * 64)
    assert len(long.name) == 255
    assert long.name.endswith(".log")
    assert long.name.startswith("p" * 200 + "_ns_")


def test_create_points_at_the_log_and_replaces_a_stale_link(tmp_path: Path) -> None:
    target = tmp_path / "logs" / "default_web_uid" / "app" / "0.log"
    target.parent.mkdir(parents=True)
    target.write_text("hello\n")
    link = log_symlink_path(tmp_path / "containers", "web", "default", "app", "abc")
    create_log_symlink(link, str(target))
    assert link.is_symlink()
    assert link.read_text() == "hello\n"
    other = target.with_name("1.log")
    other.write_text("again\n")
    create_log_symlink(link, str(other))
    assert link.read_text() == "again\n"
    remove_log_symlink(link)
    assert not link.is_symlink()
    remove_log_symlink(link)  # gone already: no error


def test_no_dangling_link_for_a_missing_log(tmp_path: Path) -> None:
    link = log_symlink_path(tmp_path / "containers", "web", "default", "app", "abc")
    create_log_symlink(link, str(tmp_path / "missing.log"))
    assert not link.is_symlink()


def test_remove_dangling_keeps_live_and_valid_links(tmp_path: Path) -> None:
    d = tmp_path / "containers"
    d.mkdir()
    log = tmp_path / "0.log"
    log.write_text("x")
    valid = log_symlink_path(d, "web", "default", "app", "aaa")
    valid.symlink_to(log)
    dangling = log_symlink_path(d, "web", "default", "app", "bbb")
    dangling.symlink_to(tmp_path / "gone.log")
    live = log_symlink_path(d, "web", "default", "side", "ccc")
    live.symlink_to(tmp_path / "rotating.log")
    assert remove_dangling(d, {"ccc"}) == [dangling]
    assert valid.is_symlink()
    assert live.is_symlink()
    assert not dangling.is_symlink()
    assert remove_dangling(tmp_path / "nowhere", set()) == []
