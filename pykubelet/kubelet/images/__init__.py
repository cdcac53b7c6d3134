"""Images for containers (pkg/kubelet/images): EnsureImageExists with the pull policy and
pull back-off (``image_manager``), garbage collection by disk thresholds
(``image_gc_manager``), and imagePullSecrets as registry credentials (``pull_secrets``)."""
