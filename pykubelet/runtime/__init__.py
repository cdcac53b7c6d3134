"""The CRI runtime: image store, sandboxes, runc containers and the CRI v1 server."""
