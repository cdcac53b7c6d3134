"""Probes (pkg/kubelet/prober): the pure worker state machine and probers (``probes``) and
the manager that runs one worker thread per probe (``prober_manager``)."""
