"""Kubernetes' streaming protocols (exec, attach, port-forward), for any server or client.

The runtime's streaming server serves them (``pykubelet.runtime.streaming_server``); the
node's port 10250 and an API server proxy reuse the same pieces:

- ``spdy``: SPDY/3.1 framing with the spec's zlib header compression (pure);
- ``session``: streams multiplexed over one SPDY connection, over any byte transport
  (a socket, a hijacked aiohttp connection, WebSocket messages);
- ``protocols``: subprotocol names, channels, stream types, Status messages, resizes;
- ``server``: ``serve_remote_command(request, opts, run)`` and
  ``serve_port_forward(request, ports, dial)`` for aiohttp handlers (WebSocket v5/v4/v1 and
  SPDY, plus SPDY tunnelled in a WebSocket for kubectl >= 1.31 port-forward);
- ``client``: ``run_remote_command``/``open_remote_command`` and ``PortForwardClient`` /
  ``forward_local`` (what crictl and kubectl do with a streaming URL);
- ``proxy``: ``proxy_upgrade(request, target)``, kubelet's and the API server's
  upgrade-aware forwarding;
- ``tokens``: single-use expiring tokens for streaming URLs (kubelet's requestCache);
- ``tasks``: ``cancelled(task)``, a session's helper task stopped and reaped.
"""
