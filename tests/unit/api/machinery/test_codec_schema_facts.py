"""Decoding an API pod reads two facts of upstream's schema per field (the $ref that makes
a string a metav1.Time, the format that sizes an integer), not the whole definitions.json:
the file's tree (~1.4 MiB of dicts, loaded at a node's first pod) stays out of an agent
that never serves the schema (issue 23 item 3: a lean node). Checked in a fresh
interpreter, as the file is cached for the process once read."""

from __future__ import annotations

import json
import subprocess
import sys

POD = {"apiVersion": "v1", "kind": "Pod",
       "metadata": {"name": "p", "namespace": "default", "uid": "u1",
                    "creationTimestamp": "2026-12-04T10:00:00Z"},
       "spec": {"nodeName": "n1", "terminationGracePeriodSeconds": 1,
                "containers": [{"name": "c", "image": "busybox", "command": ["sleep", "1"]}]},
       "status": {"phase": "Running",
                  "conditions": [{"type": "Ready", "status": "True",
                                  "lastTransitionTime": "2026-12-04T10:00:01Z"}],
                  "containerStatuses": [{"name": "c", "ready": True, "restartCount": 0,
                                         "image": "busybox", "imageID": "x", "state": {
                                             "running": {"startedAt": "2026-12-04T10:00:02Z"}}}]}}

PROBE = f"""
import datetime, json
from pykubelet.api.machinery import codec
from pykubelet.api.manifest import decode_api_pod
pod = decode_api_pod(json.loads({json.dumps(json.dumps(POD))}))
started = pod.status.container_statuses[0].state.running.started_at
print(json.dumps({{"loaded": codec._definitions_file.cache_info().currsize,
                  "created": str(pod.metadata.creation_timestamp),
                  "started": str(started),
                  "grace": pod.spec.termination_grace_period_seconds}}))
"""


def test_decoding_a_pod_keeps_the_schema_facts_not_the_definitions_file() -> None:
    out = subprocess.run([sys.executable, "-c", PROBE], capture_output=True, text=True,
                         check=True, timeout=60).stdout
    got = json.loads(out)
    assert got["loaded"] == 0
    assert got["created"].startswith("2026-12-04")  # times still decode as times
    assert got["started"].startswith("2026-12-04")
    assert got["grace"] == 1


def test_the_facts_agree_with_the_definitions() -> None:
    from pykubelet.api.machinery import codec

    assert codec._upstream_ref("io.k8s.api.core.v1.PodCondition", "lastTransitionTime") == \
        "io.k8s.apimachinery.pkg.apis.meta.v1.Time"
    assert codec._upstream_format("io.k8s.api.core.v1.PodSpec",
                                  "terminationGracePeriodSeconds") == "int64"
    assert codec._upstream_format("io.k8s.api.core.v1.ContainerPort", "containerPort") == \
        "int32"
    assert codec._upstream_ref("io.k8s.api.core.v1.PodSpec", "nodeName") is None
    assert codec._upstream_format("no.such.Definition", "x") is None
