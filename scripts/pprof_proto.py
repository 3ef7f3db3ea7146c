"""Generates mprof's Python module for pprof's profile.proto.

The schema is google/pprof's published proto/profile.proto, taken at set-up
from the Go module proxy (a registry set-up may use, as pip uses PyPI) at a
pinned version and checked against a pinned digest; it is compiled with the
protoc of grpcio-tools (requirements-dev.txt) into src/mprof/export/, where
the package finds it.  Neither the schema nor the generated module is kept
in the repository.

Usage: pprof_proto.py OUTPUT_DIR CACHE_DIR
"""

from __future__ import annotations

import hashlib
import io
import os
import subprocess
import sys
import tempfile
import urllib.request
import zipfile
from pathlib import Path

MODULE = "github.com/google/pprof"
VERSION = "v0.0.0-20261105003125-4bf881d7fb0b"
MEMBER = f"{MODULE}@{VERSION}/proto/profile.proto"
SHA256 = "f541a10a1e01bd885135cb2eba3a6f4cb073ad34872190e1150f772436859fbf"


def proxy() -> str:
    """The first proxy of GOPROXY that is a URL, as the go command would ask."""
    for entry in os.environ.get("GOPROXY", "").replace("|", ",").split(","):
        if entry.startswith(("https://", "http://", "file://")):
            return entry.rstrip("/")
    return "https://proxy.golang.org"


def schema(cache: Path) -> bytes:
    cached = cache / "profile.proto"
    if cached.is_file() and hashlib.sha256(cached.read_bytes()).hexdigest() == SHA256:
        return cached.read_bytes()
    url = f"{proxy()}/{MODULE}/@v/{VERSION}.zip"
    with urllib.request.urlopen(url, timeout=120) as response:
        archive = zipfile.ZipFile(io.BytesIO(response.read()))
    text = archive.read(MEMBER)
    digest = hashlib.sha256(text).hexdigest()
    if digest != SHA256:
        sys.exit(f"pprof_proto: {url}: profile.proto has digest {digest}, not the pinned {SHA256}")
    cache.mkdir(parents=True, exist_ok=True)
    cached.write_bytes(text)
    return text


def main(output: Path, cache: Path) -> None:
    text = schema(cache)
    with tempfile.TemporaryDirectory() as directory:
        (Path(directory) / "profile.proto").write_bytes(text)
        subprocess.run([sys.executable, "-m", "grpc_tools.protoc", f"--proto_path={directory}",
                        f"--python_out={output}", f"--pyi_out={output}", "profile.proto"], check=True)


if __name__ == "__main__":
    if len(sys.argv) != 3:
        sys.exit(__doc__.strip().splitlines()[-1])
    main(Path(sys.argv[1]), Path(sys.argv[2]))
