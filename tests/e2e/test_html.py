"""mprof html, seen as a user sees it: pages of real profiles opened in a real
headless Chromium, read back from the DOM, clicked, typed into."""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path

import pytest
from selenium import webdriver
from selenium.webdriver.common.action_chains import ActionChains
from selenium.webdriver.common.by import By
from selenium.webdriver.remote.webelement import WebElement
from selenium.webdriver.support.ui import WebDriverWait

from e2e_support import BUILD, Targets, mprof
from mprof.report import html
from synthetic_profile import synthetic_model

WIDGETS = BUILD / "widgets"
RED, BLUE = 4913, 5087
# Every element the page is made of; a name parsed as markup would add others.
PAGE_TAGS = {"html", "head", "meta", "title", "style", "body", "header", "h1", "h2", "h3", "p", "span", "code", "div",
             "details", "summary", "dl", "dt", "dd", "nav", "a", "main", "section", "label", "input", "button", "pre",
             "table", "thead", "tbody", "tfoot", "tr", "th", "td", "script", "footer", "svg", "g", "rect", "text",
             "line", "polyline", "circle"}
BIG_FUNCTIONS = 30000
WebDriver = webdriver.Chrome  # get_log, the browser's console, is Chromium's own


def profile_page(directory: Path, name: str, *command: str | Path, options: tuple[str, ...] = ()) -> Path:
    data = directory / f"{name}.mprof"
    mprof("run", "--quiet", *options, "-o", data, "--", *command)
    return page_of(data, directory / f"{name}.html")


def page_of(data: Path, page: Path) -> Path:
    completed = mprof("html", data, "-o", page)
    assert completed.stdout == completed.stderr == ""
    return page


@pytest.fixture(scope="module")
def pages(tmp_path_factory: pytest.TempPathFactory, targets: Targets, cache_server_run: Path) -> dict[str, Path]:
    directory = tmp_path_factory.mktemp("html")
    return {
        "widgets": profile_page(directory, "widgets", WIDGETS),
        "minus": profile_page(directory, "minus", WIDGETS, options=("--no-call-graph",)),
        "templates": profile_page(directory, "templates", targets.build("templates")),
        "literals": profile_page(directory, "literals", targets.build("literals")),
        "recursion": profile_page(directory, "recursion", targets.build("recursion"), "mutual", "100"),
        "many_paths": profile_page(directory, "many_paths", targets.build("many_paths")),
        # The C++ example of a growing cache, at -O2 as a release is built.
        "cache_server": page_of(cache_server_run, directory / "cache_server.html"),
    }


def open_page(browser: WebDriver, page: Path) -> None:
    browser.get(page.as_uri())
    browser.get_log("browser")  # what an earlier page logged is not this one's


def console_errors(browser: WebDriver) -> list[dict[str, object]]:
    return [entry for entry in browser.get_log("browser") if entry["level"] in ("SEVERE", "WARNING")]


def main_rows(browser: WebDriver, table: str) -> list[list[str]]:
    """The drawn rows of a table (callers and callees left out), cell by cell."""
    return browser.execute_script(
        "return Array.from(document.querySelectorAll(`#table-${arguments[0]} tbody tr.main`))"
        ".map(tr => Array.from(tr.cells).map(td => td.textContent))", table)


def names(browser: WebDriver, table: str) -> list[str]:
    return [row[-1] for row in main_rows(browser, table)]


def frames(browser: WebDriver, kind: str) -> dict[str, list[int]]:
    """Frame name -> the bytes of each of its frames in one flame graph."""
    pairs = browser.execute_script(
        "return Array.from(document.querySelectorAll(`#${arguments[0]}-graph g.f`))"
        ".map(g => [g.querySelector('text').textContent, Number(g.dataset.b)])", kind)
    result: dict[str, list[int]] = {}
    for name, value in pairs:
        result.setdefault(name, []).append(value)
    return result


def attribute(element: WebElement, name: str) -> str:
    return element.get_attribute(name) or ""


def frame(browser: WebDriver, kind: str, name: str) -> WebElement:
    return next(g for g in browser.find_elements(By.CSS_SELECTOR, f"#{kind}-graph g.f")
                if attribute(g.find_element(By.TAG_NAME, "text"), "textContent") == name)


def in_view(browser: WebDriver, element_id: str) -> bool:
    return browser.execute_script(
        "const box = document.getElementById(arguments[0]).getBoundingClientRect();"
        "return box.top >= -1 && box.top < window.innerHeight", element_id)


