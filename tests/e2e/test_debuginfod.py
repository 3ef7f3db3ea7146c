"""Debug information from a debuginfod server: stripped programs whose
separate debug files only a local debuginfod-style HTTP server has, as
/buildid/BUILD-ID/debuginfo, the protocol libdebuginfod speaks.  The
resolver asks it only when DEBUGINFOD_URLS is set, libdebuginfod caches
what it got, and the modules that stayed without are named in one line."""

from __future__ import annotations

import json
import os
import re
import subprocess
import threading
from collections.abc import Iterator
from dataclasses import dataclass
from functools import partial
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from e2e_support import C_FLAGS, MPROF, TARGETS

pytestmark = pytest.mark.server


class Server:
    """Serves a directory on the loopback address, remembering the paths asked for."""

    def __init__(self, root: Path) -> None:
        self.requests: list[str] = []
        server = self

        class Handler(SimpleHTTPRequestHandler):
            def log_message(self, format: str, *args: object) -> None:
                server.requests.append(self.path)

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), partial(Handler, directory=str(root)))
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}"
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)
        self.thread.start()

    def stop(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()


def build_id(path: Path) -> str:
    notes = subprocess.run(["readelf", "-n", str(path)], capture_output=True, text=True, check=True).stdout
    match = re.search(r"Build ID: ([0-9a-f]+)", notes)
    assert match, notes
    return match.group(1)


def strip_to_server(binary: Path, served: Path) -> str:
    """Moves binary's debug information to the server's tree and strips
    binary of it and of its symbol table."""
    identity = build_id(binary)
    (served / "buildid" / identity).mkdir(parents=True)
    subprocess.run(["objcopy", "--only-keep-debug", str(binary), str(served / "buildid" / identity / "debuginfo")],
                   check=True)
    subprocess.run(["strip", "--strip-all", str(binary)], check=True)
    return identity


@dataclass
class Programs:
    served: Path  # the server's tree
    profiles: dict[str, Path]  # data file by program
    build_ids: dict[str, str]


@pytest.fixture(scope="module")
def programs(tmp_path_factory: pytest.TempPathFactory) -> Programs:
    """exported (debug file served) and leaky_ci with libleaky.so (only
    leaky_ci's served), stripped, each run once under mprof."""
    directory = tmp_path_factory.mktemp("debuginfod")
    served = directory / "served"
    exported = directory / "exported"
    subprocess.run(["gcc", *C_FLAGS, "-o", str(exported), str(TARGETS / "exported.c")], check=True)
    library = directory / "libleaky.so"
    subprocess.run(["gcc", *C_FLAGS, "-shared", "-fPIC", "-o", str(library), str(TARGETS / "libleaky.c")], check=True)
    leaky = directory / "leaky_ci"
    subprocess.run(["gcc", *C_FLAGS, "-o", str(leaky), str(TARGETS / "leaky_ci.c"), str(library),
                    f"-Wl,-rpath,{directory}"], check=True)
    identities = {"exported": strip_to_server(exported, served), "leaky": strip_to_server(leaky, served)}
    subprocess.run(["strip", "--strip-debug", str(library)], check=True)  # and served by none
    profiles = {}
    for name, program in (("exported", exported), ("leaky", leaky)):
        output = directory / f"{name}.mprof"
        completed = subprocess.run([MPROF, "run", "--quiet", "-o", str(output), str(program)], capture_output=True,
                                   text=True, timeout=120, env=without_debuginfod())
        assert completed.returncode in (0, 1), completed.stderr
        profiles[name] = output
    return Programs(served, profiles, identities)


def without_debuginfod() -> dict[str, str]:
    return {key: value for key, value in os.environ.items() if not key.startswith("DEBUGINFOD_")}


@pytest.fixture
def server(programs: Programs) -> Iterator[Server]:
    running = Server(programs.served)
    try:
        yield running
    finally:
        running.stop()


def report(profile: Path, **environment: str) -> tuple[dict[str, object], str]:
    completed = subprocess.run([MPROF, "report", "--format", "json", str(profile)], capture_output=True, text=True,
                               timeout=300, env={**without_debuginfod(), **environment})
    assert completed.returncode == 0, completed.stderr
    return json.loads(completed.stdout), completed.stderr


def leak_paths(document: dict[str, object]) -> list[list[tuple[str, str]]]:
    """Each leak row's frames, outermost first: (function, file name)."""
    rows = document["leaks"]
    return [[(frame["function"], os.path.basename(frame["file"])) for frame in row["frames"]]  # type: ignore[index]
            for row in rows]  # type: ignore[attr-defined]


def test_without_debuginfod_urls_nothing_is_asked(programs: Programs, server: Server) -> None:
    document, errors = report(programs.profiles["exported"])
    assert server.requests == []
    # The stripped program is named once, with what would name its frames:
    # it is not the distribution's, so a build with -g, or a server.
    assert errors == ("mprof: warning: no symbols or debug information for exported (its frames read "
                      "exported+0x...); build with -g and do not strip, or set DEBUGINFOD_URLS to a debuginfod "
                      "server that has them\n")
    names = [function for path in leak_paths(document) for function, _ in path]
    assert "make_name" not in names and any(name.startswith("exported+0x") for name in names)


def test_the_server_names_the_functions_and_libdebuginfod_caches_them(programs: Programs, server: Server,
                                                                      tmp_path: Path) -> None:
    cache = tmp_path / "cache"
    settings = {"DEBUGINFOD_URLS": server.url, "DEBUGINFOD_CACHE_PATH": str(cache)}
    document, errors = report(programs.profiles["exported"], **settings)
    identity = programs.build_ids["exported"]
    assert f"/buildid/{identity}/debuginfo" in server.requests, server.requests
    assert errors == ""
    expected = [[("main", "exported.c"), ("load_cache", "exported.c"), ("cache_slot", "exported.c")],
                [("main", "exported.c"), ("name_all", "exported.c"), ("make_name", "exported.c")]]
    assert sorted(leak_paths(document)) == sorted(expected)
    assert (cache / identity / "debuginfo").is_file()
    # From the cache, with the server gone.
    server.stop()
    again, errors = report(programs.profiles["exported"], **settings)
    assert sorted(leak_paths(again)) == sorted(expected)
    assert errors == ""


def test_a_module_the_server_lacks_is_named_in_one_line(programs: Programs, server: Server,
                                                        tmp_path: Path) -> None:
    settings = {"DEBUGINFOD_URLS": server.url, "DEBUGINFOD_CACHE_PATH": str(tmp_path / "cache")}
    document, errors = report(programs.profiles["leaky"], **settings)
    assert errors == (f"mprof: warning: no debug information, on this machine or from debuginfod ({server.url}), "
                      f"for 1 module: libleaky.so; their functions have no file:line\n")
    paths = leak_paths(document)
    # The program's own functions came from the server; the library's by
    # its dynamic symbols alone, without a file.
    assert [("main", "leaky_ci.c"), ("lib_cache", "")] in paths
    assert [("main", "leaky_ci.c"), ("real_leak", "leaky_ci.c")] in paths
