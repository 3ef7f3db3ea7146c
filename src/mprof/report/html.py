"""The HTML report: the summary, flame graphs, size chart and the four mprof
tables on one self-contained page (CSS and script inline, no network).

Jinja2 renders templates/ with autoescaping on for every template:
names reach the page only as escaped text or through the tojson filter, and
the page's script sets them with textContent, never as markup."""

from __future__ import annotations

import os
from collections.abc import Collection
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import jinja2
from markupsafe import Markup, escape

from .. import source_tree
from ..forked import InChild
from ..leak_kinds import LOST, POSSIBLE, REACHABLE
from . import flame, html_rows, leak_summary, legends, processes, size_chart, summary, tables, timeline_chart
from .model import Model

if TYPE_CHECKING:
    from . import replay_section

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


def flame_frames(graph: flame.Flame, unit: str, share_of: str, by_detail: bool) -> Markup:
    """A flame graph's frames as the page draws them, each name escaped:
    a <g> each, data-x and data-w fractions of the root's width, data-d its
    depth, data-p its parent frame; its hover text its width and share, or
    with by_detail its detail alone (mprof diff's widths are not a figure of
    either profile).  Written here, not by the template: a big program's
    thousands of frames took Jinja a sixth of the page's time."""
    unit, share_of = escape(unit), escape(share_of)
    parts = []
    for f in graph.frames:
        name = escape(f.name)
        search = f' data-s="{escape(f.search)}"' if f.detail and not by_detail else ""
        if by_detail:
            title = f"{name}&#10;{escape(f.detail)}"
        else:
            detail = f"&#10;{escape(f.detail)}" if f.detail else ""
            title = f"{name}&#10;{f.bytes:,} {unit}, {f.width * 100:.1f}% {share_of}{detail}"
        parts.append(f'    <g class="f" data-x="{f.x:.7f}" data-w="{f.width:.7f}" data-d="{f.depth}"\n'
                     f'       data-p="{f.parent}" data-b="{f.bytes}"{search}>\n'
                     f"      <title>{title}</title>\n"
                     f'      <svg x="{f.x * 100:.4f}%" y="{f.depth * 18}" width="{f.width * 100:.4f}%" height="17">\n'
                     f'        <rect width="100%" height="100%" class="t{f.tone // 10}"></rect>\n'
                     f'        <text x="3" y="12.5">{name}</text>\n'
                     "      </svg>\n"
                     "    </g>\n")
    # The template's line gives the first frame's indent and the last one's newline.
    return Markup("".join(parts)[2:-1])


class _CompiledTemplates(jinja2.FileSystemBytecodeCache):
    """The templates as Jinja compiles them, kept from run to run, each
    with its source's checksum (a template edited since is compiled
    again): compiling them took a report 40 ms.  A run that cannot write
    there goes on without keeping them."""

    def dump_bytecode(self, bucket: jinja2.bccache.Bucket) -> None:
        try:
            super().dump_bytecode(bucket)
        except OSError:
            pass


def _compiled_templates() -> jinja2.BytecodeCache | None:
    """The source tree's build/templates, which make creates; an installed
    mprof has none."""
    directory = source_tree.BUILD / "templates"
    return _CompiledTemplates(str(directory)) if directory.is_dir() else None


def environment() -> jinja2.Environment:
    env = jinja2.Environment(loader=jinja2.FileSystemLoader(TEMPLATES), autoescape=True,
                             undefined=jinja2.StrictUndefined, trim_blocks=True, lstrip_blocks=True,
                             bytecode_cache=_compiled_templates())
    env.filters["thousands"] = lambda value: f"{value:,}"
    env.filters["human"] = human_bytes
    env.filters["fixed"] = lambda value, digits=4: f"{value:.{digits}f}"
    # Compact JSON: the call graph of a large program is most of the page.
    env.policies["json.dumps_kwargs"] = {"sort_keys": False, "separators": (",", ":")}
    env.filters["rows"] = html_rows.encoded
    env.filters["flame_frames"] = flame_frames
    return env


def render(model: Model, runtime: bool = False, kinds: Collection[str] = LOST) -> str:
    """The page; with runtime, the leak table and flame graph also show what
    the C and C++ runtimes keep on purpose.  A database of replays alone
    (mprof replay --db without a profile) gets a page of them alone."""
    if not model.runs and model.replays:
        return render_replays(model)
    # The call graph's tables are made in a process of their own while this
    # one makes the others and the flame graphs: each half is a third of a
    # big program's page, and the second processor is otherwise idle.
    with InChild(lambda: html_rows.graph_tables(model), "the call graph's tables") as graph:
        flames = flame.page_flames(model, runtime)
        rows = html_rows.build(model, runtime, graph.result, kinds)
    runs = [RunLine(run.pid, "fork child" if run.forked else "process", run.command_line or run.program,
                    ", ".join(summary.run_notes(run))) for run in model.runs]
    program = model.runs[0].program if model.runs else ""
    classified = leak_summary.classified(model)
    lost_objects, lost_bytes = (leak_summary.counted(model, LOST) if classified else
                                (tables.leaked_objects(model, runtime), tables.leak_total(model, runtime)))
    return environment().get_template("report.html").render(
        name=os.path.basename(program) or "program", runs=runs,
        figures=summary.figures(model), kept_label=summary.kept_label(model), summary_rows=summary.rows(model),
        runtime=runtime, leaked_bytes=lost_bytes, leaked_objects=lost_objects, suppressed_bytes=model.suppressed_bytes,
        classified=classified, reachable_bytes=leak_summary.total(model, REACHABLE),
        possible_bytes=leak_summary.total(model, POSSIBLE),
        not_classified=" ".join(leak_summary.not_classified_lines(model)),
        legends=legends, tables=rows, call_graph=model.call_graph, allocation_flame=flames.allocation,
        leak_flame=flames.leak, peak_flame=flames.peak, temporary_flame=flames.temporary,
        peak_moment=summary.peak_moment(model) if len(model.runs) <= 1 else "",
        several=len(model.runs) > 1, timeline=timeline_chart.chart(model),
        runtime_note="" if runtime else tables.runtime_note(model, "mprof html --include-runtime"),
        suppressed_note=tables.suppressed_note(model),
        processes=processes.process_rows(model) if processes.merged(model) else [],
        min_share=flame.MIN_SHARE, sizes=size_chart.chart(model), replays=_replay_views(model))


def render_replays(model: Model) -> str:
    """A page of the Allocators section alone."""
    return environment().get_template("replay.html").render(replays=_replay_views(model))


def _replay_views(model: Model) -> list[replay_section.ReplayView]:
    """Imported only for a profile with replays (see model._replays)."""
    if not model.replays:
        return []
    from . import replay_section

    return replay_section.views(model.replays)
