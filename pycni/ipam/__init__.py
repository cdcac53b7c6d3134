"""IPAM: the host-local allocator and applying an IPAM result to an interface."""
