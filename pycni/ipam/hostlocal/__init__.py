"""host-local IPAM: ranges from the config, one file per address under dataDir.

Same config keys and on-disk format as the reference (containernetworking/plugins
1.1.1), so either implementation can take over the other's data dir.
"""
