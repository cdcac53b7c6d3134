"""Running under systemd: the notify protocol (READY, STATUS, WATCHDOG, STOPPING), a
health-gated watchdog as kubelet's, journald's level prefixes, and the unit that
``pykubelet install-service`` writes."""
