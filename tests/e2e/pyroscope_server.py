"""A real Grafana Pyroscope server on loopback (built by set-up,
scripts/setup-pyroscope.sh), every component in one process, and what the
tests ask it through its own query API (querier.v1, Connect's JSON form)."""

from __future__ import annotations

import json
import socket
import subprocess
import time
import urllib.request
from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from e2e_support import BUILD

PYROSCOPE = BUILD / "tools" / "pyroscope"
_LOOPBACK = "127.0.0.1"
# The rings of its components, kept in memory: nothing to join, no other host.
_RINGS = ("compactor.ring", "distributor.ring", "overrides-exporter.ring", "query-scheduler.ring",
          "store-gateway.sharding-ring")


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind((_LOOPBACK, 0))
        return int(probe.getsockname()[1])


@dataclass
class FunctionFigures:
    own: int  # of the samples whose innermost frame it is
    total: int  # of the samples it is anywhere in, once each


@dataclass
class Server:
    process: subprocess.Popen[bytes]
    url: str
    log: Path

    def ask(self, method: str, request: dict[str, Any]) -> Any:
        call = urllib.request.Request(f"{self.url}/querier.v1.QuerierService/{method}",
                                      data=json.dumps(request).encode(),
                                      headers={"Content-Type": "application/json"}, method="POST")
        with urllib.request.urlopen(call, timeout=30) as answer:
            return json.load(answer)

    def profile_times_ms(self, type_id: str, selector: str, start_ms: int, end_ms: int) -> list[int]:
        """When each profile of the series was taken, to the millisecond: a
        series of one point per millisecond that holds one."""
        found = self.ask("SelectSeries", {"profileTypeID": type_id, "labelSelector": selector,
                                          "start": start_ms, "end": end_ms, "step": 0.001})
        return sorted(int(point["timestamp"]) for series in found.get("series", []) for point in series["points"])

    def functions(self, type_id: str, selector: str, start_ms: int, end_ms: int) -> dict[str, FunctionFigures]:
        """Each function's figures in the profiles of [start_ms, end_ms),
        merged by the server."""
        merged = self.ask("SelectMergeProfile", {"profileTypeID": type_id, "labelSelector": selector,
                                                 "start": start_ms, "end": end_ms})
        strings = merged.get("stringTable", [])
        names = {function["id"]: strings[int(function.get("name", "0"))] for function in merged.get("function", [])}
        frames = {location["id"]: [names[line["functionId"]] for line in location.get("line", [])]
                  for location in merged.get("location", [])}
        figures: dict[str, FunctionFigures] = defaultdict(lambda: FunctionFigures(0, 0))
        for sample in merged.get("sample", []):
            value = int(sample["value"][0])
            stack = [name for location in sample["locationId"] for name in frames[location]]
            if stack:
                figures[stack[0]].own += value
            for name in set(stack):
                figures[name].total += value
        return dict(figures)

    def series_labels(self, selector: str, start_ms: int, end_ms: int) -> list[dict[str, str]]:
        found = self.ask("Series", {"matchers": [selector], "start": start_ms, "end": end_ms})
        return [{label["name"]: label["value"] for label in series["labels"]} for series in found.get("labelsSet", [])]

    def stop(self) -> None:
        self.process.terminate()
        try:
            self.process.wait(10)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()


def start(directory: Path) -> Server:
    assert PYROSCOPE.exists(), f"{PYROSCOPE} is missing: make check's set-up builds it (scripts/setup-pyroscope.sh)"
    http_port, grpc_port = free_port(), free_port()
    flags = ["-target=all", f"-server.http-listen-address={_LOOPBACK}", f"-server.http-listen-port={http_port}",
             f"-server.grpc-listen-address={_LOOPBACK}", f"-server.grpc-listen-port={grpc_port}",
             f"-memberlist.bind-addr={_LOOPBACK}", "-memberlist.bind-port=0",
             f"-pyroscopedb.data-path={directory / 'db'}", "-storage.backend=filesystem",
             f"-storage.filesystem.dir={directory / 'store'}", "-self-profiling.disable-push=true",
             "-usage-stats.enabled=false", "-ingester.min-ready-duration=0s", "-ring.store=inmemory",
             f"-ingester.lifecycler.addr={_LOOPBACK}", f"-query-frontend.instance-addr={_LOOPBACK}"]
    for ring in _RINGS:
        flags += [f"-{ring}.instance-addr={_LOOPBACK}", f"-{ring}.store=inmemory"]
    log = directory / "pyroscope.log"
    with open(log, "wb") as output:
        process = subprocess.Popen([str(PYROSCOPE), *flags], stdout=output, stderr=subprocess.STDOUT)
    server = Server(process, f"http://{_LOOPBACK}:{http_port}", log)
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise AssertionError(f"the Pyroscope server ended with status {process.returncode}: "
                                 f"{log.read_text(errors='replace')[-2000:]}")
        try:
            with urllib.request.urlopen(f"{server.url}/ready", timeout=2) as answer:
                if answer.status == 200:
                    return server
        except OSError:
            pass
        time.sleep(0.1)
    server.stop()
    raise AssertionError(f"the Pyroscope server was not ready within 60 s: {log.read_text(errors='replace')[-2000:]}")
