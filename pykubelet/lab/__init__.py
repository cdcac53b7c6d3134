"""The one-host lab (`pykubelet lab up/down/status`): N nodes as network namespaces on a
host bridge, each running its own `pykubelet run`, node 1 also the control plane.

Shaped as kind's create: a Provider for netns nodes (``provider.py``), the names and
addresses of a lab as pure data (``layout.py``), what a lab made and which processes it
runs in one state file (``state.py``), a list of idempotent steps over one context
(``create.py``), a teardown that needs only that file and the names (``teardown.py``),
a ✓/✗ printer (``status.py``), and the lab's local OCI registry on the host's end of its
bridge, which every node trusts as insecure (``image_server.py``).
"""
