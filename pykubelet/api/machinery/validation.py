"""The name and label rules every kind shares (upstream's k8s.io/apimachinery/pkg/util/validation
and pkg/apis/meta/v1/validation), with upstream's messages.

The `is_*` functions return the problems as upstream's strings (an empty list: fine); the
`validate_*` functions turn them into FieldErrors at a path.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping

from pykubelet.api.machinery.field import FieldError, invalid, required, too_long

DNS1123_LABEL_MAX_LENGTH = 63
DNS1123_SUBDOMAIN_MAX_LENGTH = 253
QUALIFIED_NAME_MAX_LENGTH = 63
LABEL_VALUE_MAX_LENGTH = 63
TOTAL_ANNOTATION_SIZE_LIMIT_B = 256 * (1 << 10)  # 256 KiB

_DNS1123_LABEL_FMT = "[a-z0-9]([-a-z0-9]*[a-z0-9])?"
_DNS1123_SUBDOMAIN_FMT = _DNS1123_LABEL_FMT + "(\\." + _DNS1123_LABEL_FMT + ")*"
_QUALIFIED_NAME_FMT = "([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]"
_LABEL_VALUE_FMT = "(" + _QUALIFIED_NAME_FMT + ")?"
_CONFIG_MAP_KEY_FMT = "[-._a-zA-Z0-9]+"
_ENV_VAR_NAME_FMT = "[-._a-zA-Z][-._a-zA-Z0-9]*"

_DNS1123_LABEL_RE = re.compile(f"^{_DNS1123_LABEL_FMT}$")
_DNS1123_SUBDOMAIN_RE = re.compile(f"^{_DNS1123_SUBDOMAIN_FMT}$")
_QUALIFIED_NAME_RE = re.compile(f"^{_QUALIFIED_NAME_FMT}$")
_LABEL_VALUE_RE = re.compile(f"^{_LABEL_VALUE_FMT}$")
_CONFIG_MAP_KEY_RE = re.compile(f"^{_CONFIG_MAP_KEY_FMT}$")


def regex_error(msg: str, fmt: str, *examples: str) -> str:
    """validation.RegexError: the message, examples, and the regex itself."""
    if not examples:
        return f"{msg} (regex used for validation is '{fmt}')"
    shown = " or ".join(f"'{e}', " for e in examples)
    return f"{msg} (e.g. {shown}regex used for validation is '{fmt}')"


def max_len_error(length: int) -> str:
    return f"must be no more than {length} characters"


EMPTY_ERROR = "must be non-empty"

DNS1123_LABEL_ERROR = regex_error(
    "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', "
    "and must start and end with an alphanumeric character",
    _DNS1123_LABEL_FMT,
    "my-name",
    "123-abc",
)
DNS1123_SUBDOMAIN_ERROR = regex_error(
    "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' "
    "or '.', and must start and end with an alphanumeric character",
    _DNS1123_SUBDOMAIN_FMT,
    "example.com",
)
_QUALIFIED_NAME_ERROR = regex_error(
    "must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an "
    "alphanumeric character",
    _QUALIFIED_NAME_FMT,
    "MyName",
    "my.name",
    "123-abc",
)
_LABEL_VALUE_ERROR = regex_error(
    "a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or "
    "'.', and must start and end with an alphanumeric character",
    _LABEL_VALUE_FMT,
    "MyValue",
    "my_value",
    "12345",
)
_CONFIG_MAP_KEY_ERROR = regex_error(
    "a valid config key must consist of alphanumeric characters, '-', '_' or '.'",
    _CONFIG_MAP_KEY_FMT,
    "key.name",
    "KEY_NAME",
    "key-name",
)


def _length_and_form(value: str, max_length: int, form: re.Pattern[str], error: str) -> list[str]:
    errs = []
    if len(value) > max_length:
        errs.append(max_len_error(max_length))
    if not form.match(value):
        errs.append(error)
    return errs


def is_dns1123_label(value: str) -> list[str]:
    return _length_and_form(value, DNS1123_LABEL_MAX_LENGTH, _DNS1123_LABEL_RE, DNS1123_LABEL_ERROR)


def is_dns1123_subdomain(value: str) -> list[str]:
    return _length_and_form(
        value, DNS1123_SUBDOMAIN_MAX_LENGTH, _DNS1123_SUBDOMAIN_RE, DNS1123_SUBDOMAIN_ERROR
    )


def is_qualified_name(value: str) -> list[str]:
    """A label key, annotation key or finalizer: [prefix/]name."""
    errs: list[str] = []
    parts = value.split("/")
    if len(parts) == 1:
        name = parts[0]
    elif len(parts) == 2:
        prefix, name = parts
        if not prefix:
            errs.append("prefix part " + EMPTY_ERROR)
        else:
            errs.extend("prefix part " + m for m in is_dns1123_subdomain(prefix))
    else:
        return [
            "a qualified name "
            + _QUALIFIED_NAME_ERROR
            + " with an optional DNS subdomain prefix and '/' (e.g. 'example.com/MyName')"
        ]
    if not name:
        errs.append("name part " + EMPTY_ERROR)
    elif len(name) > QUALIFIED_NAME_MAX_LENGTH:
        errs.append("name part " + max_len_error(QUALIFIED_NAME_MAX_LENGTH))
    if not _QUALIFIED_NAME_RE.match(name):
        errs.append("name part " + _QUALIFIED_NAME_ERROR)
    return errs


def is_valid_label_value(value: str) -> list[str]:
    return _length_and_form(value, LABEL_VALUE_MAX_LENGTH, _LABEL_VALUE_RE, _LABEL_VALUE_ERROR)


def is_config_map_key(value: str) -> list[str]:
    """A key of ConfigMap/Secret data: a file name in a volume."""
    errs = _length_and_form(
        value, DNS1123_SUBDOMAIN_MAX_LENGTH, _CONFIG_MAP_KEY_RE, _CONFIG_MAP_KEY_ERROR
    )
    if value == ".":
        errs.append("must not be '.'")
    elif value == "..":
        errs.append("must not be '..'")
    elif value.startswith(".."):
        errs.append("must not start with '..'")
    return errs


def mask_trailing_dash(name: str) -> str:
    """A generateName prefix may end in '-': validate it as if it did not."""
    if len(name) > 1 and name.endswith("-"):
        return name[:-2] + "a"
    return name


def name_is_dns_subdomain(name: str, prefix: bool) -> list[str]:
    """ValidateNameFunc for most kinds (pods, nodes, configmaps, ...)."""
    return is_dns1123_subdomain(mask_trailing_dash(name) if prefix else name)


_DNS1035_LABEL_FMT = "[a-z]([-a-z0-9]*[a-z0-9])?"
_DNS1035_LABEL_RE = re.compile(f"^{_DNS1035_LABEL_FMT}$")
DNS1035_LABEL_ERROR = regex_error(
    "a DNS-1035 label must consist of lower case alphanumeric characters or '-', start with "
    "an alphabetic character, and end with an alphanumeric character",
    _DNS1035_LABEL_FMT,
    "my-name",
    "abc-123",
)


def is_dns1035_label(value: str) -> list[str]:
    """IsDNS1035Label (Service names: they become DNS labels and environment variables)."""
    return _length_and_form(value, DNS1123_LABEL_MAX_LENGTH, _DNS1035_LABEL_RE,
                            DNS1035_LABEL_ERROR)


def name_is_dns1035_label(name: str, prefix: bool) -> list[str]:
    """ValidateNameFunc for Services (NameIsDNS1035Label)."""
    return is_dns1035_label(mask_trailing_dash(name) if prefix else name)


def name_is_dns_label(name: str, prefix: bool) -> list[str]:
    """ValidateNameFunc for namespaces."""
    return is_dns1123_label(mask_trailing_dash(name) if prefix else name)


# --------------------------------------------------------------------------- FieldErrors


def validate_label_name(key: str, path: str) -> list[FieldError]:
    return [invalid(path, key, m) for m in is_qualified_name(key)]


def validate_labels(labels: Mapping[str, str], path: str) -> list[FieldError]:
    """metav1validation.ValidateLabels: qualified keys, valid values."""
    errs: list[FieldError] = []
    for k, v in labels.items():
        errs += validate_label_name(k, path)
        errs += [invalid(path, v, m) for m in is_valid_label_value(v)]
    return errs


def validate_annotations(annotations: Mapping[str, str], path: str) -> list[FieldError]:
    """Keys are qualified names (case-insensitively); all of them fit in 256 KiB."""
    errs: list[FieldError] = []
    for k in annotations:
        errs += [invalid(path, k, m) for m in is_qualified_name(k.lower())]
    size = sum(len(k.encode()) + len(v.encode()) for k, v in annotations.items())
    if size > TOTAL_ANNOTATION_SIZE_LIMIT_B:
        errs.append(too_long(path, "", TOTAL_ANNOTATION_SIZE_LIMIT_B))
    return errs


def validate_finalizers(finalizers: Iterable[str], path: str) -> list[FieldError]:
    return [invalid(path, f, m) for f in finalizers for m in is_qualified_name(f)]


def validate_non_negative(value: int, path: str) -> list[FieldError]:
    if value < 0:
        return [invalid(path, value, "must be greater than or equal to 0")]
    return []


def validate_dns_label(value: str, path: str) -> list[FieldError]:
    return [invalid(path, value, m) for m in is_dns1123_label(value)]


def validate_dns_subdomain(value: str, path: str) -> list[FieldError]:
    return [invalid(path, value, m) for m in is_dns1123_subdomain(value)]


def validate_required_string(value: str, path: str) -> list[FieldError]:
    return [] if value else [required(path)]
