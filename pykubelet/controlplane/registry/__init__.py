"""The registry: one generic store (``store.py``) serving every resource through that
resource's strategy (its hooks for create, update, delete, validation and selectable
fields), as apiserver's generic registry and pkg/registry/core/<resource>/strategy.go;
with the rules every writer shares, HTTP or in-process: patches (``patch.py``), binding,
eviction and pod conditions. Installed in one place (``install.py``)."""
