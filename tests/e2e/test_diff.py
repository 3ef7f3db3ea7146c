"""mprof diff on two builds of diffed.c: the regression planted in the new
build (remember keeps 64 blocks of 4,096 bytes) tops every view with
exactly its bytes, the table's 50 fewer rows of 100 bytes show as a
shrinkage, and work, the same in both builds though at other addresses,
does not show at all."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pytest
from selenium.webdriver.common.by import By

from e2e_support import Targets, mprof
from test_html import WebDriver, console_errors, open_page

REGRESSION = 64 * 4096
SHRINKAGE = 50 * 100


@pytest.fixture(scope="module")
def runs(targets: Targets, tmp_path_factory: pytest.TempPathFactory) -> dict[str, list[Path]]:
    base = targets.build("diffed_base", source="diffed.c")
    new = targets.build("diffed_new", "-DREGRESSION", source="diffed.c")
    directory = tmp_path_factory.mktemp("diff")
    files: dict[str, list[Path]] = {"base": [], "new": []}
    for side, program in (("base", base), ("new", new)):
        for n in range(2):
            output = directory / f"{side}{n}.mprof"
            mprof("run", "--quiet", "-o", output, program)
            files[side].append(output)
    return files


def diff_json(*arguments: str | Path) -> dict[str, object]:
    return json.loads(mprof("diff", "--format", "json", *arguments).stdout)  # type: ignore[no-any-return]


def rows(document: dict[str, object], view: str) -> list[dict[str, object]]:
    return document[view]["rows"]  # type: ignore[index,no-any-return]


def change(row: dict[str, object], measure: str) -> int:
    return row["figures"][measure]["change"]  # type: ignore[index,no-any-return]


@pytest.mark.slow
def test_the_planted_regression_tops_every_view_with_exactly_its_bytes(runs: dict[str, list[Path]]) -> None:
    document = diff_json(runs["base"][0], runs["new"][0])
    top_path = rows(document, "paths")[0]
    assert [frame["function"] for frame in top_path["frames"]] == ["main", "remember"]  # type: ignore[attr-defined]
    assert top_path["status"] == "new"
    for view in ("paths", "functions", "cumulative", "sites"):
        top = rows(document, view)[0]
        assert top["function" if view != "paths" else "label"] in ("remember", "main > remember"), view
        assert change(top, "alloc_space") == REGRESSION
        assert change(top, "alloc_objects") == 64
        assert change(top, "leak_space") == REGRESSION
        assert change(top, "peak_space") == REGRESSION
        assert change(top, "temp_objects") == 0
    totals = document["totals"]
    assert totals["alloc_space"] == {"base": 84_000, "new": 84_000 + REGRESSION - SHRINKAGE,  # type: ignore[index]
                                     "change": REGRESSION - SHRINKAGE}
    assert totals["leak_space"]["change"] == REGRESSION  # type: ignore[index]


def test_functions_match_by_name_across_builds(runs: dict[str, list[Path]]) -> None:
    document = diff_json(runs["base"][0], runs["new"][0])
    paths = {row["label"]: row for row in rows(document, "paths")}
    # work is the same in both builds: not a change, though its code moved.
    assert set(paths) == {"main > remember", "main > load_table"}
    table = paths["main > load_table"]
    assert table["status"] == "changed"
    assert table["figures"]["alloc_space"] == {"base": 20_000, "new": 15_000, "change": -SHRINKAGE}  # type: ignore[index]
    assert change(table, "alloc_objects") == -50
    cumulative = {row["function"]: row for row in rows(document, "cumulative")}
    assert change(cumulative["main"], "alloc_space") == REGRESSION - SHRINKAGE
    assert cumulative["main"]["module"] == "(program)"
    sites = rows(document, "sites")
    assert [(row["function"], row["file"]) for row in sites] == [("remember", "diffed.c"), ("load_table", "diffed.c")]
    bins = {row["size"]: row for row in rows(document, "bins")}
    assert set(bins) == {1025, 100}
    assert change(bins[1025], "alloc_objects") == 64 and change(bins[100], "alloc_objects") == -50


def test_several_files_a_side_are_merged(runs: dict[str, list[Path]]) -> None:
    document = diff_json(*[part for path in runs["base"] for part in ("--base", path)],
                         *[part for path in runs["new"] for part in ("--new", path)])
    top = rows(document, "paths")[0]
    assert change(top, "alloc_space") == 2 * REGRESSION
    assert change(rows(document, "paths")[1], "alloc_space") == -2 * SHRINKAGE


def test_the_text_lists_the_regression_first_and_leaves_out_what_did_not_change(
        runs: dict[str, list[Path]]) -> None:
    text = mprof("diff", "--no-pager", runs["base"][0], runs["new"][0]).stdout
    section = text.split("Call paths, by change in bytes allocated (new - base): 2 changed\n", 1)[1]
    lines = section.splitlines()
    assert lines[1].split() == ["+262,144", "+64", "+262,144", "+262,144", "0", "main", ">", "remember", "(new)"]
    assert lines[2].split() == ["-5,000", "-50", "0", "-5,000", "0", "main", ">", "load_table"]
    assert lines[3] == ""
    assert "work" not in text


@pytest.mark.slow
def test_sort_and_cutoff(runs: dict[str, list[Path]]) -> None:
    # With their callees: main's change is +257,144 bytes but only +14
    # blocks (64 more, 50 fewer), the table's -5,000 bytes are -50 blocks.
    by_bytes = diff_json(runs["base"][0], runs["new"][0])
    assert [row["function"] for row in rows(by_bytes, "cumulative")] == ["remember", "main", "load_table"]
    by_blocks = diff_json("--sort", "alloc_objects", runs["base"][0], runs["new"][0])
    assert [row["function"] for row in rows(by_blocks, "cumulative")] == ["remember", "load_table", "main"]
    # 5,000 bytes are 1.5% of the larger total, 341,144: a cutoff of 2% leaves them out.
    document = diff_json("--cutoff", "2", runs["base"][0], runs["new"][0])
    assert [row["label"] for row in rows(document, "paths")] == ["main > remember"]
    assert document["paths"]["changed"] == 2  # type: ignore[index]


def test_the_same_profile_twice_shows_no_change(runs: dict[str, list[Path]]) -> None:
    document = diff_json(runs["base"][0], runs["base"][1])
    assert all(not rows(document, view) for view in ("paths", "functions", "cumulative", "sites"))


@pytest.mark.browser
def test_the_page_draws_growth_red_and_shrinkage_blue(runs: dict[str, list[Path]], browser: WebDriver,  # noqa: F811
                                                       tmp_path: Path) -> None:
    page = tmp_path / "diff.html"
    mprof("diff", "--no-pager", "--html", page, runs["base"][0], runs["new"][0])
    open_page(browser, page)
    frames = {element.find_element(By.TAG_NAME, "text").get_attribute("textContent"):
              (element.find_element(By.TAG_NAME, "rect").get_attribute("class"),
               element.find_element(By.TAG_NAME, "title").get_attribute("textContent"))
              for element in browser.find_elements(By.CSS_SELECTOR, "#diff-alloc_space-graph g.f")}
    # remember grew from nothing: the deepest red; the table lost a quarter:
    # blue; work did not change: grey.
    assert frames["remember"][0] == "t9"
    assert frames["load_table"][0] == "t2"
    assert frames["work"][0] == "t4"
    assert "base 20,000, new 15,000 bytes (-5,000, -25.0%)" in frames["load_table"][1]
    fills = browser.execute_script(
        "return ['remember', 'load_table', 'work'].map(name => getComputedStyle(Array.from("
        "document.querySelectorAll('#diff-alloc_space-graph g.f')).find(g => g.querySelector('text')"
        ".textContent === name).querySelector('rect')).fill)")
    assert fills == ["rgb(204, 59, 44)", "rgb(155, 180, 234)", "rgb(212, 212, 212)"]
    assert console_errors(browser) == []


@pytest.mark.parametrize("arguments, message", [
    (("one.mprof",), "mprof diff compares two profiles: BASE NEW (several files each with --base, --new)"),
    (("--base", "one.mprof"), "name the profiles as BASE NEW, or each with --base and --new, not both ways"),
])
def test_wrong_arguments_get_one_line(arguments: tuple[str, ...], message: str) -> None:
    completed = mprof("diff", *arguments, check=False)
    assert completed.returncode == 1
    assert completed.stderr == f"mprof: {message}\n"


@pytest.mark.slow
@pytest.mark.parametrize("corrupt_side", ["base", "new"])
def test_a_faulty_database_on_either_side_is_refused_in_one_line(runs: dict[str, list[Path]], tmp_path: Path,
                                                                  corrupt_side: str) -> None:
    # Both databases are checked at once, while the first is read: the
    # refusal must still name the faulty one, whichever side it is.
    databases = {}
    for side in ("base", "new"):
        databases[side] = tmp_path / f"{side}.db"
        mprof("db", "-o", databases[side], runs[side][0])
    with sqlite3.connect(databases[corrupt_side]) as db:
        db.execute("UPDATE path_nodes SET parent_id = 999999999 WHERE id = (SELECT MAX(id) FROM path_nodes)")
    db.close()
    completed = mprof("diff", "--no-pager", databases["base"], databases["new"], check=False)
    assert completed.returncode == 1 and completed.stdout == ""
    assert completed.stderr == (f"mprof: {databases[corrupt_side]}: table path_nodes: parent_id names no row of "
                                "path_nodes in 1 row: 999999999\n")