def tags(browser: WebDriver) -> set[str]:
    return set(browser.execute_script(
        "return Array.from(document.getElementsByTagName('*')).map(e => e.tagName.toLowerCase())"))


@pytest.mark.browser
def test_widgets_summary(browser: WebDriver, pages: dict[str, Path]) -> None:
    open_page(browser, pages["widgets"])
    assert console_errors(browser) == []
    assert browser.title == "mprof: widgets"
    header = browser.find_element(By.TAG_NAME, "header").text
    assert "Memory profile of widgets" in header and str(WIDGETS) in header and "Run time" in header
    figure = {name: browser.find_element(By.ID, name).text for name in ("total-bytes", "peak-bytes", "kept-bytes")}
    assert figure == {"total-bytes": "2,040,000 bytes", "peak-bytes": "2,040,000 bytes",
                      "kept-bytes": f"{RED * 204:,} bytes"}
    assert "in 10,000 objects" in header and f"in {RED:,} objects kept at exit" in header


def page_top(browser: WebDriver, element_id: str) -> float:
    return browser.execute_script(
        "return document.getElementById(arguments[0]).getBoundingClientRect().top + window.scrollY", element_id)


@pytest.mark.browser
def test_the_first_screen_answers(browser: WebDriver, pages: dict[str, Path]) -> None:
    # 300 paths, main > f_T_U: after the cards, the memory over time and
    # the flame graphs; the tables after them, each drawing its first 20
    # rows with a button for the rest.
    open_page(browser, pages["many_paths"])
    assert page_top(browser, "summary") < page_top(browser, "over-time") < page_top(browser, "allocation-flame") < 1200
    assert page_top(browser, "temporary-flame") < page_top(browser, "peak") < page_top(browser, "leaks")
    # 300 functions and bins of 1 to 300 bytes; an entry for main too.
    for table, count in (("peak", 300), ("leaks", 300), ("bins", 300), ("direct", 300), ("graph", 301)):
        assert len(main_rows(browser, table)) == 20, table
        status = browser.find_element(By.CSS_SELECTOR, f".status[data-table='{table}']").text
        assert status == f"20 of {count} rows shown"
        assert browser.find_element(By.CSS_SELECTOR, f"button.more[data-table='{table}']").is_displayed()
    # The largest first: f_29_9's 300 bytes.
    assert main_rows(browser, "peak")[0] == ["1", "300", "", "main > f_29_9"]
    assert console_errors(browser) == []


@pytest.mark.browser
def test_the_never_freed_card_counts_the_programs_leaks(browser: WebDriver, pages: dict[str, Path]) -> None:
    # cache_server never deletes 100 sessions of 48 bytes and their vectors
    # of 100 ints: 44,800 bytes; what libstdc++ and stdio keep is said apart.
    open_page(browser, pages["cache_server"])
    assert browser.find_element(By.ID, "kept-bytes").text == "44,800 bytes"
    card = browser.find_element(By.CSS_SELECTOR, ".card.leak").text
    assert "in 200 objects kept at exit" in card
    runtime = browser.find_element(By.ID, "runtime-bytes").text
    assert runtime.startswith("and ")
    assert runtime.endswith(" bytes kept on purpose by the C and C++ runtimes, not counted")


@pytest.mark.browser
def test_a_folded_path_opens_on_a_click(browser: WebDriver, pages: dict[str, Path]) -> None:
    # The 2,000 vectors of 64 ints Cache::get keeps at the peak: the
    # standard library's frames between it and the allocator fold.
    open_page(browser, pages["cache_server"])
    cells = browser.find_elements(By.CSS_SELECTOR, "#table-peak tbody tr.main td:last-child")
    row = next(cell for cell in cells if cell.find_element(By.XPATH, "..").text.split()[:2] == ["2,000", "512,000"])
    assert row.text.startswith("main > Cache::get > [")
    fold = row.find_element(By.CSS_SELECTOR, "button.fold")
    count = int(fold.text.split()[0][1:])
    assert fold.text == f"[{count} std::]" and count >= 2
    hidden = attribute(fold, "title").split("\n")
    assert len(hidden) == count and all(name.startswith("std::") for name in hidden)
    fold.click()
    assert row.find_elements(By.CSS_SELECTOR, "button.fold") == []
    assert row.text.split(" > ")[2:2 + count] == hidden


