"""The host side of the Vagrant lab under software emulation: a box built offline,
libvirtd in its own network namespace, and `vagrant` run there.

Facts this follows (measured on this machine kind, see the project's vmlab notes):
KVM cannot run a stock guest here, so VMs run under TCG (``PYKUBE_LIBVIRT_DRIVER=qemu``);
vagrant-libvirt works with isolated networks (``management_network_mode = none``), so
nothing needs NAT or an uplink; without udev /dev/kvm is root-only, which makes libvirt
re-probe qemu on every call (seconds each), so it is given the Debian default group for
the run and restored after; libvirtd and virtlogd are started by hand (no systemd on
the host) inside the namespace, and vagrant runs in the same namespace (it SSHes to the
VMs' management addresses). Everything large lives under the cache directory: the
rootfs, the box, VAGRANT_HOME and the storage pool (``opsvm``).
"""

from __future__ import annotations

import contextlib
import os
import re
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TextIO

from nspawn_lab import CACHE, REPO, _key, locked

NETNS = "opsvm"
POOL = "opsvm"
BOX = "pykube/bookworm"
VIRSH = ["virsh", "-c", "qemu:///system"]


def rootfs_vm(cache: Path = CACHE, log: object = None) -> tuple[Path, float]:
    """The node rootfs with a kernel (a VM boots it), cached like the nspawn one."""
    script = REPO / "vagrant" / "box" / "build-rootfs.sh"
    dest = cache / f"rootfs-vm-{_key(script)}"
    with locked(cache / ".rootfs-vm.lock"):
        if dest.is_dir():
            return dest, 0.0
        for old in cache.glob("rootfs-vm-*"):
            shutil.rmtree(old, ignore_errors=True)
        t0 = time.monotonic()
        subprocess.run([str(script), str(dest), "--kernel", "--cache-dir",
                        str(cache / "debcache")], check=True, stdout=log or sys.stderr,  # type: ignore[arg-type]
                       stderr=subprocess.STDOUT)
        return dest, time.monotonic() - t0


def box(rootfs: Path, wheels: Path, cache: Path = CACHE, log: object = None
        ) -> tuple[Path, float]:
    """The vagrant-libvirt box of that rootfs with the wheels' dependencies baked in,
    added to the cache's VAGRANT_HOME."""
    script = REPO / "vagrant" / "box" / "build-box.sh"
    out = cache / f"box-{_key(script, extra=rootfs.name + wheels.name)}.box"
    home = cache / "vagrant.d"
    with locked(cache / ".box.lock"):
        t0 = time.monotonic()
        stamp = home / "pykube-box"
        if out.exists() and stamp.exists() and stamp.read_text() == out.name:
            return out, 0.0
        for old in cache.glob("box-*.box"):
            old.unlink()
        subprocess.run([str(script), str(rootfs), str(out), "--wheels", str(wheels)], check=True,
                       stdout=log or sys.stderr, stderr=subprocess.STDOUT)  # type: ignore[arg-type]
        subprocess.run(["vagrant", "box", "add", "--force", "--name", BOX, str(out)],
                       check=True, env={**os.environ, "VAGRANT_HOME": str(home)},
                       stdout=log or sys.stderr, stderr=subprocess.STDOUT)  # type: ignore[arg-type]
        subprocess.run(["chmod", "-R", "a+rX", str(home)], check=True)
        stamp.write_text(out.name)
        return out, time.monotonic() - t0


def _ns(cmd: Sequence[str]) -> list[str]:
    return ["nsenter", f"--net=/run/netns/{NETNS}", *cmd]


