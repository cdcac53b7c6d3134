"""swagger_doc: a field's description as upstream's SwaggerDoc() gives it, read from the
definitions every Table column and CRD printer column takes its description from."""

from __future__ import annotations

import pytest

from pykubelet.api.machinery.swaggerdoc import OBJECT_META, swagger_doc


def test_object_meta_name_is_upstreams_text() -> None:
    assert swagger_doc(OBJECT_META, "name").startswith("Name must be unique within a namespace.")
    assert "RFC3339" in swagger_doc(OBJECT_META, "creationTimestamp")


def test_an_unknown_field_is_an_error() -> None:
    with pytest.raises(KeyError):
        swagger_doc(OBJECT_META, "noSuchField")
