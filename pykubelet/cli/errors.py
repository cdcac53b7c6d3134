"""What the ``pykubelet`` commands tell a user when the input is wrong: one line, exit 1.

Errors about what the user gave (a path that cannot be used, an archive that is not one,
a request the runtime's domain refuses) are turned into one ``Error: ...`` line here, in
one place for every subcommand, as httpx maps lower-level exceptions in one place. Any
other exception is a bug and keeps its traceback.
"""

from __future__ import annotations

import tarfile
import zlib

from pykubelet.config import KubeletConfigError
from pykubelet.runtime.errors import CRIError


def user_error(exc: BaseException) -> str | None:
    """The one-line message for an error the user can fix, else None."""
    if isinstance(exc, CRIError):
        return exc.msg
    if isinstance(exc, KubeletConfigError):
        return str(exc)
    if isinstance(exc, tarfile.TarError | EOFError | zlib.error):
        return f"not a usable archive (truncated or not a tar file?): {exc}"
    if isinstance(exc, OSError) and exc.filename is not None:
        where = str(exc.filename)
        if exc.filename2 is not None:
            where += f" -> {exc.filename2}"
        return f"{where}: {exc.strerror or exc}"
    return None