@pytest.mark.browser
def test_widgets_tables(browser: WebDriver, pages: dict[str, Path]) -> None:
    open_page(browser, pages["widgets"])
    assert main_rows(browser, "leaks") == [[f"{RED:,}", f"{RED * 204:,}", "(100)",
                                            "main > make_red_widget > make_widget"]]
    assert main_rows(browser, "bins") == [["204", "10,000", "2,040,000", "(100)", f"{BLUE:,}", f"{RED * 204:,}",
                                           "(100)", "widget"]]
    assert main_rows(browser, "direct") == [["100", "2,040,000", "", "100", "", "", f"{RED * 204:,}", "", "100",
                                             "", "", "10,000", "make_widget"]]
    graph = main_rows(browser, "graph")
    assert [row[:3] + row[-2:] for row in graph] == [
        ["[0]", "100.0", "0", "0", "main [0]"], ["[1]", "100.0", "2,040,000", "10,000", "make_widget [1]"],
        ["[2]", "50.9", "0", f"{BLUE:,}", "make_blue_widget [2]"],
        ["[3]", "49.1", "0", f"{RED:,}", "make_red_widget [3]"]]
    callers = browser.execute_script(
        "return Array.from(document.querySelectorAll('#table-graph tbody')[1].querySelectorAll('tr.caller'))"
        ".map(tr => Array.from(tr.cells).map(td => td.textContent))")
    assert [[row[2], row[-2], row[-1]] for row in callers] == [
        [f"{BLUE * 204:,}", f"{BLUE:,}/10,000", "make_blue_widget [2]"],
        [f"{RED * 204:,}", f"{RED:,}/10,000", "make_red_widget [3]"]]
    # At the peak every widget was live: the blue ones first, the larger share.
    assert main_rows(browser, "peak") == [
        [f"{BLUE:,}", f"{BLUE * 204:,}", "(50)", "main > make_blue_widget > make_widget"],
        [f"{RED:,}", f"{RED * 204:,}", "(49)", "main > make_red_widget > make_widget"]]
    legends = browser.find_elements(By.CSS_SELECTOR, "details.legend pre")
    assert len(legends) == 5 and "blocks of the path live at the peak" in attribute(legends[0], "textContent")
    assert "blocks still allocated at exit" in attribute(legends[1], "textContent")


@pytest.mark.browser
def test_sorting_by_a_column(browser: WebDriver, pages: dict[str, Path]) -> None:
    open_page(browser, pages["widgets"])

    def click(column: int) -> None:
        browser.find_element(By.CSS_SELECTOR, f"#table-graph th[data-col='{column}']").click()

    click(13)  # name: A to Z first
    assert names(browser, "graph") == ["main [0]", "make_blue_widget [2]", "make_red_widget [3]", "make_widget [1]"]
    click(13)
    assert names(browser, "graph") == ["make_widget [1]", "make_red_widget [3]", "make_blue_widget [2]", "main [0]"]
    click(12)  # called: most first
    assert [row[12] for row in main_rows(browser, "graph")] == ["10,000", f"{BLUE:,}", f"{RED:,}", "0"]
    header = browser.find_element(By.CSS_SELECTOR, "#table-graph th[data-col='12']")
    assert attribute(header, "aria-sort") == "descending"
    click(2)  # self: make_widget, then the others in their first order
    assert names(browser, "graph") == ["make_widget [1]", "main [0]", "make_blue_widget [2]", "make_red_widget [3]"]
    assert console_errors(browser) == []


@pytest.mark.browser
def test_filtering_by_function_name(browser: WebDriver, pages: dict[str, Path]) -> None:
    open_page(browser, pages["widgets"])
    box = browser.find_element(By.CSS_SELECTOR, "input.filter[data-table='graph']")
    box.send_keys("red")
    assert names(browser, "graph") == ["make_red_widget [3]"]
    assert browser.find_element(By.CSS_SELECTOR, ".status[data-table='graph']").text == \
        "1 of 1 rows shown matching, of 4"
    box.clear()
    box.send_keys("MAKE_")
    assert len(main_rows(browser, "graph")) == 3
    box.clear()
    box.send_keys("x")  # clear() sends no input event; typing does
    box.send_keys("\b")
    assert len(main_rows(browser, "graph")) == 4
    leaks = browser.find_element(By.CSS_SELECTOR, "input.filter[data-table='leaks']")
    leaks.send_keys("blue")
    assert main_rows(browser, "leaks") == []


