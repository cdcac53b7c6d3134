"""The three patch types the API applies (pure functions over JSON-like data).

- JSON patch (RFC 6902, ``application/json-patch+json``) through the ``jsonpatch`` library;
- JSON merge patch (RFC 7386, ``application/merge-patch+json``): maps merge, ``null``
  deletes, lists are replaced;
- strategic merge patch (``application/strategic-merge-patch+json``), apimachinery's
  strategicpatch as kubectl apply, cordon and the Python client use it: lists whose field
  has a patch merge key merge item by item (containers by ``name``, ports by
  ``containerPort``, conditions by ``type``, ...), lists with the ``merge`` strategy of
  primitives are unions, the rest are replaced; with the directives ``$patch``
  (replace/delete/merge), ``$setElementOrder/<field>``, ``$retainKeys`` and
  ``$deleteFromPrimitiveList/<field>``.

Which lists merge, and by which key, is upstream's ``patchMergeKey``/``patchStrategy`` of
the field at that path, from the object model (``Kind.patch_meta``); without a model (a
kind it does not know) lists are replaced, as JSON merge patch does.
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Mapping
from typing import Any

import jsonpatch
import orjson

from pykubelet.api.machinery.openapi import PatchMeta

JSON_PATCH = "application/json-patch+json"
MERGE_PATCH = "application/merge-patch+json"
STRATEGIC_MERGE_PATCH = "application/strategic-merge-patch+json"
APPLY_PATCH = "application/apply-patch+yaml"
PATCH_TYPES = (JSON_PATCH, MERGE_PATCH, STRATEGIC_MERGE_PATCH)


# kube-apiserver's bounds on a JSON patch (endpoints/handlers/patch.go and the server
# config's JSONPatchMaxCopyBytes, which it sets as evanphx/json-patch's
# AccumulatedCopySizeLimit): each copy deep-copies, so n copies of the document into itself
# grow it 2^n times
MAX_JSON_PATCH_OPERATIONS = 10_000
MAX_COPY_BYTES = 3 * 1024 * 1024


class PatchError(ValueError):
    """A patch that is malformed (the API answers 400 with the message)."""


class PatchApplyError(PatchError):
    """A well-formed JSON patch that does not apply (a failed test, a missing path, too
    much copied): upstream answers 422 with the message as the cause."""


class PatchTooLarge(PatchError):
    """More operations than the API applies (413)."""


MetaFn = Callable[[tuple[str, ...]], PatchMeta | None]


def _no_meta(path: tuple[str, ...]) -> PatchMeta | None:
    return None


def apply_patch(patch_type: str, original: dict[str, Any], patch: Any,
                meta: MetaFn = _no_meta) -> dict[str, Any]:
    """The object after ``patch``; raises PatchError on a malformed or failing patch.
    ``meta`` gives a field's patch metadata by its path (for strategic merge)."""
    if patch_type == JSON_PATCH:
        return apply_json_patch(original, patch)
    if not isinstance(patch, Mapping):
        raise PatchError("patch body must be a JSON object")
    if patch_type == MERGE_PATCH:
        merged = merge_patch(original, patch)
    elif patch_type == STRATEGIC_MERGE_PATCH:
        merged = strategic_merge(original, patch, meta)
    else:
        raise PatchError(f"unsupported patch type {patch_type}")
    if not isinstance(merged, dict):
        raise PatchError("patch removed the whole object")
    return merged


def apply_json_patch(original: dict[str, Any], patch: Any) -> dict[str, Any]:
    """RFC 6902 within upstream's bounds: at most MAX_JSON_PATCH_OPERATIONS operations,
    and the bytes ``copy`` operations add (their values' JSON) at most MAX_COPY_BYTES,
    checked before each copy is made."""
    if not isinstance(patch, list):
        raise PatchError("json patch must be an array of operations")
    try:
        ops = jsonpatch.JsonPatch(patch)._ops  # type: ignore[attr-defined]
    except (jsonpatch.JsonPatchException, jsonpatch.JsonPointerException) as exc:
        raise PatchError(str(exc)) from None
    except (TypeError, KeyError, ValueError, AttributeError) as exc:
        raise PatchError(f"invalid json patch: {exc}") from None
    if len(ops) > MAX_JSON_PATCH_OPERATIONS:
        raise PatchTooLarge(f"The allowed maximum operations in a JSON patch is "
                            f"{MAX_JSON_PATCH_OPERATIONS}, got {len(ops)}")
    doc: Any = copy.deepcopy(original)
    copied = 0
    try:
        for op in ops:
            if isinstance(op, jsonpatch.CopyOperation):
                value = jsonpatch.JsonPointer(op.operation["from"]).resolve(doc)
                copied += _json_size(value)
                if copied > MAX_COPY_BYTES:
                    raise PatchApplyError(
                        f"Unable to complete the copy, the accumulated size increase of copy "
                        f"is {copied}, exceeding the limit {MAX_COPY_BYTES}")
            doc = op.apply(doc)
    except PatchApplyError:
        raise
    except (jsonpatch.JsonPatchException, jsonpatch.JsonPointerException) as exc:
        raise PatchApplyError(str(exc)) from None
    except (TypeError, KeyError, IndexError, ValueError) as exc:
        raise PatchApplyError(f"invalid json patch: {exc}") from None
    if not isinstance(doc, dict):
        raise PatchApplyError("json patch did not produce an object")
    return doc


