"""Server-side apply's field manager (k8s.io/apimachinery/pkg/util/managedfields and
sigs.k8s.io/structured-merge-diff), as pure functions over JSON-like objects:

- :mod:`.fieldpath`: path elements (``f:``, ``k:``, ``v:``), field sets, FieldsV1;
- :mod:`.schema`: how each field merges, from the OpenAPI definitions (list-maps by
  ``x-kubernetes-list-map-keys``, sets, atomic lists and maps, granular structs and maps);
- :mod:`.typed`: an object's field set, the comparison of two objects, merge, removal;
- :mod:`.managed`: ``metadata.managedFields`` entries decoded and encoded;
- :mod:`.manager`: Apply (merge, conflicts, force, pruning) and Update (ownership of
  what a write changed).
"""
