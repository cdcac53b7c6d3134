"""From the node config's ``controlPlane`` section (pykubelet.config) to the control
plane's options: which store, and whether and how to elect leaders."""

from __future__ import annotations

from pathlib import Path

from pykubelet.config import ControlPlaneConfig, StoreConfig
from pykubelet.controlplane.election import LeaderElection
from pykubelet.controlplane.storage.etcd import EtcdConfig


def etcd_config(store: StoreConfig) -> EtcdConfig | None:
    """The etcd the config names, or None for SQLite."""
    e = store.etcd
    if e is None:
        return None
    return EtcdConfig(endpoints=list(e.endpoints), prefix=e.prefix,
                      ca_file=Path(e.caFile) if e.caFile else None,
                      cert_file=Path(e.certFile) if e.certFile else None,
                      key_file=Path(e.keyFile) if e.keyFile else None)


def leader_election(cp: ControlPlaneConfig, explicit: bool | None = None
                    ) -> LeaderElection | None:
    """Leader election's timings, or None when this control plane runs everything itself.

    With SQLite one control plane owns the store, so there is nobody to elect against and
    a restarted control plane would only wait out its own old Lease: election is on with
    etcd (unless ``leaderElect: false``) and off with SQLite unless asked for explicitly.
    """
    le = cp.leaderElection
    wanted = explicit if explicit is not None else (le.leaderElect and cp.store.etcd is not None)
    if not wanted:
        return None
    duration, deadline, retry = le.seconds()
    return LeaderElection(lease_duration=duration, renew_deadline=deadline,
                          retry_period=retry)
