"""Generated protobuf/gRPC stubs (scripts/gen_proto.py); never edit by hand."""
