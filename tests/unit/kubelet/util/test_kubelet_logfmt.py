"""The agent's log lines in klog's structured form: one grep-able line per pod event."""

from __future__ import annotations

from kubelet_builders import make_pod

from pykubelet.kubelet.util.logfmt import kv, pod_ref


def test_kv_quotes_strings_and_renders_lists_as_json() -> None:
    pod = make_pod()
    assert pod_ref(pod) == "default/web"
    assert kv("SyncLoop ADD", source="file", pods=[pod_ref(pod)]) == (
        '"SyncLoop ADD" source="file" pods=["default/web"]')
    assert kv("Killing container with a grace period", pod="default/web",
              containerName="a b", gracePeriod=30, podIP=None, ready=True) == (
        '"Killing container with a grace period" pod="default/web" containerName="a b" '
        "gracePeriod=30 ready=true")
    assert kv("x", err='say "no"\nnow') == '"x" err="say \\"no\\"\\nnow"'
