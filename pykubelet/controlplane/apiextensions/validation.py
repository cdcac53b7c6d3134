"""A CustomResourceDefinition's own rules (apiextensions' pkg/apis/apiextensions/validation
and its defaults), with upstream's field errors: the name must be
``<spec.names.plural>.<spec.group>``, names are DNS-1035 labels, exactly one storage
version, a structural schema for each version (``type`` everywhere, ``object`` at the
root), and no conversion webhook (this server converts only by rewriting apiVersion)."""

from __future__ import annotations

from typing import Any

from pykubelet.api.machinery import field
from pykubelet.api.machinery.field import FieldError
from pykubelet.api.machinery.validation import (
    is_dns1035_label,
    is_dns1123_subdomain,
    name_is_dns_subdomain,
)
from pykubelet.api.meta_validation import validate_object_meta
from pykubelet.api.types import ObjectMeta
from pykubelet.controlplane.apiextensions.schema import INT_OR_STRING, PRESERVE

Obj = dict[str, Any]
SCOPES = ("Cluster", "Namespaced")
COLUMN_TYPES = ("integer", "number", "string", "boolean", "date")


def _obj(value: Any) -> Obj:
    return value if isinstance(value, dict) else {}


def set_defaults(crd: Obj) -> None:
    """SetDefaults_CustomResourceDefinition(Spec): singular, listKind, conversion."""
    spec = crd.setdefault("spec", {})
    if not isinstance(spec, dict):
        return
    names = spec.get("names")
    if isinstance(names, dict) and isinstance(names.get("kind"), str):
        names.setdefault("singular", names["kind"].lower())
        names.setdefault("listKind", names["kind"] + "List")
    conversion = spec.setdefault("conversion", {"strategy": "None"})
    if isinstance(conversion, dict):
        conversion.setdefault("strategy", "None")


def validate(crd: Obj, meta: ObjectMeta) -> list[FieldError]:
    """ValidateCustomResourceDefinition on a create."""
    spec = _obj(crd.get("spec"))
    names = _obj(spec.get("names"))
    required_name = f"{names.get('plural', '')}.{spec.get('group', '')}"

    def name_fn(name: str, prefix: bool) -> list[str]:
        out = name_is_dns_subdomain(name, prefix)
        if name != required_name:
            out.append('must be spec.names.plural+"."+spec.group')
        return out

    errs = validate_object_meta(meta, namespaced=False, name_fn=name_fn)
    return errs + validate_spec(spec, "spec")


def validate_update(new: Obj, new_meta: ObjectMeta, old: Obj) -> list[FieldError]:
    """The update rules: the spec's rules, and group, names.plural and scope kept (as
    upstream once stored objects exist)."""
    spec = _obj(new.get("spec"))
    errs = validate_spec(spec, "spec")
    old_spec = _obj(old.get("spec"))
    if spec.get("group") != old_spec.get("group"):
        errs.append(field.invalid("spec.group", spec.get("group"), "field is immutable"))
    return errs


def validate_spec(spec: Obj, path: str) -> list[FieldError]:
    errs: list[FieldError] = []
    group = spec.get("group") or ""
    if not group:
        errs.append(field.required(f"{path}.group", ""))
    elif is_dns1123_subdomain(group):
        errs.append(field.invalid(f"{path}.group", group, ",".join(is_dns1123_subdomain(group))))
    elif len(group.split(".")) < 2:
        errs.append(field.invalid(f"{path}.group", group,
                                  "should be a domain with at least one dot"))
    scope = spec.get("scope") or ""
    if not scope:
        errs.append(field.required(f"{path}.scope", ""))
    elif scope not in SCOPES:
        errs.append(field.not_supported(f"{path}.scope", scope, SCOPES))
    errs += _names_errors(spec.get("names") or {}, f"{path}.names")
    errs += _versions_errors(spec.get("versions") or [], f"{path}.versions")
    conversion = spec.get("conversion") or {}
    strategy = conversion.get("strategy", "None")
    if strategy == "Webhook":
        errs.append(field.invalid(
            f"{path}.conversion.strategy", strategy, 'conversion webhooks are not supported by '
            'this API server: versions are converted only by the "None" strategy '
            "(apiVersion rewritten)"))
    elif strategy != "None":
        errs.append(field.not_supported(f"{path}.conversion.strategy", strategy,
                                        ("None", "Webhook")))
    return errs


def _names_errors(names: Obj, path: str) -> list[FieldError]:
    errs: list[FieldError] = []
    for key in ("plural", "singular", "kind", "listKind"):
        if not names.get(key):
            errs.append(field.required(f"{path}.{key}", ""))
    for key in ("plural", "singular"):
        value = names.get(key) or ""
        if value and is_dns1035_label(value):
            errs.append(field.invalid(f"{path}.{key}", value, ",".join(is_dns1035_label(value))))
    for key in ("kind", "listKind"):
        value = names.get(key) or ""
        if value and is_dns1035_label(value.lower()):
            errs.append(field.invalid(f"{path}.{key}", value, "may have mixed case, but should "
                                      "otherwise match: " + ",".join(
                                          is_dns1035_label(value.lower()))))
    if names.get("kind") and names.get("kind") == names.get("listKind"):
        errs.append(field.invalid(f"{path}.listKind", names["listKind"],
                                  "kind and listKind may not be the same"))
    for i, short in enumerate(names.get("shortNames") or []):
        if is_dns1035_label(short):
            errs.append(field.invalid(f"{path}.shortNames[{i}]", short,
                                      ",".join(is_dns1035_label(short))))
    for i, cat in enumerate(names.get("categories") or []):
        if is_dns1035_label(cat):
            errs.append(field.invalid(f"{path}.categories[{i}]", cat,
                                      ",".join(is_dns1035_label(cat))))
    return errs


