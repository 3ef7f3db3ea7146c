"""The web page's templates kept compiled between runs (report/html.py's
_CompiledTemplates): a kept one is used, one edited since is compiled
again, and a directory that cannot be written leaves the page as it was."""

from __future__ import annotations

import shutil
from pathlib import Path

import jinja2

from mprof.report.html import _CompiledTemplates


def page(templates: Path, kept: Path) -> str:
    env = jinja2.Environment(loader=jinja2.FileSystemLoader(templates), autoescape=True,
                             bytecode_cache=_CompiledTemplates(str(kept)))
    return env.get_template("page.html").render(name="<a & b>")


def test_a_template_is_kept_compiled_and_compiled_again_once_edited(tmp_path: Path) -> None:
    templates, kept = tmp_path / "templates", tmp_path / "kept"
    templates.mkdir()
    kept.mkdir()
    (templates / "page.html").write_text("first {{ name }}")
    assert page(templates, kept) == "first &lt;a &amp; b&gt;"
    [compiled] = kept.iterdir()
    written = compiled.read_bytes()
    assert page(templates, kept) == "first &lt;a &amp; b&gt;"
    assert compiled.read_bytes() == written  # used, not written again
    (templates / "page.html").write_text("second {{ name }}")
    assert page(templates, kept) == "second &lt;a &amp; b&gt;"
    assert compiled.read_bytes() != written


def test_a_directory_that_cannot_be_written_changes_nothing(tmp_path: Path) -> None:
    templates, kept = tmp_path / "templates", tmp_path / "kept"
    templates.mkdir()
    kept.mkdir()
    (templates / "page.html").write_text("{{ name }}")
    cache = _CompiledTemplates(str(kept))
    shutil.rmtree(kept)  # where Jinja would write its file: gone
    env = jinja2.Environment(loader=jinja2.FileSystemLoader(templates), autoescape=True, bytecode_cache=cache)
    assert env.get_template("page.html").render(name="<x>") == "&lt;x&gt;"
