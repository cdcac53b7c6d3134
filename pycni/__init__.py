"""pycni: the CNI spec in Python, both sides of it.

Plugins (loopback, bridge, host-local) that any CNI runtime can exec, and a
runtime side (libcni's job) that can exec any CNI plugin binary or call ours
in-process.
"""
