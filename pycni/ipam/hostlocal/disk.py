"""host-local's on-disk store, byte-compatible with the reference 1.1.1 ``backend/disk``.

``<dataDir>/<network>/<ip>`` holds ``<containerID>\\r\\n<ifname>``,
``last_reserved_ip.<rangeset index>`` the last address handed out, and ``lock``
is flock'ed for every allocation or release (by either implementation).
"""

from __future__ import annotations

import fcntl
import ipaddress
import os

from pycni.atomic_files import write_atomic
from pycni.spec import IPAddress

LAST_IP_PREFIX = "last_reserved_ip."
LINE_BREAK = "\r\n"


class DiskStore:
    def __init__(self, network: str, data_dir: str) -> None:
        self.dir = os.path.join(data_dir, network)
        os.makedirs(self.dir, mode=0o755, exist_ok=True)
        self._fd = os.open(os.path.join(self.dir, "lock"), os.O_RDWR | os.O_CREAT | os.O_CLOEXEC,
                           0o644)

    def close(self) -> None:
        if self._fd >= 0:
            os.close(self._fd)
            self._fd = -1

    def __enter__(self) -> DiskStore:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def lock(self) -> None:
        fcntl.flock(self._fd, fcntl.LOCK_EX)

    def unlock(self) -> None:
        fcntl.flock(self._fd, fcntl.LOCK_UN)

    def reserve(self, id_: str, ifname: str, ip: IPAddress, range_id: str) -> bool:
        path = os.path.join(self.dir, str(ip))
        try:
            fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_EXCL, 0o644)
        except FileExistsError:
            return False
        try:
            os.write(fd, (id_.strip() + LINE_BREAK + ifname).encode())
        except OSError:
            os.close(fd)
            os.unlink(path)
            raise
        os.close(fd)
        # a hint for the next allocation, as host-local's: atomic, not flushed
        write_atomic(os.path.join(self.dir, LAST_IP_PREFIX + range_id), str(ip), durable=False)
        return True

    def last_reserved_ip(self, range_id: str) -> IPAddress | None:
        try:
            with open(os.path.join(self.dir, LAST_IP_PREFIX + range_id)) as f:
                return ipaddress.ip_address(f.read().strip())
        except (OSError, ValueError):
            return None

    def _entries(self) -> list[tuple[str, str]]:
        """(path, stripped content) of every address file."""
        out = []
        for name in os.listdir(self.dir):
            if name == "lock" or name.startswith(LAST_IP_PREFIX):
                continue
            path = os.path.join(self.dir, name)
            try:
                with open(path, encoding="utf-8", errors="replace", newline="") as f:
                    out.append((path, f.read().strip()))
            except (IsADirectoryError, OSError):
                continue
        return out

    def _matching(self, id_: str, ifname: str) -> list[str]:
        """Files of this container+ifname; else (files of older versions) of this container."""
        entries = self._entries()
        key = id_.strip() + LINE_BREAK + ifname
        exact = [p for p, c in entries if c == key]
        return exact or [p for p, c in entries if c == id_.strip()]

    def release_by_id(self, id_: str, ifname: str) -> None:
        for path in self._matching(id_, ifname):
            try:
                os.unlink(path)
            except FileNotFoundError:
                pass

    def get_by_id(self, id_: str, ifname: str) -> list[IPAddress]:
        out = []
        for path in self._matching(id_, ifname):
            try:
                out.append(ipaddress.ip_address(os.path.basename(path)))
            except ValueError:
                continue
        return out

    def find_by_id(self, id_: str, ifname: str) -> bool:
        return bool(self._matching(id_, ifname))

    def release_all_but(self, valid: set[tuple[str, str]]) -> list[str]:
        """Remove every address file not held by one of ``valid`` (container ID, ifname);
        a file of an older version (ID only) stays if its container is valid at all."""
        keep = {cid.strip() + LINE_BREAK + ifname for cid, ifname in valid}
        keep_ids = {cid.strip() for cid, _ in valid}
        removed = []
        for path, content in self._entries():
            if content in keep or content in keep_ids:
                continue
            try:
                os.unlink(path)
                removed.append(os.path.basename(path))
            except FileNotFoundError:
                pass
        return removed
