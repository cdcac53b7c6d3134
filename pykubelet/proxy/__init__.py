"""The node's service proxy: what kube-proxy's iptables proxier does, inside the agent.

Services and EndpointSlices (as the API's JSON) become per-port views
(:mod:`.serviceport`), those become one iptables-restore text (:mod:`.iptables_rules`,
pure), and :mod:`.proxier` applies it with one ``iptables-restore --noflush`` per sync
(:mod:`.iptables_restore`), partially when only some services changed.
"""
