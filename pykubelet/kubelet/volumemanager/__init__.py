"""Pod volumes on the node (pkg/kubelet/volumemanager with the volume plugins it drives):
emptyDir, hostPath, configMap, secret, downwardAPI and projected (``volumes``), and the
downward API's files (``downward_api``)."""
