"""The control plane's configuration errors as the CLI reports them (cli/controlplane_cmd's
config_errors, used by `pykubelet control-plane` and an agent's embedded control plane):
each names the setting it came from."""

from __future__ import annotations

import click
import pytest

from pykubelet.cli.controlplane_cmd import config_errors
from pykubelet.controlplane.apiserver.audit.policy import PolicyError
from pykubelet.controlplane.schedulerconfig import SchedulerConfigError


def test_a_scheduler_config_error_names_the_setting() -> None:
    with pytest.raises(click.ClickException) as exc, \
            config_errors("controlPlane.schedulerConfig", "controlPlane.auditPolicyFile"):
        raise SchedulerConfigError("/etc/s.yaml: profiles[0].schedulerName: Required value")
    assert exc.value.message == ("controlPlane.schedulerConfig /etc/s.yaml: "
                                 "profiles[0].schedulerName: Required value")


def test_an_audit_policy_error_names_the_setting() -> None:
    with pytest.raises(click.ClickException) as exc, \
            config_errors("--scheduler-config", "--audit-policy-file"):
        raise PolicyError("rules[0].level: Unsupported value")
    assert exc.value.message == "--audit-policy-file: rules[0].level: Unsupported value"


def test_other_errors_pass() -> None:
    with pytest.raises(ValueError, match="x"), config_errors("a", "b"):
        raise ValueError("x")
