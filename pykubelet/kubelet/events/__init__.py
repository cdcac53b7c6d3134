"""Kubelet's events (pkg/kubelet/events): the reason strings as upstream spells them
(``reasons``) and the recorder that correlates repeats and hands them to a sink
(``recorder``)."""