@pytest.mark.browser
def test_a_link_moves_to_its_call_graph_entry(browser: WebDriver, pages: dict[str, Path]) -> None:
    open_page(browser, pages["widgets"])
    link = browser.find_element(By.CSS_SELECTOR, "#table-leaks a[href^='#fn-']:last-child")
    assert link.text == "make_widget"
    target = attribute(link, "href").split("#")[1]
    link.click()
    WebDriverWait(browser, 5).until(lambda b: b.execute_script("return location.hash") == f"#{target}")
    assert in_view(browser, target)
    assert browser.execute_script(f"return document.getElementById('{target}').querySelector('tr.main')"
                                  ".cells[13].textContent") == "make_widget [1]"
    # Then from that entry to one of its callers, up the page.
    caller = browser.find_element(By.CSS_SELECTOR, f"#{target} tr.caller a")
    caller_target = attribute(caller, "href").split("#")[1]
    caller.click()
    WebDriverWait(browser, 5).until(lambda b: b.execute_script("return location.hash") == f"#{caller_target}")
    assert in_view(browser, caller_target)


@pytest.mark.browser
def test_a_cycle_lists_its_members_and_they_link_back(browser: WebDriver, pages: dict[str, Path]) -> None:
    open_page(browser, pages["recursion"])
    assert console_errors(browser) == []
    cycle = browser.find_element(By.ID, "cycle-1")
    line = [td.text for td in cycle.find_elements(By.CSS_SELECTOR, "tr.main td")]
    assert line[1:3] == ["100.0", "2,400"] and line[-2] == "100+600"
    assert line[-1].startswith("<cycle 1 as a whole> [")
    members = cycle.find_elements(By.CSS_SELECTOR, "tr.member td:last-child a")
    assert sorted(m.text.split(" [")[0] for m in members) == ["even <cycle 1>", "odd <cycle 1>"]
    members[1].click()  # to the member's entry, and from its line back to the cycle
    member = browser.execute_script("return location.hash").lstrip("#")
    assert member.startswith("fn-") and in_view(browser, member)
    back = browser.find_element(By.CSS_SELECTOR, f"#{member} tr.main a[href='#cycle-1']")
    assert back.text == "<cycle 1>"
    back.click()
    assert browser.execute_script("return location.hash") == "#cycle-1" and in_view(browser, "cycle-1")
    # The flame graph draws the recursion as it happened: even(6) calls
    # odd(5) and so on down to even(0), which allocates; 100 times 24 bytes.
    found = frames(browser, "allocation")
    assert (found["main"], found["even"], found["odd"]) == ([2400], [2400] * 4, [2400] * 3)


@pytest.mark.browser
def test_allocation_flame_graph(browser: WebDriver, pages: dict[str, Path]) -> None:
    open_page(browser, pages["widgets"])
    allocated = frames(browser, "allocation")
    assert allocated == {"all": [2040000], "main": [2040000], "make_blue_widget": [BLUE * 204],
                         "make_red_widget": [RED * 204], "make_widget": [BLUE * 204, RED * 204]}
    red = frame(browser, "allocation", "make_red_widget")
    title = attribute(red.find_element(By.TAG_NAME, "title"), "textContent")
    assert title.splitlines() == ["make_red_widget", f"{RED * 204:,} bytes, 49.1% of all bytes allocated"]
    ActionChains(browser).move_to_element(red).perform()
    info = browser.find_element(By.CSS_SELECTOR, "#allocation-graph .flame-info").text
    assert info == f"make_red_widget \u2014 {RED * 204:,} bytes, 49.1% of all bytes allocated"
    # Zoom: the red widget's frame spans the graph, the blue one is gone.
    red.click()
    assert attribute(red.find_element(By.TAG_NAME, "svg"), "width") == "100.00000%"
    blue = frame(browser, "allocation", "make_blue_widget")
    assert not blue.is_displayed()
    browser.find_element(By.CSS_SELECTOR, "#allocation-graph .flame-reset").click()
    assert blue.is_displayed() and attribute(red.find_element(By.TAG_NAME, "svg"), "width").startswith("49.1")
    search = browser.find_element(By.CSS_SELECTOR, "#allocation-graph .flame-search")
    search.send_keys("blue")
    matched = browser.find_elements(By.CSS_SELECTOR, "#allocation-graph g.f.match")
    assert [attribute(g.find_element(By.TAG_NAME, "text"), "textContent") for g in matched] == \
        ["make_blue_widget"]
    assert browser.find_element(By.CSS_SELECTOR, "#allocation-graph .flame-matches").text == \
        f"1 frame matches: {BLUE * 204:,} bytes, 50.9%"
    assert console_errors(browser) == []


