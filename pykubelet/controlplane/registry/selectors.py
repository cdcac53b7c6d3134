"""Label and field selectors as the API server parses and applies them
(apimachinery's labels.Parse and fields.ParseSelector), with their error texts.

A label selector is a comma-separated AND of requirements: ``k``, ``!k``, ``k=v``,
``k==v``, ``k!=v``, ``k in (a,b)``, ``k notin (a,b)``, ``k>1``, ``k<1``. ``!=`` and
``notin`` also match objects that lack the key. A field selector is a comma-separated
AND of ``f=v``, ``f==v`` and ``f!=v``, where an empty value is a real term and
backslash escapes ``,``, ``=``, ``!`` and ``\\`` in values.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass


class SelectorError(ValueError):
    """A selector that does not parse; the API answers 400 BadRequest with the message."""


_NAME_PART = re.compile(r"^([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]$")
_DNS1123_SUBDOMAIN = re.compile(
    r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$")
_LABEL_VALUE = re.compile(r"^(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?$")


def _check_key(key: str) -> None:
    prefix, _, name = key.rpartition("/")
    problems = []
    if "/" in key and (not prefix or len(prefix) > 253 or not _DNS1123_SUBDOMAIN.match(prefix)):
        problems.append("prefix part must be a valid DNS subdomain")
    if not name or len(name) > 63 or not _NAME_PART.match(name):
        problems.append(
            "name part must consist of alphanumeric characters, '-', '_' or '.', and must "
            "start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or "
            "'123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')"
        )
    if problems:
        raise SelectorError(f'unable to parse requirement: key: Invalid value: "{key}": '
                            + "; ".join(problems))


def _check_value(value: str) -> None:
    if len(value) > 63 or not _LABEL_VALUE.match(value):
        raise SelectorError(
            f'unable to parse requirement: values[0][{value}]: Invalid value: "{value}": a valid '
            "label must be an empty string or consist of alphanumeric characters, '-', '_' or "
            "'.', and must start and end with an alphanumeric character (e.g. 'MyValue',  or "
            "'my_value',  or '12345', regex used for validation is "
            "'(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')"
        )


@dataclass(frozen=True, slots=True)
class Requirement:
    key: str
    op: str  # exists, !, =, !=, in, notin, gt, lt
    values: tuple[str, ...] = ()

    def matches(self, labels: Mapping[str, str]) -> bool:
        op = self.op
        if op == "exists":
            return self.key in labels
        if op == "!":
            return self.key not in labels
        value = labels.get(self.key)
        if op in ("=", "in"):
            return value is not None and value in self.values
        if op in ("!=", "notin"):
            return value is None or value not in self.values
        if value is None:
            return False
        try:
            have, want = int(value), int(self.values[0])
        except ValueError:
            return False
        return have > want if op == "gt" else have < want


@dataclass(frozen=True, slots=True)
class LabelSelector:
    requirements: tuple[Requirement, ...] = ()

    def matches(self, labels: Mapping[str, str]) -> bool:
        return all(r.matches(labels) for r in self.requirements)

    @property
    def empty(self) -> bool:
        return not self.requirements


_TOKEN = re.compile(r"\s*(\(|\)|,|!=|==|=|!|>|<|[^\s(),!=<>]+)")


def parse_label_selector(text: str | None) -> LabelSelector:
    """labels.Parse: the requirements of ``text`` (empty or None: everything)."""
    if not text or not text.strip():
        return LabelSelector()
    tokens = _tokens(text)
    reqs: list[Requirement] = []
    i = 0

    def peek() -> str | None:
        return tokens[i] if i < len(tokens) else None

    while i < len(tokens):
        tok = tokens[i]
        if tok == "!":
            i += 1
            key = peek()
            if key is None or key in "(),!=<>":
                raise SelectorError(f"unable to parse requirement: found '{key or ''}', "
                                    "expected: identifier")
            _check_key(key)
            reqs.append(Requirement(key, "!"))
            i += 1
        else:
            key = tok
            if key in "(),=<>" or key == "!=" or key == "==":
                raise SelectorError(f"found '{key}', expected: !, identifier, or 'end of string'")
            _check_key(key)
            i += 1
            op = peek()
            if op is None or op == ",":
                reqs.append(Requirement(key, "exists"))
            elif op in ("=", "==", "!="):
                i += 1
                value = peek()
                if value is None or value == ",":
                    value = ""
                else:
                    if value in "()!=<>":
                        raise SelectorError(f"found '{value}', expected: identifier")
                    i += 1
                _check_value(value)
                reqs.append(Requirement(key, "!=" if op == "!=" else "=", (value,)))
            elif op in ("in", "notin"):
                i += 1
                if peek() != "(":
                    raise SelectorError(f"found '{peek() or ''}', expected: '('")
                i += 1
                values: list[str] = []
                while True:
                    v = peek()
                    if v is None:
                        raise SelectorError("found 'end of string', expected: ')'")
                    if v == ")":
                        i += 1
                        break
                    if v == ",":
                        i += 1
                        continue
                    _check_value(v)
                    values.append(v)
                    i += 1
                reqs.append(Requirement(key, op, tuple(values) or ("",)))
            elif op in (">", "<"):
                i += 1
                value = peek() or ""
                if not value.lstrip("-").isdigit():
                    raise SelectorError(
                        f"unable to parse requirement: for 'Gt', 'Lt' operators, the value must "
                        f"be an integer: {value!r}"
                    )
                i += 1
                reqs.append(Requirement(key, "gt" if op == ">" else "lt", (value,)))
            else:
                raise SelectorError(
                    f"found '{op}', expected: in, notin, =, ==, !=, gt, lt"
                )
        nxt = peek()
        if nxt is not None:
            if nxt != ",":
                raise SelectorError(f"found '{nxt}', expected: ',' or 'end of string'")
            i += 1
    return LabelSelector(tuple(reqs))


def _tokens(text: str) -> list[str]:
    out = []
    pos = 0
    text = text.strip()
    while pos < len(text):
        m = _TOKEN.match(text, pos)
        if m is None:  # pragma: no cover - the pattern matches any character class
            raise SelectorError(f"unable to parse {text!r}")
        out.append(m.group(1))
        pos = m.end()
        while pos < len(text) and text[pos].isspace():
            pos += 1
    return out


# --------------------------------------------------------------------------- fields


@dataclass(frozen=True, slots=True)
class FieldTerm:
    field: str
    value: str
    equal: bool

    def matches(self, fields: Mapping[str, str]) -> bool:
        return (fields.get(self.field, "") == self.value) == self.equal


@dataclass(frozen=True, slots=True)
class FieldSelector:
    terms: tuple[FieldTerm, ...] = ()

    def matches(self, fields: Mapping[str, str]) -> bool:
        return all(t.matches(fields) for t in self.terms)

    @property
    def empty(self) -> bool:
        return not self.terms

    def exact(self, field: str) -> str | None:
        """The value an ``field=value`` term pins, if any (used to pick an index)."""
        for t in self.terms:
            if t.field == field and t.equal:
                return t.value
        return None


def _split_unescaped(text: str, sep: str) -> list[str]:
    parts, cur, i = [], [], 0
    while i < len(text):
        ch = text[i]
        if ch == "\\" and i + 1 < len(text):
            cur.append(text[i : i + 2])
            i += 2
            continue
        if ch == sep:
            parts.append("".join(cur))
            cur = []
        else:
            cur.append(ch)
        i += 1
    parts.append("".join(cur))
    return parts


def _unescape(value: str) -> str:
    out, i = [], 0
    while i < len(value):
        ch = value[i]
        if ch == "\\":
            if i + 1 >= len(value) or value[i + 1] not in "\\,=!":
                raise SelectorError(f"invalid field selector: invalid escape sequence in {value!r}")
            out.append(value[i + 1])
            i += 2
            continue
        if ch in ",=":
            raise SelectorError(f"invalid field selector: unescaped {ch!r} in {value!r}")
        out.append(ch)
        i += 1
    return "".join(out)


def parse_field_selector(text: str | None) -> FieldSelector:
    """fields.ParseSelector: ``f=v``/``f==v``/``f!=v`` terms joined by commas."""
    if not text:
        return FieldSelector()
    terms = []
    for part in _split_unescaped(text, ","):
        if not part:
            continue
        for op, equal in (("!=", False), ("==", True), ("=", True)):
            idx = _find_unescaped(part, op)
            if idx >= 0:
                field = part[:idx].strip()
                value = _unescape(part[idx + len(op) :])
                terms.append(FieldTerm(field, value, equal))
                break
        else:
            raise SelectorError(f"invalid selector: '{text}'; can't understand '{part}'")
    return FieldSelector(tuple(terms))


def _find_unescaped(text: str, op: str) -> int:
    i = 0
    while i < len(text):
        if text[i] == "\\":
            i += 2
            continue
        if text.startswith(op, i):
            return i
        i += 1
    return -1
