"""Image references, normalised as containerd and docker do.

``busybox`` and ``docker.io/library/busybox:latest`` must name the same image, so every
reference is normalised once (default domain ``docker.io``, ``library/`` for official
images, tag ``latest``) before the store looks it up.
"""

from __future__ import annotations

import re

from pykubelet.runtime.errors import InvalidArgument

DEFAULT_DOMAIN = "docker.io"
DEFAULT_TAG = "latest"

_COMPONENT = r"[a-z0-9]+(?:(?:[._]|__|-+)[a-z0-9]+)*"
_PATH_RE = re.compile(rf"{_COMPONENT}(?:/{_COMPONENT})*")
_DOMAIN_RE = re.compile(r"[a-zA-Z0-9](?:[a-zA-Z0-9.-]*[a-zA-Z0-9])?(?::[0-9]+)?")
_TAG_RE = re.compile(r"[\w][\w.-]{0,127}")
_DIGEST_RE = re.compile(r"sha256:[0-9a-f]{64}")
_ID_RE = re.compile(r"(?:sha256:)?[0-9a-f]{64}")


def is_image_id(ref: str) -> bool:
    """True for ``sha256:<64 hex>`` or a bare 64-hex ID."""
    return bool(_ID_RE.fullmatch(ref))


def canonical_id(ref: str) -> str:
    return ref if ref.startswith("sha256:") else "sha256:" + ref


def normalize(ref: str, *, field: str = "image") -> str:
    """``busybox`` -> ``docker.io/library/busybox:latest``; ``x@sha256:..`` keeps the digest.

    Raises InvalidArgument naming ``field`` when the reference is malformed.
    """
    original = ref
    ref = ref.strip()
    if not ref:
        raise InvalidArgument(f"{field}: image reference is empty")
    name, _, digest = ref.partition("@")
    if digest and not _DIGEST_RE.fullmatch(digest):
        raise InvalidArgument(f"{field}: {original!r} has an invalid digest {digest!r}")
    slash = name.rfind("/")
    colon = name.rfind(":")
    tag = ""
    if colon > slash:
        name, tag = name[:colon], name[colon + 1 :]
        if not _TAG_RE.fullmatch(tag):
            raise InvalidArgument(f"{field}: {original!r} has an invalid tag {tag!r}")
    first, sep, rest = name.partition("/")
    if sep and ("." in first or ":" in first or first == "localhost"):
        domain, path = first, rest
    else:
        domain, path = DEFAULT_DOMAIN, name
    if domain == "index.docker.io":
        domain = DEFAULT_DOMAIN
    if not _DOMAIN_RE.fullmatch(domain):
        raise InvalidArgument(f"{field}: {original!r} has an invalid registry {domain!r}")
    if not _PATH_RE.fullmatch(path):
        raise InvalidArgument(
            f"{field}: {original!r} is not a valid image reference "
            "(repository names are lowercase letters, digits, '.', '_', '-' and '/')"
        )
    if domain == DEFAULT_DOMAIN and "/" not in path:
        path = "library/" + path
    if digest:
        return f"{domain}/{path}@{digest}"
    return f"{domain}/{path}:{tag or DEFAULT_TAG}"


def repository(normalized: str) -> str:
    """``docker.io/library/busybox:latest`` -> ``docker.io/library/busybox``."""
    name = normalized.split("@", 1)[0]
    slash = name.rfind("/")
    colon = name.rfind(":")
    return name[:colon] if colon > slash else name


def sha256_hex(digest: str, what: str) -> str:
    """The hex of a ``sha256:<64 hex>`` digest; InvalidArgument naming ``what`` otherwise."""
    algo, _, hexpart = digest.partition(":")
    if algo != "sha256" or len(hexpart) != 64 or any(c not in "0123456789abcdef" for c in hexpart):
        raise InvalidArgument(f"{what}: unsupported or malformed digest {digest!r}")
    return hexpart
