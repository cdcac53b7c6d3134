"""The faces of pykubelet: the `pykubelet` and `pykubectl` command lines."""
