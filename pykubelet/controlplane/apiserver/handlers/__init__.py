"""The verbs' HTTP handlers, one module per verb family as kube-apiserver's
endpoints/handlers (get.go, create.go, update.go, patch.go, delete.go, watch.go) over the
common request scope (rest.go): each reads its request, calls the registry's store once and
writes the answer. Routing, the filters and dispatch stay in :mod:`..app`."""