def _versions_errors(versions: list[Any], path: str) -> list[FieldError]:
    errs: list[FieldError] = []
    storage = [v for v in versions if isinstance(v, dict) and v.get("storage")]
    if len(storage) != 1:
        errs.append(field.invalid(path, [v.get("name") for v in versions if isinstance(v, dict)],
                                  "must have exactly one version marked as storage version"))
    seen: set[str] = set()
    for i, v in enumerate(versions):
        vp = f"{path}[{i}]"
        if not isinstance(v, dict):
            errs.append(field.invalid(vp, v, "must be an object"))
            continue
        name = v.get("name") or ""
        if not name:
            errs.append(field.required(f"{vp}.name", ""))
        elif is_dns1035_label(name):
            errs.append(field.invalid(f"{vp}.name", name, ",".join(is_dns1035_label(name))))
        elif name in seen:
            errs.append(field.invalid(f"{vp}.name", name, "must be unique"))
        seen.add(name)
        schema = (v.get("schema") or {}).get("openAPIV3Schema")
        sp = f"{vp}.schema.openAPIV3Schema"
        if schema is None:
            errs.append(field.required(sp, "schemas are required"))
        else:
            errs += structural_errors(schema, sp)
        errs += _columns_errors(v.get("additionalPrinterColumns") or [],
                                f"{vp}.additionalPrinterColumns")
        subs = v.get("subresources") or {}
        scale = subs.get("scale")
        if isinstance(scale, dict):
            for key in ("specReplicasPath", "statusReplicasPath"):
                value = scale.get(key) or ""
                if not value:
                    errs.append(field.required(f"{vp}.subresources.scale.{key}", ""))
                elif not value.startswith("."):
                    errs.append(field.invalid(f"{vp}.subresources.scale.{key}", value,
                                              "should be a json path under .spec"
                                              if key == "specReplicasPath" else
                                              "should be a json path under .status"))
    return errs


def _columns_errors(columns: list[Any], path: str) -> list[FieldError]:
    errs: list[FieldError] = []
    for i, c in enumerate(columns):
        cp = f"{path}[{i}]"
        if not c.get("name"):
            errs.append(field.required(f"{cp}.name", ""))
        if not c.get("type"):
            errs.append(field.required(f"{cp}.type", ""))
        elif c["type"] not in COLUMN_TYPES:
            errs.append(field.not_supported(f"{cp}.type", c["type"], COLUMN_TYPES))
        if not c.get("jsonPath"):
            errs.append(field.required(f"{cp}.jsonPath", ""))
    return errs


def structural_errors(schema: Any, path: str) -> list[FieldError]:
    """The structural schema rules a v1 CRD's schema must keep (schema.ValidateStructural):
    every specified field has a type, the root is an object."""
    errs: list[FieldError] = []
    if not isinstance(schema, dict):
        return [field.invalid(path, schema, "must be an object")]
    root_type = schema.get("type")
    if not root_type:
        errs.append(field.required(f"{path}.type", "must not be empty at the root"))
    elif root_type != "object":
        errs.append(field.invalid(f"{path}.type", root_type, "must be object at the root"))
    _structural(schema, path, errs, root=True)
    return errs


def _structural(s: Obj, path: str, errs: list[FieldError], root: bool = False) -> None:
    if s.get(PRESERVE) is False:
        errs.append(field.invalid(f"{path}.{PRESERVE}", False, "must be true or undefined"))
    if s.get(INT_OR_STRING) and s.get("type"):
        errs.append(field.invalid(f"{path}.type", s["type"],
                                  f"must be empty if {INT_OR_STRING} is true"))
    if s.get("properties") and isinstance(s.get("additionalProperties"), dict):
        errs.append(field.forbidden(f"{path}.additionalProperties",
                                    "additionalProperties and properties are mutual exclusive"))
    for key, sub in (s.get("properties") or {}).items():
        sp = f"{path}.properties[{key}]"
        if not isinstance(sub, dict):
            errs.append(field.invalid(sp, sub, "must be an object"))
            continue
        if not sub.get("type") and not sub.get(INT_OR_STRING) and not sub.get(PRESERVE):
            errs.append(field.required(f"{sp}.type", "must not be empty for specified object "
                                                     "fields"))
        _structural(sub, sp, errs)
    items = s.get("items")
    if isinstance(items, dict):
        if not items.get("type") and not items.get(INT_OR_STRING) and not items.get(PRESERVE):
            errs.append(field.required(f"{path}.items.type", "must not be empty for specified "
                                                             "array items"))
        _structural(items, f"{path}.items", errs)
    elif s.get("type") == "array" and items is None:
        errs.append(field.required(f"{path}.items", "must be specified"))
    extra = s.get("additionalProperties")
    if isinstance(extra, dict):
        if not extra.get("type") and not extra.get(INT_OR_STRING) and not extra.get(PRESERVE):
            errs.append(field.required(f"{path}.additionalProperties.type",
                                       "must not be empty for specified additionalProperties"))
        _structural(extra, f"{path}.additionalProperties", errs)


__all__ = ["set_defaults", "structural_errors", "validate", "validate_update"]
