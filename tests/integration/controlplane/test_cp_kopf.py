"""A kopf operator (PyPI's kopf, unmodified) against a control-plane process reconciles a
custom resource end to end (issue 28 item 2): it discovers the CRD, watches Widgets,
creates a ConfigMap for a new one and records its handler's result in the Widget's status
(merge patches of the status subresource), follows a spec change, posts Events, and lets a
deleted Widget go by removing its finalizer; the garbage collector then deletes the
ConfigMap the Widget owns."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from cp_process import ControlPlaneProcess, wait_for

pytest.importorskip("kopf")

CP_BACKENDS = ("sqlite",)
OPERATOR = Path(__file__).with_name("kopf_widgets.py")
CRD = """
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {name: widgets.stable.example.com}
spec:
  group: stable.example.com
  scope: Namespaced
  names: {plural: widgets, singular: widget, kind: Widget}
  versions:
  - name: v1
    served: true
    storage: true
    subresources: {status: {}}
    schema:
      openAPIV3Schema:
        type: object
        properties:
          spec:
            type: object
            properties:
              size: {type: string}
          status: {type: object, x-kubernetes-preserve-unknown-fields: true}
"""
WIDGET = """
apiVersion: stable.example.com/v1
kind: Widget
metadata: {name: w1}
spec: {size: %s}
"""


def _json(cp: ControlPlaneProcess, *args: str) -> Any:
    res = cp.kubectl(*args, "-o", "json", check=False)
    return json.loads(res.stdout) if res.returncode == 0 else None


def test_kopf_operator_reconciles_a_widget(cp: ControlPlaneProcess, ns: str,
                                           tmp_path: Path) -> None:
    cp.kubectl("apply", "-f", "-", input=CRD)
    cp.kubectl("wait", "--for=condition=Established", "crd/widgets.stable.example.com",
               "--timeout=20s")
    log = (tmp_path / "kopf.log").open("w")
    env = dict(os.environ, KUBECONFIG=str(cp.kubeconfig))
    proc = subprocess.Popen([sys.executable, "-m", "kopf", "run", "--standalone",
                             "--namespace", ns, str(OPERATOR)],
                            stdout=log, stderr=subprocess.STDOUT, env=env)
    try:
        cp.kubectl("apply", "-n", ns, "-f", "-", input=WIDGET % "small")
        wait_for(lambda: (_json(cp, "get", "configmap", "w1-config", "-n", ns) or {}).get(
            "data") == {"size": "small"}, timeout=30, what="the operator's ConfigMap")
        cm = _json(cp, "get", "configmap", "w1-config", "-n", ns)
        widget = _json(cp, "get", "widget", "w1", "-n", ns)
        assert cm["metadata"]["ownerReferences"][0]["uid"] == widget["metadata"]["uid"]
        wait_for(lambda: ((_json(cp, "get", "widget", "w1", "-n", ns) or {}).get(
            "status") or {}).get("create_fn") == {"configmap": "w1-config"}, timeout=30,
            what="the handler's result in the status")
        assert "kopf.zalando.org/KopfFinalizerMarker" in _json(
            cp, "get", "widget", "w1", "-n", ns)["metadata"]["finalizers"]
        cp.kubectl("apply", "-n", ns, "-f", "-", input=WIDGET % "large")
        wait_for(lambda: (_json(cp, "get", "configmap", "w1-config", "-n", ns) or {}).get(
            "data") == {"size": "large"}, timeout=30, what="the ConfigMap following the spec")
        def posted() -> bool:  # kopf posts its events from a queue, in the background
            events = _json(cp, "get", "events", "-n", ns)["items"]
            return any("create_fn" in (e.get("message") or "")
                       and e["involvedObject"].get("name") == "w1"
                       and e["involvedObject"].get("kind") == "Widget" for e in events)

        wait_for(posted, timeout=30, what="kopf's Event about create_fn")
        cp.kubectl("delete", "widget", "w1", "-n", ns, "--timeout=30s")
        assert _json(cp, "get", "widget", "w1", "-n", ns) is None
        # the garbage collector follows the ConfigMap's owner reference to the Widget
        wait_for(lambda: _json(cp, "get", "configmap", "w1-config", "-n", ns) is None,
                 timeout=30, what="the ConfigMap collected with its Widget")
    finally:
        proc.send_signal(signal.SIGINT)
        try:
            proc.wait(15)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(5)
        log.close()
        cp.kubectl("delete", "crd", "widgets.stable.example.com", "--timeout=30s",
                   check=False)
    output = (tmp_path / "kopf.log").read_text()
    assert "Handler 'create_fn' succeeded" in output, output[-4000:]
    assert "Handler 'delete_fn' succeeded" in output, output[-4000:]
    assert "Traceback" not in output, output[-4000:]
