"""CRI v1 gRPC face of the runtime: server, servicers, per-area RPC adapters."""
