"""The embedded scheduler's KubeSchedulerConfiguration (issue 22): ``pykubelet control-plane
--scheduler-config FILE`` and ``controlPlane.schedulerConfig``. A bad file stops the
control plane before it starts, with one line naming the file and the field."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from pykubelet.config import API_VERSION, KIND, decode_config
from pykubelet.controlplane.schedulerconfig import SchedulerConfigError, load_scheduler_config
from pykubelet.controlplane.server import ControlPlane, Options

HEAD = {"apiVersion": "kubescheduler.config.k8s.io/v1", "kind": "KubeSchedulerConfiguration"}


def write(tmp_path: Path, doc: dict[str, object]) -> Path:
    f = tmp_path / "sched.yaml"
    f.write_text(yaml.safe_dump(doc))
    return f


def test_profiles_weights_backoff_and_extenders_load(tmp_path: Path) -> None:
    f = write(tmp_path, {**HEAD, "percentageOfNodesToScore": 30,
                         "podInitialBackoffSeconds": 2, "podMaxBackoffSeconds": 20,
                         "profiles": [
                             {"schedulerName": "default-scheduler"},
                             {"schedulerName": "spread", "plugins": {"score": {"enabled": [
                                 {"name": "NodeResourcesBalancedAllocation", "weight": 7}]}}}],
                         "extenders": [{"urlPrefix": "http://127.0.0.1:1/x",
                                        "filterVerb": "filter"}]})
    cfg = load_scheduler_config(f)
    assert [p.scheduler_name for p in cfg.profiles] == ["default-scheduler", "spread"]
    assert cfg.percentage_of_nodes_to_score == 30
    assert (cfg.pod_initial_backoff_seconds, cfg.pod_max_backoff_seconds) == (2, 20)
    assert cfg.extenders[0].filter_verb == "filter"
    assert load_scheduler_config(None) is None


@pytest.mark.parametrize(("doc", "message"), [
    ({**HEAD, "profiles": [{"schedulerName": "a"}, {"schedulerName": "a"}]},
     "profiles[1].schedulerName: Duplicate value: 'a'"),
    ({**HEAD, "profiles": [{"schedulerName": "a", "plugins": {"filter": {"enabled": [
        {"name": "PrioritySort"}]}}}]},
     "plugin 'PrioritySort' does not extend filter plugin"),
    ({**HEAD, "extenders": [{"urlPrefix": "http://x", "prioritizeVerb": "p"}]},
     "extenders[0].weight: Invalid value: 0: must have a positive weight applied to it"),
    ({**HEAD, "podMaxBackoffSeconds": 0},
     "podMaxBackoffSeconds: Invalid value: 0"),
])
def test_bad_files_are_refused_in_one_line(tmp_path: Path, doc: dict[str, object],
                                           message: str) -> None:
    f = write(tmp_path, doc)
    with pytest.raises(SchedulerConfigError) as err:
        load_scheduler_config(f)
    assert str(err.value).startswith(f"{f}: ")
    assert message in str(err.value)
    assert "\n" not in str(err.value)
    # the control plane refuses to be built on it (before it opens anything)
    with pytest.raises(SchedulerConfigError):
        ControlPlane(Options(root=tmp_path / "cp", listen="127.0.0.1:0", scheduler_config=f))
    assert not (tmp_path / "cp").exists()


def test_missing_file_is_refused(tmp_path: Path) -> None:
    with pytest.raises(SchedulerConfigError, match="no such file"):
        load_scheduler_config(tmp_path / "absent.yaml")


def test_control_plane_command_refuses_to_start(tmp_path: Path) -> None:
    f = write(tmp_path, {**HEAD, "extenders": [{"urlPrefix": "http://a", "bindVerb": "b"},
                                               {"urlPrefix": "http://b", "bindVerb": "b"}]})
    p = subprocess.run([sys.executable, "-m", "pykubelet.cli.main", "control-plane", "--root",
                        str(tmp_path / "cp"), "--listen", "127.0.0.1:0", "--scheduler-config",
                        str(f)], capture_output=True, text=True, timeout=60)
    assert p.returncode == 1
    assert p.stderr.strip() == (
        f'Error: --scheduler-config {f}: extenders: Invalid value: "found 2 extenders '
        'implementing bind": only one extender can implement bind')
    assert not (tmp_path / "cp" / "admin.kubeconfig").exists()


def test_node_config_names_the_file() -> None:
    cfg = decode_config({"apiVersion": API_VERSION, "kind": KIND,
                         "controlPlane": {"schedulerConfig": "/etc/pykubelet/sched.yaml"}})
    assert cfg.controlPlane is not None
    assert cfg.controlPlane.schedulerConfig == "/etc/pykubelet/sched.yaml"


def test_the_example_file_loads() -> None:
    f = Path(__file__).resolve().parents[3] / "examples" / "scheduler-config.yaml"
    cfg = load_scheduler_config(f)
    assert [p.scheduler_name for p in cfg.profiles] == ["default-scheduler", "bin-packing"]
    assert cfg.extenders[0].weight == 2
    assert cfg.extenders[0].http_timeout == 2.0