def _json_size(value: Any) -> int:
    try:
        return len(orjson.dumps(value))
    except (orjson.JSONEncodeError, TypeError):
        return len(repr(value))


def merge_patch(original: Any, patch: Any) -> Any:
    """RFC 7386."""
    if not isinstance(patch, Mapping):
        return copy.deepcopy(patch)
    result = dict(original) if isinstance(original, Mapping) else {}
    for key, value in patch.items():
        if value is None:
            result.pop(key, None)
        else:
            result[key] = merge_patch(result.get(key), value)
    return result


def strategic_merge(original: Any, patch: Mapping[str, Any], meta: MetaFn = _no_meta,
                    path: tuple[str, ...] = ()) -> Any:
    """apimachinery's StrategicMergePatch over plain data; ``path`` is where ``original``
    sits in its object (wire names, list items take their list's path)."""
    directive = patch.get("$patch")
    if directive == "replace":
        return _strip({k: v for k, v in patch.items() if k != "$patch"})
    if directive == "delete":
        return None
    if directive not in (None, "merge"):
        raise PatchError(f"Unknown patch type: {directive}")
    result: dict[str, Any] = dict(original) if isinstance(original, Mapping) else {}
    orders: dict[str, list[Any]] = {}
    retain = patch.get("$retainKeys")
    if retain is not None and not isinstance(retain, list):
        raise PatchError("invalid patch format of retainKeys")
    for key, pv in patch.items():
        if key in ("$patch", "$retainKeys"):
            continue
        if key.startswith("$setElementOrder/"):
            if pv is not None and not isinstance(pv, list):
                raise PatchError("invalid patch format of setElementOrder list")
            orders[key.split("/", 1)[1]] = list(pv or [])
            continue
        if key.startswith("$deleteFromPrimitiveList/"):
            if pv is not None and not isinstance(pv, list):
                raise PatchError("invalid patch format of primitive list")
            field = key.split("/", 1)[1]
            drop = list(pv or [])
            result[field] = [v for v in result.get(field) or [] if v not in drop]
            continue
        if pv is None:
            result.pop(key, None)
            continue
        ov = result.get(key)
        if isinstance(pv, Mapping):
            merged = strategic_merge(ov if isinstance(ov, Mapping) else {}, pv, meta,
                                     (*path, key))
            if merged is None:
                result.pop(key, None)
            else:
                result[key] = merged
        elif isinstance(pv, list):
            result[key] = _merge_list((*path, key), ov if isinstance(ov, list) else [], pv,
                                      meta)
        else:
            result[key] = pv
    for field, order in orders.items():
        if isinstance(result.get(field), list):
            result[field] = _apply_order(_merge_key((*path, field), meta), result[field],
                                         order)
    if isinstance(retain, list):
        result = {k: v for k, v in result.items() if k in retain}
    return result


def _merge_key(path: tuple[str, ...], meta: MetaFn) -> str | None:
    m = meta(path)
    return m.merge_key if m is not None and m.merges and m.merge_key else None


def _merge_list(path: tuple[str, ...], original: list[Any], patch: list[Any],
                meta: MetaFn) -> list[Any]:
    m = meta(path)
    field = path[-1]
    key = m.merge_key if m is not None and m.merges and m.merge_key else None
    if any(isinstance(p, Mapping) and p.get("$patch") == "replace" for p in patch):
        return [_strip(p) for p in patch if not (isinstance(p, Mapping) and "$patch" in p)]
    if key is None:
        if m is not None and m.merges:  # a merge-strategy list of primitives: a set
            out = list(original)
            for v in patch:
                if v not in out:
                    out.append(v)
            return out
        return [_strip(p) if isinstance(p, Mapping) else p for p in patch]
    out = [copy.deepcopy(o) for o in original]
    for p in patch:
        if not isinstance(p, Mapping):
            raise PatchError(f"{field}: expected an object with merge key {key!r}, got {p!r}")
        if key not in p:
            raise PatchError(f"map: {dict(p)} does not contain declared merge key: {key}")
        idx = next((i for i, o in enumerate(out)
                    if isinstance(o, Mapping) and o.get(key) == p[key]), None)
        if p.get("$patch") == "delete":
            if idx is not None:
                del out[idx]
            continue
        if idx is None:
            out.append(_strip(p))
        else:
            out[idx] = strategic_merge(out[idx], p, meta, path)
    return out


def _apply_order(key: str | None, items: list[Any], order: list[Any]) -> list[Any]:

    def ident(v: Any) -> Any:
        return v.get(key) if key and isinstance(v, Mapping) else v

    wanted = [ident(o) for o in order]
    ordered = sorted(
        items,
        key=lambda v: (wanted.index(ident(v)) if ident(v) in wanted else len(wanted)),
    )
    return ordered


def _strip(value: Any) -> Any:
    """A patch fragment with its directives removed (a newly added list item or map)."""
    if isinstance(value, Mapping):
        return {k: _strip(v) for k, v in value.items()
                if not (isinstance(k, str) and k.startswith("$"))}
    if isinstance(value, list):
        return [_strip(v) for v in value]
    return value
