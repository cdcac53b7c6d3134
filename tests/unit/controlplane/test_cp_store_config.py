"""``controlPlane.store`` and ``controlPlane.leaderElection`` in the node config: strict,
with errors naming the field, and what they turn into for the control plane."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from pykubelet.config import API_VERSION, KIND, KubeletConfigError, decode_config
from pykubelet.controlplane.storeconfig import etcd_config, leader_election


def cp(section: dict[str, Any]) -> Any:
    cfg = decode_config({"apiVersion": API_VERSION, "kind": KIND, "controlPlane": section})
    assert cfg.controlPlane is not None
    return cfg.controlPlane


def test_sqlite_is_the_default_and_store_path_still_names_it() -> None:
    assert cp({}).store.sqlitePath == "/var/lib/pykubelet/store.db"
    assert cp({}).store.etcd is None
    assert cp({"storePath": "/srv/s.db"}).store.sqlitePath == "/srv/s.db"
    assert cp({"store": {"sqlite": {"path": "/srv/t.db"}}}).storePath == "/srv/t.db"
    assert etcd_config(cp({}).store) is None
    assert leader_election(cp({})) is None  # one control plane owns a SQLite store


def test_etcd_endpoints_and_tls_files() -> None:
    c = cp({"store": {"etcd": {
        "endpoints": ["https://10.250.0.2:2379", "https://10.250.0.3:2379"],
        "caFile": "/etc/etcd/ca.crt", "certFile": "/etc/etcd/c.crt",
        "keyFile": "/etc/etcd/c.key", "prefix": "/cluster1"}},
        "leaderElection": {"leaseDuration": "4s", "renewDeadline": "3s",
                           "retryPeriod": "500ms"}})
    e = etcd_config(c.store)
    assert e is not None
    assert e.endpoints == ["https://10.250.0.2:2379", "https://10.250.0.3:2379"]
    assert (e.ca_file, e.cert_file, e.key_file, e.prefix) == (
        Path("/etc/etcd/ca.crt"), Path("/etc/etcd/c.crt"), Path("/etc/etcd/c.key"), "/cluster1")
    le = leader_election(c)
    assert le is not None
    assert (le.lease_duration, le.renew_deadline, le.retry_period) == (4.0, 3.0, 0.5)
    off = cp({"store": {"etcd": {"endpoints": ["http://127.0.0.1:2379"]}},
              "leaderElection": {"leaderElect": False}})
    assert leader_election(off) is None


@pytest.mark.parametrize(
    ("section", "message"),
    [
        ({"store": {"mysql": {}}}, "controlPlane.store.mysql: unknown field"),
        ({"store": {}}, "controlPlane.store: name exactly one backend"),
        ({"store": {"sqlite": {"path": "/a"}, "etcd": {"endpoints": ["http://a:1"]}}},
         "controlPlane.store: name exactly one backend"),
        ({"store": {"sqlite": {"path": "rel.db"}}},
         "controlPlane.store.sqlite.path: must be an absolute path"),
        ({"storePath": "/a.db", "store": {"sqlite": {"path": "/b.db"}}},
         "controlPlane.storePath: give either storePath or store"),
        ({"storePath": "/a.db", "store": {"etcd": {"endpoints": ["http://a:1"]}}},
         "controlPlane.storePath: give either storePath or store"),
        ({"store": {"etcd": {"endpoints": []}}},
         "controlPlane.store.etcd.endpoints: expected a non-empty list"),
        ({"store": {"etcd": {"endpoints": ["10.0.0.1:2379"]}}},
         "controlPlane.store.etcd.endpoints[0]: expected http(s)://HOST:PORT"),
        ({"store": {"etcd": {"endpoints": ["http://a:1", "tcp://b:2"]}}},
         "controlPlane.store.etcd.endpoints[1]:"),
        ({"store": {"etcd": {"endpoints": ["https://a:1"], "certFile": "/c"}}},
         "controlPlane.store.etcd.certFile: certFile and keyFile go together"),
        ({"store": {"etcd": {"endpoints": ["http://a:1"], "caFile": "/ca"}}},
         "controlPlane.store.etcd.caFile: TLS files need https://"),
        ({"store": {"etcd": {"endpoints": ["https://a:1"], "caFile": "ca.crt"}}},
         "controlPlane.store.etcd.caFile: must be an absolute path"),
        ({"store": {"etcd": {"endpoints": ["http://a:1"], "user": "x"}}},
         "controlPlane.store.etcd.user: unknown field"),
        ({"leaderElection": {"leaseDuration": "15"}},
         "controlPlane.leaderElection.leaseDuration: time: missing unit in duration \"15\""),
        ({"leaderElection": {"leaderElect": "yes"}},
         "controlPlane.leaderElection.leaderElect: expected true or false"),
        ({"leaderElection": {"leaseDuration": "5s", "renewDeadline": "5s"}},
         "controlPlane.leaderElection.renewDeadline: 5s must be less than leaseDuration"),
        ({"leaderElection": {"retryPeriod": "10s"}},
         "controlPlane.leaderElection.retryPeriod: 10s must be less than renewDeadline"),
        ({"leaderElection": {"resourceLock": "leases"}},
         "controlPlane.leaderElection.resourceLock: unknown field"),
    ],
)
def test_errors_name_the_field(section: dict[str, Any], message: str) -> None:
    with pytest.raises(KubeletConfigError) as err:
        decode_config({"apiVersion": API_VERSION, "kind": KIND, "controlPlane": section})
    assert message in str(err.value)


def test_a_config_written_from_the_dataclasses_reads_back() -> None:
    from dataclasses import asdict

    from pykubelet.config import ControlPlaneConfig

    assert cp(asdict(ControlPlaneConfig())) == ControlPlaneConfig()
    etcd = cp({"store": {"etcd": {"endpoints": ["http://a:1"]}}})
    assert cp(asdict(etcd)) == etcd


def test_the_control_node_example_decodes() -> None:
    from pykubelet.config import load_config

    cfg = load_config(Path(__file__).resolve().parents[3] / "examples"
                      / "control-node-etcd.yaml")
    assert cfg.controlPlane is not None
    e = etcd_config(cfg.controlPlane.store)
    assert e is not None
    assert len(e.endpoints) == 3
    assert leader_election(cfg.controlPlane) is not None


def test_the_cluster_dns_is_on_by_default_and_can_be_turned_off() -> None:
    assert cp({}).dnsServer
    off = cp({"dnsServer": False, "dnsAddress": "10.250.0.11"})
    assert (off.dnsServer, off.dnsAddress) == (False, "10.250.0.11")
    with pytest.raises(KubeletConfigError, match=r"controlPlane\.dnsServer: expected a boolean"):
        cp({"dnsServer": "no"})