@pytest.mark.browser
def test_never_freed_flame_graph_and_size_chart(browser: WebDriver, pages: dict[str, Path]) -> None:
    open_page(browser, pages["widgets"])
    assert frames(browser, "leak") == {"all": [RED * 204], "main": [RED * 204], "make_red_widget": [RED * 204],
                                       "make_widget": [RED * 204]}
    [bar] = browser.find_elements(By.CSS_SELECTOR, "svg.sizes g.bar")
    assert attribute(bar.find_element(By.TAG_NAME, "title"), "textContent") == \
        f"204 bytes: 10,000 blocks, 2,040,000 bytes allocated, {RED * 204:,} never freed"


@pytest.mark.browser
def test_a_profile_without_call_graph(browser: WebDriver, pages: dict[str, Path]) -> None:
    open_page(browser, pages["minus"])
    assert console_errors(browser) == []
    assert "Not recorded" in browser.find_element(By.ID, "graph").text
    assert "Not recorded" in browser.find_element(By.ID, "allocation-flame").text
    assert names(browser, "leaks") == ["main > make_red_widget > make_widget"]
    assert browser.find_elements(By.CSS_SELECTOR, "#table-leaks a") == []  # no entries to link to
    assert frames(browser, "leak")["make_widget"] == [RED * 204]


def hover_texts(browser: WebDriver, table: str, name: str) -> list[str]:
    """The title of each function name in a table that reads name."""
    return browser.execute_script(
        "return Array.from(document.querySelectorAll(`#table-${arguments[0]} td a, #table-${arguments[0]} td span`))"
        ".filter(node => node.textContent === arguments[1]).map(node => node.title)", table, name)


@pytest.mark.browser
def test_cxx_names_are_shown_as_text(browser: WebDriver, pages: dict[str, Path]) -> None:
    operator = "bool operator< <double, char>(shapes::Grid<double, 4> const&, shapes::Grid<char, 8> const&)"
    open_page(browser, pages["templates"])
    assert console_errors(browser) == []
    # Short, with the whole signature on hover.
    assert "operator< <>" in names(browser, "direct")
    assert hover_texts(browser, "direct", "operator< <>") == [operator]
    assert "operator< <> [" in " ".join(names(browser, "graph"))
    assert tags(browser) <= PAGE_TAGS
    assert "<double" not in pages["templates"].read_text()  # escaped wherever it is written


@pytest.mark.browser
def test_quoted_names_are_shown_as_text(browser: WebDriver, pages: dict[str, Path]) -> None:
    literal, short = 'operator"" _kb(unsigned long long)', 'operator"" _kb'
    open_page(browser, pages["literals"])
    assert console_errors(browser) == []
    assert names(browser, "leaks") == [f"main > {short}"]
    assert short in names(browser, "direct")
    assert hover_texts(browser, "direct", short) == [literal]
    assert frames(browser, "leak")[short] == [3072]
    title = frame(browser, "allocation", short).find_element(By.TAG_NAME, "title")
    assert attribute(title, "textContent").startswith(f"{short}\n3,072 bytes")
    assert attribute(title, "textContent").endswith(f"\n{literal}")
    assert tags(browser) <= PAGE_TAGS
    assert 'operator""' not in pages["literals"].read_text()


@pytest.mark.slow
def test_page_from_a_database_is_the_same(pages: dict[str, Path], tmp_path: Path) -> None:
    database = tmp_path / "widgets.db"
    mprof("db", pages["widgets"].with_suffix(".mprof"), "-o", database)
    mprof("html", database, "-o", tmp_path / "widgets.html")
    assert (tmp_path / "widgets.html").read_bytes() == pages["widgets"].read_bytes()


@pytest.mark.slow
def test_html_command_errors(pages: dict[str, Path], tmp_path: Path) -> None:
    assert " html " in mprof("--help").stdout
    missing = mprof("html", tmp_path / "nope.mprof", "-o", tmp_path / "out.html", check=False)
    assert missing.returncode == 1 and missing.stderr.count("\n") == 1 and "nope.mprof" in missing.stderr
    assert mprof("html", tmp_path / "nope.mprof", check=False).returncode == 2  # -o is required
    unwritable = mprof("html", pages["widgets"].with_suffix(".mprof"),
                       "-o", tmp_path / "no-such-directory" / "out.html", check=False)
    assert unwritable.returncode == 1 and unwritable.stderr.count("\n") == 1
    assert list(tmp_path.iterdir()) == []


