"""The names, addresses and paths of a lab, as pure data (no I/O).

A lab NAME with N nodes and subnet index K (0 for the first lab on a host, so DESIGN's
10.250.0.0/24) is laid out as:

    host bridge      pkl-NAME           10.250.K.1/24   (the host's end: it reaches the API)
    node i           netns pykube-NAME-node<i>, eth0 10.250.K.(10+i)/24, veth pkl-NAME-<i>
                     on the host; pod CIDR 10.244.i.0/24 on its CNI bridge cni0, routes to
                     every other node's pod CIDR through that node's lab address
    state            <state_root>/NAME/lab.json, node i under <state_root>/NAME/nodes/node<i>/
                     (config.yaml, root/, manifests/, cni/net.d/, cni/networks/, logs/pods/)
    sockets          <run_root>/NAME/node<i>/ (cri.sock)
    kubeconfig       context, cluster and user "pykube-NAME"

With C control planes (``--control-planes C``, C > 1 needs the etcd store), nodes 1..C
are control nodes: each runs an etcd member (client :2379, peer :2380 on its lab address,
data under its node directory) and `pykubelet control-plane` (:6443) beside its agent; the
host runs the lab's front address, a TCP load balancer on 10.250.K.1:6443 over the C API
servers (kind's HA load balancer), which the kubeconfig context names.

Every lab runs a local OCI registry on the host's end of its bridge, 10.250.K.1:5000 (kind's
and k3d's local registry), with its config, log and data under <state_root>/NAME/registry/;
every node's config names it an insecure (plain HTTP) registry.

Interface names longer than IFNAMSIZ-1 (15) use a short hash of NAME instead of NAME, so
every name stays traceable to its lab through the state file and the link alias.
"""

from __future__ import annotations

import hashlib
import ipaddress
import re
from dataclasses import dataclass
from pathlib import Path

from pykubelet.api.machinery import duration as machinery_duration

STATE_ROOT = Path("/var/lib/pykube-lab")
RUN_ROOT = Path("/run/pykube-lab")
NETNS_DIR = Path("/run/netns")

LAB_SUPERNET = ipaddress.ip_network("10.250.0.0/16")
POD_SUPERNET = "10.244"
API_PORT = 6443
ETCD_CLIENT_PORT = 2379
ETCD_PEER_PORT = 2380
REGISTRY_PORT = 5000  # kind's and k3d's local registry port
STORES = ("sqlite", "etcd")
HEALTHZ_PORT = 10248
MAX_NODES = 50
MAX_LABS = 256
IFNAMSIZ = 15
NAME_RE = re.compile(r"^[a-z0-9]([a-z0-9-]{0,30}[a-z0-9])?$")


class LayoutError(ValueError):
    """Bad input to the lab: the message names the field and the problem."""


def validate_name(name: str) -> str:
    """A lab name: a DNS label of at most 32 characters (it names the kubeconfig context)."""
    if not NAME_RE.match(name or ""):
        raise LayoutError(
            f"--name: {name!r} must be 1-32 lower-case letters, digits or '-', "
            "starting and ending with a letter or digit")
    return name


def validate_nodes(nodes: int) -> int:
    if not 1 <= nodes <= MAX_NODES:
        raise LayoutError(f"--nodes: must be between 1 and {MAX_NODES}, got {nodes}")
    return nodes


def validate_control_planes(control_planes: int, nodes: int, store: str) -> int:
    """1..nodes control planes; more than one share an etcd cluster (SQLite is one file on
    one control node)."""
    if store not in STORES:
        raise LayoutError(f"--store: must be one of {', '.join(STORES)}, got {store!r}")
    if not 1 <= control_planes <= nodes:
        raise LayoutError(f"--control-planes: must be between 1 and --nodes ({nodes}), "
                          f"got {control_planes}")
    if control_planes > 1 and store != "etcd":
        raise LayoutError(f"--control-planes {control_planes}: several control planes need "
                          "--store etcd (SQLite serves one control node)")
    return control_planes


def ifname(prefix: str, name: str, suffix: str = "") -> str:
    """``prefix + name + suffix`` when it fits IFNAMSIZ, else with a hash for the name."""
    full = f"{prefix}{name}{suffix}"
    if len(full) <= IFNAMSIZ:
        return full
    short = hashlib.sha256(name.encode()).hexdigest()[: IFNAMSIZ - len(prefix) - len(suffix)]
    return f"{prefix}{short}{suffix}"


def context_name(name: str) -> str:
    return f"pykube-{name}"


