"""The CRI seam of the kubelet side: cri-api's RuntimeService/ImageManagerService
Protocols (``runtime_service``) and the remote gRPC client (``cri_client``), the only module
of the kubelet side that imports grpc."""
