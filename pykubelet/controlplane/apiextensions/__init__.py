"""apiextensions-apiserver's job inside our API server: CustomResourceDefinitions served
(apiextensions.k8s.io/v1), and the resources each Established definition declares, stored
as unstructured JSON and checked against the definition's OpenAPI v3 schema.

Floors, each importing only those below: :mod:`.schema` (validation, defaulting and
pruning of JSON values by a schema, pure), :mod:`.validation` (the CRD's own rules),
:mod:`.unstructured` (a strategy over untyped objects), :mod:`.crds` and
:mod:`.customresources` (the two strategies), :mod:`.controller` (names, conditions,
serving and cleanup as CRDs come and go)."""