@dataclass(frozen=True)
class NodeLayout:
    """One node of a lab: its names, addresses and directories."""

    lab: str
    index: int  # 1-based
    subnet_index: int
    state_dir: Path  # the lab's state directory
    run_dir: Path  # the lab's run directory
    control_planes: int = 1  # nodes 1..control_planes are control nodes

    @property
    def name(self) -> str:
        return f"node{self.index}"

    @property
    def netns(self) -> str:
        return f"pykube-{self.lab}-{self.name}"

    @property
    def netns_path(self) -> Path:
        return NETNS_DIR / self.netns

    @property
    def host_veth(self) -> str:
        return ifname("pkl-", self.lab, f"-{self.index}")

    @property
    def node_veth(self) -> str:
        return "eth0"

    @property
    def address(self) -> str:
        return str(lab_subnet(self.subnet_index).network_address + 10 + self.index)

    @property
    def pod_cidr(self) -> str:
        return f"{POD_SUPERNET}.{self.index}.0/24"

    @property
    def is_control_plane(self) -> bool:
        return self.index <= self.control_planes

    @property
    def dir(self) -> Path:
        return self.state_dir / "nodes" / self.name

    @property
    def config_path(self) -> Path:
        return self.dir / "config.yaml"

    @property
    def root_dir(self) -> Path:
        return self.dir / "root"

    @property
    def manifests_dir(self) -> Path:
        return self.dir / "manifests"

    @property
    def cni_conf_dir(self) -> Path:
        return self.dir / "cni" / "net.d"

    @property
    def cni_data_dir(self) -> Path:
        return self.dir / "cni" / "networks"

    @property
    def pod_logs_dir(self) -> Path:
        return self.dir / "logs" / "pods"

    @property
    def agent_log(self) -> Path:
        return self.dir / "agent.log"

    @property
    def node_run_dir(self) -> Path:
        return self.run_dir / self.name

    @property
    def cri_socket(self) -> Path:
        return self.node_run_dir / "cri.sock"

    @property
    def control_plane_root(self) -> Path:
        """The control plane's state (store, pki, tokens, admin.kubeconfig); the store
        path the node config names is inside it, so either convention finds it."""
        return self.root_dir / "control-plane"

    @property
    def network_name(self) -> str:
        """The CNI network's name: unique per node, so its cached results are traceable."""
        return f"pykube-{self.lab}-{self.name}"

    @property
    def api_listen(self) -> str:
        return f"{self.address}:{API_PORT}"

    @property
    def api_server(self) -> str:
        return f"https://{self.address}:{API_PORT}"

    @property
    def etcd_name(self) -> str:
        return self.name

    @property
    def etcd_data_dir(self) -> Path:
        return self.dir / "etcd"

    @property
    def etcd_log(self) -> Path:
        return self.dir / "etcd.log"

    @property
    def etcd_client_url(self) -> str:
        return f"http://{self.address}:{ETCD_CLIENT_PORT}"

    @property
    def etcd_peer_url(self) -> str:
        return f"http://{self.address}:{ETCD_PEER_PORT}"

    @property
    def control_plane_log(self) -> Path:
        return self.dir / "control-plane.log"

    @property
    def registry_address(self) -> str:
        """The lab's local registry, which the node trusts as insecure."""
        return registry_address(self.subnet_index)


def registry_address(subnet_index: int) -> str:
    """HOST:PORT of the K-th lab's local registry: the host's end of its bridge."""
    return f"{lab_subnet(subnet_index).network_address + 1}:{REGISTRY_PORT}"


def lab_subnet(index: int) -> ipaddress.IPv4Network:
    """The K-th lab's /24 inside 10.250.0.0/16 (DESIGN's 10.250.0.0/24 for the first)."""
    if not 0 <= index < MAX_LABS:
        raise LayoutError(f"subnet index {index} out of range")
    return ipaddress.IPv4Network(f"10.250.{index}.0/24")


