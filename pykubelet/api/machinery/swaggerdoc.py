"""Field descriptions as upstream's generated ``SwaggerDoc()`` methods give them.

kube-apiserver's Table columns and a CRD's default printer columns describe themselves
with the documentation of the field they show (``metav1.ObjectMeta{}.SwaggerDoc()["name"]``);
here that text is read from the same definitions the codec checks objects against, so
each printer names a field instead of carrying a copy of its prose.
"""

from __future__ import annotations

from pykubelet.api.machinery.codec import definitions

OBJECT_META = "io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta"


def swagger_doc(definition: str, prop: str) -> str:
    """The description of field `prop` of `definition` (a KeyError when it has no such field)."""
    return str(definitions()[definition]["properties"][prop].get("description", ""))
