"""Cluster DNS: names of Services and their endpoints, as the Kubernetes DNS
specification (kubernetes/dns docs/specification.md) and CoreDNS's kubernetes plugin give
them: ``records`` builds the zone from Service and EndpointSlice objects (a pure
function), ``server`` answers over UDP and TCP and forwards the rest."""