@pytest.fixture(scope="module")
def big_page(tmp_path_factory: pytest.TempPathFactory) -> Path:
    page = tmp_path_factory.mktemp("big") / "big.html"
    page.write_text(html.render(synthetic_model(BIG_FUNCTIONS)))
    return page


@pytest.mark.browser
def test_a_big_profile_loads_quickly_and_draws_a_page_of_rows(browser: WebDriver, big_page: Path,
                                                               record_property: Callable[[str, object], None]) -> None:
    started = time.monotonic()
    open_page(browser, big_page)
    seconds = time.monotonic() - started
    loaded = browser.execute_script("return performance.getEntriesByType('navigation')[0].loadEventEnd")
    record_property("load_ms", loaded)
    assert console_errors(browser) == []
    # What keeps it quick is what the page draws, checked below: a page of
    # rows, at most 3000 frames.  The time (load_ms in the summary pytest
    # prints) only catches a page that never settles.
    assert seconds < 60, f"{BIG_FUNCTIONS} functions: the page took {seconds:.1f} s to load"
    # A first screen of each table, 20 rows, then 100 more a click.
    assert len(main_rows(browser, "graph")) == 20 and len(main_rows(browser, "direct")) == 20
    status = browser.find_element(By.CSS_SELECTOR, ".status[data-table='graph']").text
    assert status == f"20 of {BIG_FUNCTIONS:,} rows shown"
    for kind in ("allocation", "leak"):
        drawn = browser.execute_script(f"return document.querySelectorAll('#{kind}-graph g.f').length")
        assert 100 < drawn <= 3000  # mprof(1): "at most 3000" frames
    browser.find_element(By.CSS_SELECTOR, "button.more[data-table='graph']").click()
    assert len(main_rows(browser, "graph")) == 120
    # A callee whose entry is on no page drawn yet: the link draws it, then goes there.
    link = browser.execute_script(
        "return Array.from(document.querySelectorAll('#table-graph tr.callee a'))"
        ".find(a => !document.getElementById(a.getAttribute('href').slice(1)))")
    target = attribute(link, "href").split("#")[1]
    browser.execute_script("arguments[0].scrollIntoView({block: 'center'})", link)
    link.click()
    WebDriverWait(browser, 10).until(lambda b: b.execute_script("return location.hash") == f"#{target}")
    assert in_view(browser, target)
    assert browser.find_element(By.CSS_SELECTOR, ".status[data-table='graph']").text.startswith("rows ")
    assert browser.find_element(By.CSS_SELECTOR, "button.earlier[data-table='graph']").is_displayed()
    assert console_errors(browser) == []


@pytest.mark.browser
def test_pages_load_nothing(browser: WebDriver, pages: dict[str, Path]) -> None:
    # One file holds everything: no script, style, font or image is fetched,
    # from the network or beside the page, so a report mailed or opened
    # offline is whole and tells no server it was opened.
    for name, page in pages.items():
        open_page(browser, page)
        fetched = browser.execute_script("return performance.getEntriesByType('resource').map(e => e.name)")
        assert fetched == [], (name, fetched)
        links = browser.execute_script(
            "return Array.from(document.querySelectorAll('[src], [href], [srcset], [action]'))"
            ".map(e => e.getAttribute('src') || e.getAttribute('href') || e.getAttribute('srcset')"
            " || e.getAttribute('action'))")
        assert links and all(link.startswith("#") for link in links), (name, [x for x in links if x[:1] != "#"])
        assert console_errors(browser) == []


@pytest.mark.browser
def test_every_flame_graph_has_colours_of_its_own(browser: WebDriver, pages: dict[str, Path]) -> None:
    open_page(browser, pages["widgets"])
    fills = {kind: browser.execute_script(
        "return getComputedStyle(document.querySelector(`#${arguments[0]}-graph rect`)).fill", kind)
        for kind in ("allocation", "peak", "leak")}
    # Each kind its own hues, none left black by a kind the style sheet forgot.
    assert "rgb(0, 0, 0)" not in fills.values() and len(set(fills.values())) == 3