@dataclass
class LibvirtLab:
    """libvirtd + virtlogd in namespace ``opsvm``; ``down`` undoes every change."""

    cache: Path = CACHE
    run_dir: Path = field(default_factory=lambda: CACHE / "run" / NETNS)

    @property
    def pool_dir(self) -> Path:
        return self.cache / "pool"

    def up(self) -> float:
        self.down()
        t0 = time.monotonic()
        self.run_dir.mkdir(parents=True, exist_ok=True)
        subprocess.run(["ip", "netns", "add", NETNS], check=True)
        subprocess.run(["ip", "-n", NETNS, "link", "set", "lo", "up"], check=True)
        subprocess.run(_ns(["sysctl", "-qw", "net.ipv4.ip_forward=0"]), check=True)
        # Debian's libvirt defines a NAT network "default": never let it start
        with contextlib.suppress(FileNotFoundError):
            os.unlink("/etc/libvirt/qemu/networks/autostart/default.xml")
        st = os.stat("/dev/kvm")
        (self.run_dir / "kvm-perms").write_text(f"{st.st_uid} {st.st_gid} {st.st_mode & 0o777:o}")
        shutil.chown("/dev/kvm", group="kvm")
        os.chmod("/dev/kvm", 0o660)
        # niced: TCG guests take every cycle they get, and the host runs other work
        for daemon in ("virtlogd", "libvirtd"):
            subprocess.run(["nice", "-n", "10", *_ns([daemon, "--daemon", "--pid-file",
                                                      str(self.run_dir / f"{daemon}.pid")])],
                           check=True)
        end = time.monotonic() + 60
        while subprocess.run([*VIRSH, "version"], capture_output=True).returncode != 0:
            if time.monotonic() > end:
                raise RuntimeError("libvirtd did not answer")
            time.sleep(0.2)
        # the disks go to a pool under the cache (qemu runs as libvirt-qemu: let it in)
        self.pool_dir.mkdir(parents=True, exist_ok=True)
        for p in (self.cache, self.pool_dir):
            os.chmod(p, os.stat(p).st_mode | 0o011)
        subprocess.run([*VIRSH, "pool-define-as", POOL, "dir", "--target", str(self.pool_dir)],
                       capture_output=True, check=True)
        subprocess.run([*VIRSH, "pool-start", POOL], capture_output=True, check=True)
        return time.monotonic() - t0

    def vagrant(self, *args: str, env: dict[str, str], log: TextIO | None = None,
                timeout: float = 3600) -> subprocess.CompletedProcess[str]:
        """Run vagrant in the lab's namespace; with ``log``, each output line goes there
        prefixed by the seconds since the start (``[  33.1s] ...``), so phases can be timed."""
        if log is None:
            return subprocess.run(_ns(["vagrant", *args]), cwd=REPO, env={**os.environ, **env},
                                  stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                  text=True, timeout=timeout, check=False)
        t0 = time.monotonic()
        with subprocess.Popen(_ns(["vagrant", *args]), cwd=REPO, env={**os.environ, **env},
                              stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                              errors="replace") as proc:
            assert proc.stdout is not None
            for line in proc.stdout:
                log.write(f"[{time.monotonic() - t0:7.1f}s] {line}")
                log.flush()
                if time.monotonic() - t0 > timeout:
                    proc.kill()
            rc = proc.wait()
        return subprocess.CompletedProcess(proc.args, rc, "", "")

    def down(self) -> None:
        """Domains, networks and volumes of the lab, the daemons (by pid), /dev/kvm's
        mode, the namespace: all gone or restored; safe to call twice."""
        if (self.run_dir / "libvirtd.pid").exists():
            for dom in _lines([*VIRSH, "list", "--all", "--name"]):
                if "node" in dom:
                    subprocess.run([*VIRSH, "destroy", dom], capture_output=True)
                    subprocess.run([*VIRSH, "undefine", dom, "--remove-all-storage"],
                                   capture_output=True)
            for net in _lines([*VIRSH, "net-list", "--all", "--name"]):
                if net in ("pykube-lab", "vagrant-libvirt"):
                    subprocess.run([*VIRSH, "net-destroy", net], capture_output=True)
                    subprocess.run([*VIRSH, "net-undefine", net], capture_output=True)
            for vol in _lines([*VIRSH, "vol-list", POOL, "--name"]):
                subprocess.run([*VIRSH, "vol-delete", "--pool", POOL, vol], capture_output=True)
            subprocess.run([*VIRSH, "pool-destroy", POOL], capture_output=True)
            subprocess.run([*VIRSH, "pool-undefine", POOL], capture_output=True)
        for daemon in ("libvirtd", "virtlogd"):
            pidfile = self.run_dir / f"{daemon}.pid"
            with contextlib.suppress(OSError, ValueError):
                pid = int(pidfile.read_text())
                if daemon.encode() in Path(f"/proc/{pid}/cmdline").read_bytes():
                    os.kill(pid, signal.SIGTERM)
                    for _ in range(100):
                        if not Path(f"/proc/{pid}").exists():
                            break
                        time.sleep(0.1)
        perms = self.run_dir / "kvm-perms"
        if perms.exists():
            uid, gid, mode = perms.read_text().split()
            os.chown("/dev/kvm", int(uid), int(gid))
            os.chmod("/dev/kvm", int(mode, 8))
        subprocess.run(["ip", "netns", "del", NETNS], capture_output=True)
        shutil.rmtree(self.pool_dir, ignore_errors=True)
        shutil.rmtree(self.run_dir, ignore_errors=True)


PHASE = re.compile(r"^\[\s*([\d.]+)s\]\s+(?:==> )?(node\d+): (?:==> )?(.*)$")


def phase_times(log_text: str) -> dict[str, float]:
    """Per node, from a timestamped `vagrant up` log: when the VM answered SSH ("Machine
    booted and ready!"), and when provisioning ended ("==> nodeN provisioned in N s")."""
    out: dict[str, float] = {}
    for line in log_text.splitlines():
        m = PHASE.match(line)
        if not m:
            continue
        at, node, what = float(m.group(1)), m.group(2), m.group(3)
        if what.startswith("Machine booted and ready"):
            out[f"{node} booted (SSH)"] = at
        elif what.startswith(f"{node} provisioned in"):
            out[f"{node} provisioned"] = at
    return out


def _lines(cmd: Sequence[str]) -> list[str]:
    res = subprocess.run(list(cmd), capture_output=True, text=True)
    return [line.strip() for line in res.stdout.splitlines() if line.strip()]
