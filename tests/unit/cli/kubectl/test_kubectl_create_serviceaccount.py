"""``pykubectl create serviceaccount`` and ``create token`` as kubectl's: the output lines,
the TokenRequest body from the flags (and kubectl's flag checks in its words), a bare token
on a pipe, a token that authenticates as the account, errors as ``failed to create token``;
pykubectl run as a process against an in-process control plane."""

from __future__ import annotations

import argparse
import base64
import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from pykubelet.cli.kubectl.create_serviceaccount import token_request
from pykubelet.cli.kubectl.errors import CommandError
from pykubelet.client.rest import RESTClient
from pykubelet.controlplane.server import ControlPlaneThread, Options


@pytest.fixture(scope="module")
def cp(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ControlPlaneThread]:
    thread = ControlPlaneThread(Options(root=tmp_path_factory.mktemp("cp"),
                                        listen="127.0.0.1:0", scheduler=False,
                                        controllers=False))
    try:
        thread.start()
        yield thread
    finally:
        thread.stop()


def kubectl(cp: ControlPlaneThread, *args: str) -> tuple[int, str, str]:
    """pykubectl as a process (its stdout a pipe, as in ``$(kubectl create token x)``)."""
    done = subprocess.run(
        [sys.executable, "-c", "from pykubelet.cli.kubectl.main import console; console()",
         "--kubeconfig", str(cp.cp.kubeconfig_path), *args],
        capture_output=True, text=True, timeout=60)
    return done.returncode, done.stdout, done.stderr


def flags(**kw: Any) -> argparse.Namespace:
    base: dict[str, Any] = {"duration": "", "audience": [], "bound_object_kind": "",
                            "bound_object_name": "", "bound_object_uid": ""}
    return argparse.Namespace(**{**base, **kw})


def test_token_request_from_flags() -> None:
    body = token_request(flags(duration="10m", audience=["a", "b"], bound_object_kind="Pod",
                               bound_object_name="web"))
    assert body["spec"] == {"audiences": ["a", "b"], "expirationSeconds": 600,
                            "boundObjectRef": {"kind": "Pod", "apiVersion": "v1",
                                               "name": "web"}}
    assert token_request(flags())["spec"] == {}


@pytest.mark.parametrize(("kw", "message"), [
    ({"duration": "-1s"}, "error: --duration must be greater than or equal to 0"),
    ({"duration": "1.5s"}, "error: --duration cannot be expressed in units less than seconds"),
    ({"audience": [""]}, "error: --audience must not be an empty string"),
    ({"bound_object_name": "x"},
     "error: --bound-object-name can only be set if --bound-object-kind is provided"),
    ({"bound_object_kind": "ConfigMap", "bound_object_name": "x"},
     "error: supported --bound-object-kind values are Node, Pod, Secret"),
    ({"bound_object_kind": "Pod"},
     "error: --bound-object-name is required if --bound-object-kind is provided"),
])
def test_token_flags_are_checked_as_kubectl_does(kw: dict[str, Any], message: str) -> None:
    with pytest.raises(CommandError) as exc:
        token_request(flags(**kw))
    assert str(exc.value) == message


def test_create_serviceaccount_then_token(cp: ControlPlaneThread) -> None:
    code, out, err = kubectl(cp, "create", "serviceaccount", "reader", "-n", "default")
    assert (code, out, err) == (0, "serviceaccount/reader created\n", "")
    code, out, _ = kubectl(cp, "create", "sa", "other", "--dry-run=client", "-o",
                           "json")
    assert code == 0
    assert json.loads(out) == {"kind": "ServiceAccount", "apiVersion": "v1",
                               "metadata": {"name": "other", "creationTimestamp": None}}
    code, out, _ = kubectl(cp, "create", "sa", "third", "-o", "json")
    assert code == 0
    created = json.loads(out)["metadata"]
    assert created["name"] == "third"
    assert created["uid"]
    assert "managedFields" not in created  # kubectl's OmitManagedFieldsPrinter, as create's
    code, out, err = kubectl(cp, "create", "token", "reader", "--duration=10m")
    assert code == 0, err
    assert "\n" not in out  # not a terminal: the bare token, as kubectl prints it
    p = out.split(".")[1]
    claims = json.loads(base64.urlsafe_b64decode(p + "=" * (-len(p) % 4)))
    assert claims["sub"] == "system:serviceaccount:default:reader"
    assert claims["exp"] - claims["iat"] == 600
    client = RESTClient.from_kubeconfig(Path(cp.cp.kubeconfig_path))
    client.token = out
    review = client.request("POST", "/apis/authentication.k8s.io/v1/selfsubjectreviews",
                            body={"apiVersion": "authentication.k8s.io/v1",
                                  "kind": "SelfSubjectReview"})
    assert review["status"]["userInfo"]["username"] == "system:serviceaccount:default:reader"
    code, out, err = kubectl(cp, "create", "token", "nobody")
    assert code == 1
    assert err.strip() == 'error: failed to create token: serviceaccounts "nobody" not found'
