"""The HTML report: the summary, flame graphs, size chart and the four mprof
tables on one self-contained page (CSS and script inline, no network).

Jinja2 renders templates/ with autoescaping on for every template:
names reach the page only as escaped text or through the tojson filter, and
the page's script sets them with textContent, never as markup."""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

import jinja2

from . import flame, html_rows, legends, processes, replay_section, size_chart, summary, tables, timeline_chart
from .model import Model

TEMPLATES = Path(__file__).with_name("templates")


@dataclass(frozen=True)
class RunLine:
    pid: int
    origin: str  # "process" or "fork child"
    command: str
    notes: str  # snapshot, mprof- mode


def human_bytes(value: float) -> str:
    """1,536 -> 1.5 KiB: the size a person reads at a glance."""
    for unit in ("bytes", "KiB", "MiB", "GiB", "TiB"):
        if abs(value) < 1024 or unit == "TiB":
            return f"{value:,.0f} {unit}" if unit == "bytes" else f"{value:,.1f} {unit}"
        value /= 1024
    raise AssertionError("unreachable")


def environment() -> jinja2.Environment:
    env = jinja2.Environment(loader=jinja2.FileSystemLoader(TEMPLATES), autoescape=True,
                             undefined=jinja2.StrictUndefined, trim_blocks=True, lstrip_blocks=True)
    env.filters["thousands"] = lambda value: f"{value:,}"
    env.filters["human"] = human_bytes
    env.filters["fixed"] = lambda value, digits=4: f"{value:.{digits}f}"
    # Compact JSON: the call graph of a large program is most of the page.
    env.policies["json.dumps_kwargs"] = {"sort_keys": False, "separators": (",", ":")}
    env.filters["rows"] = html_rows.encoded
    return env


def render(model: Model, runtime: bool = False) -> str:
    """The page; with runtime, the leak table and flame graph also show what
    the C and C++ runtimes keep on purpose.  A database of replays alone
    (mprof replay --db without a profile) gets a page of them alone."""
    if not model.runs and model.replays:
        return render_replays(model)
    runs = [RunLine(run.pid, "fork child" if run.forked else "process", run.command_line or run.program,
                    ", ".join(summary.run_notes(run))) for run in model.runs]
    program = model.runs[0].program if model.runs else ""
    return environment().get_template("report.html").render(
        name=os.path.basename(program) or "program", runs=runs,
        figures=summary.figures(model), kept_label=summary.kept_label(model), summary_rows=summary.rows(model),
        runtime=runtime, leaked_bytes=tables.leak_total(model, runtime),
        leaked_objects=tables.leaked_objects(model, runtime), suppressed_bytes=model.suppressed_bytes,
        legends=legends,
        tables=html_rows.build(model, runtime), call_graph=model.call_graph,
        allocation_flame=flame.allocation_flame(model), leak_flame=flame.leak_flame(model, runtime=runtime),
        peak_flame=flame.peak_flame(model), temporary_flame=flame.temporary_flame(model),
        peak_moment=summary.peak_moment(model) if len(model.runs) <= 1 else "",
        several=len(model.runs) > 1, timeline=timeline_chart.chart(model),
        runtime_note="" if runtime else tables.runtime_note(model, "mprof html --include-runtime"),
        suppressed_note=tables.suppressed_note(model),
        processes=processes.process_rows(model) if processes.merged(model) else [],
        min_share=flame.MIN_SHARE, sizes=size_chart.chart(model), replays=replay_section.views(model.replays))


def render_replays(model: Model) -> str:
    """A page of the Allocators section alone."""
    return environment().get_template("replay.html").render(replays=replay_section.views(model.replays))
