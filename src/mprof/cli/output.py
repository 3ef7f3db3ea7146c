"""Files the commands write for the user (pages, exports): whole or not at
all."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

from ..reducer.errors import MprofError


def write_atomically(path: Path, content: str | bytes) -> None:
    """A temporary file beside path, renamed over it: a reader never sees
    half a file, and a failure leaves whatever was there before."""
    directory = path.parent if str(path.parent) else Path(".")
    try:
        descriptor, temporary = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=directory)
    except OSError as error:
        raise MprofError(f"{path}: cannot write: {error.strerror}") from None
    try:
        data = content.encode("utf-8", "surrogateescape") if isinstance(content, str) else content
        with os.fdopen(descriptor, "wb") as file:
            file.write(data)
        os.chmod(temporary, 0o666 & ~_umask())
        os.replace(temporary, path)
    except OSError as error:
        os.unlink(temporary)
        raise MprofError(f"{path}: cannot write: {error.strerror}") from None
    except BaseException:
        os.unlink(temporary)
        raise


def _umask() -> int:
    # mkstemp creates 0600; what the user asked for is meant to be shared
    # like any file they write.
    mask = os.umask(0)
    os.umask(mask)
    return mask