@dataclass(frozen=True)
class LabLayout:
    """A whole lab: its name, node count, subnet and directories."""

    name: str
    nodes: int
    subnet_index: int = 0
    state_root: Path = STATE_ROOT
    run_root: Path = RUN_ROOT
    control_planes: int = 1

    @property
    def state_dir(self) -> Path:
        return self.state_root / self.name

    @property
    def run_dir(self) -> Path:
        return self.run_root / self.name

    @property
    def state_file(self) -> Path:
        return self.state_dir / "lab.json"

    @property
    def scheduler_config_file(self) -> Path:
        """The lab's copy of ``up --scheduler-config FILE`` (what its control planes read)."""
        return self.state_dir / "scheduler-config.yaml"

    @property
    def audit_policy_file(self) -> Path:
        """The audit policy of ``up --audit`` (auditpolicy.POLICY, which the lab writes)."""
        return self.state_dir / "audit-policy.yaml"

    @property
    def lock_file(self) -> Path:
        return self.run_root / f"{self.name}.lock"

    @property
    def busybox_archive(self) -> Path:
        return self.state_dir / "busybox.tar"

    @property
    def bridge(self) -> str:
        return ifname("pkl-", self.name)

    @property
    def subnet(self) -> ipaddress.IPv4Network:
        return lab_subnet(self.subnet_index)

    @property
    def gateway(self) -> str:
        """The host bridge's address: how the host reaches the nodes."""
        return str(self.subnet.network_address + 1)

    @property
    def prefixlen(self) -> int:
        return self.subnet.prefixlen

    @property
    def context(self) -> str:
        return context_name(self.name)

    @property
    def link_alias(self) -> str:
        return f"pykube-lab:{self.name}"

    def node(self, index: int) -> NodeLayout:
        return NodeLayout(self.name, index, self.subnet_index, self.state_dir, self.run_dir,
                          self.control_planes)

    def node_layouts(self) -> list[NodeLayout]:
        return [self.node(i) for i in range(1, self.nodes + 1)]

    @property
    def control_node(self) -> NodeLayout:
        return self.node(1)

    def control_nodes(self) -> list[NodeLayout]:
        return [self.node(i) for i in range(1, self.control_planes + 1)]

    @property
    def front_listen(self) -> str:
        """The front address of several control planes: the host's end of the bridge."""
        return f"{self.gateway}:{API_PORT}"

    @property
    def front_server(self) -> str:
        return f"https://{self.front_listen}"

    @property
    def front_state_file(self) -> Path:
        return self.state_dir / "front-load-balancer.json"

    @property
    def front_log(self) -> Path:
        return self.state_dir / "front-load-balancer.log"

    @property
    def registry_address(self) -> str:
        """HOST:PORT of the local registry, on the host's end of the bridge (never
        0.0.0.0: it serves the lab's nodes and this host, nobody else)."""
        return registry_address(self.subnet_index)

    @property
    def registry_dir(self) -> Path:
        return self.state_dir / "registry"

    @property
    def registry_config_file(self) -> Path:
        return self.registry_dir / "config.yml"

    @property
    def registry_data_dir(self) -> Path:
        return self.registry_dir / "data"

    @property
    def registry_log(self) -> Path:
        return self.registry_dir / "registry.log"

    @property
    def etcd_initial_cluster(self) -> str:
        return ",".join(f"{n.etcd_name}={n.etcd_peer_url}" for n in self.control_nodes())

    def api_servers_for(self, index: int) -> list[str]:
        """The API servers node ``index``'s agent may use, the one it prefers first: a
        control node its own, the others spread over the control nodes in turn."""
        cps = [n.api_server for n in self.control_nodes()]
        first = (index - 1) % len(cps)
        return cps[first:] + cps[:first]

    def etcd_endpoints_for(self, index: int) -> list[str]:
        """etcd client URLs for control node ``index``: its own member first."""
        urls = [n.etcd_client_url for n in self.control_nodes()]
        first = (index - 1) % len(urls)
        return urls[first:] + urls[:first]

    def pod_routes(self, index: int) -> list[tuple[str, str]]:
        """(pod CIDR, via) for every other node: host-gw routing inside node ``index``."""
        return [(n.pod_cidr, n.address) for n in self.node_layouts() if n.index != index]


def free_subnet_index(used: set[int], host_networks: list[ipaddress.IPv4Network]) -> int:
    """The lowest lab subnet no other lab holds and no host address overlaps."""
    for k in range(MAX_LABS):
        if k in used:
            continue
        net = lab_subnet(k)
        if any(net.overlaps(h) for h in host_networks):
            continue
        return k
    raise LayoutError("no free lab subnet in 10.250.0.0/16 (too many labs on this host)")


def parse_duration(value: str, field: str = "--wait") -> float:
    """Seconds from ``120``, ``90s``, ``2m``, ``1h30m`` or ``500ms``: a Go duration or a bare
    number of seconds; the error names the flag."""
    try:
        return machinery_duration.parse_duration(value.strip(), bare_seconds=True)
    except ValueError:
        raise LayoutError(
            f"{field}: {value!r} is not a duration (for example 90s, 2m, 0)") from None
