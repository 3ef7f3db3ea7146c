"""How long call paths are folded for reading (report/folding.py), on
frames built by hand: what counts as the program's own code, what a fold
says, and that two rows never read the same; and that libmprof-reduce
(reduce/fold.c) folds random tables as the Python it replaced
(reference_folding.py) did."""

from __future__ import annotations

import random

import pytest

import reference_folding
from mprof.report import folding, tables
from mprof.report.display import for_display
from mprof.report.folding import Frame
from mprof.report.model import FunctionRow, Model, RunInfo

PROGRAM = "/home/dev/app/server"
LIBC = "/lib/x86_64-linux-gnu/libc.so.6"
LIBSTDCXX = "/usr/lib/x86_64-linux-gnu/libstdc++.so.6"
OWN_LIBRARY = "/home/dev/app/build/libcache.so"


def model_of(functions: dict[int, tuple[str, str]], program: str = PROGRAM) -> Model:
    """Functions by id: (whole name, module); program, the executable's path."""
    rows = {id: FunctionRow(id, name, module, "", 0, None, 0, (0,) * 4, (0,) * 4, 0, 0, 0, 0, name)
            for id, (name, module) in functions.items()}
    # Run by a name other than its path, as through a link in a bin directory:
    # the executable's module is the path.
    command_line = f"{program.rsplit('/', 1)[-1]} --serve"
    # Names as the reports show them: short C++ names.
    return for_display(Model([RunInfo(1, 0, program, command_line, 1, True, True, False, 0, False, 5)], {}, rows, [],
                             {}, [], []))


def frames(model: Model, *ids: int) -> list[Frame]:
    return folding.path_frames(model, list(ids))


def texts(model: Model, paths: list[tuple[int, ...]], width: int | None = 60) -> list[str]:
    return [shown.text for shown in folding.fold_paths([frames(model, *path) for path in paths],
                                                       [False] * len(paths), width)]


# A C++ program at -O2: the standard library's templates compiled into its
# own code, and libc's and libstdc++'s functions in their modules.
CXX = model_of({
    1: ("main", PROGRAM),
    2: ("Cache::get(std::__cxx11::basic_string<char, std::char_traits<char>, std::allocator<char> > const&)",
        PROGRAM),
    3: ("std::vector<int, std::allocator<int> >::vector(unsigned long, int const&, std::allocator<int> const&)",
        PROGRAM),
    4: ("std::_Vector_base<int, std::allocator<int> >::_M_create_storage(unsigned long)", PROGRAM),
    5: ("std::_Vector_base<int, std::allocator<int> >::_M_allocate(unsigned long)", PROGRAM),
    6: ("std::__new_allocator<int>::allocate(unsigned long, void const*)", PROGRAM),
    7: ("__printf", LIBC),
    8: ("__vfprintf_internal", LIBC),
    9: ("_IO_file_doallocate", LIBC),
    10: ("operator new(unsigned long)", LIBSTDCXX),
    11: ("Cache::load()", OWN_LIBRARY),
    12: ("__gnu_cxx::__normal_iterator<int*, std::vector<int, std::allocator<int> > >::operator++()", PROGRAM),
    13: ("std::_Vector_base<int, std::allocator<int> >::_M_deallocate(int*, unsigned long)", PROGRAM),
})


def test_own_code_is_the_programs_modules_less_the_standard_librarys_templates() -> None:
    own = {id: frame.own for id, frame in zip(range(1, 14), frames(CXX, *range(1, 14)), strict=True)}
    assert own == {1: True, 2: True, 3: False, 4: False, 5: False, 6: False, 7: False, 8: False, 9: False,
                   10: False, 11: True, 12: False, 13: False}
    origins = [frame.origin for frame in frames(CXX, 3, 7, 10, 12)]
    assert origins == ["std::", "libc.so.6", "libstdc++.so.6", "__gnu_cxx::"]


@pytest.mark.parametrize("program", ["/usr/lib/app/server", "/usr/libexec/app/server"])
def test_a_program_installed_in_a_system_directory_is_its_own_code(program: str) -> None:
    """A package's program under /usr/lib/PACKAGE or /usr/libexec is the
    executable, not one of the system's libraries: its functions are own
    code (less the standard library's templates in it), while libc and a
    library beside it in the system's directories stay the system's."""
    installed = model_of({
        1: ("main", program),
        2: ("Cache::get()", program),
        3: ("std::vector<int, std::allocator<int> >::reserve(unsigned long)", program),
        4: ("plugin_load", "/usr/lib/x86_64-linux-gnu/libplugin.so.1"),
        5: ("malloc", LIBC),
    }, program)
    assert [(frame.own, frame.origin) for frame in frames(installed, 1, 2, 3, 4, 5)] == [
        (True, ""), (True, ""), (False, "std::"), (False, "libplugin.so.1"), (False, "libc.so.6")]
    # Folded, the program's frames stay, and the library function it called; the library's frames below fold.
    assert texts(installed, [(1, 2, 4, 3, 3, 3, 5)], 40) == ["main > Cache::get > plugin_load > [3 std::] > malloc"]


def test_rust_generics_of_std_core_and_alloc_are_library_code_in_the_program() -> None:
    rust = model_of({
        1: ("rust_workers::worker", PROGRAM),
        2: ("<alloc::vec::Vec<T,A> as core::ops::drop::Drop>::drop", PROGRAM),
        3: ("core::ptr::drop_in_place<rust_workers::Record>", PROGRAM),
        4: ("<rust_workers::Record as core::fmt::Display>::fmt", PROGRAM),
        5: ("alloc::raw_vec::RawVec<T,A>::grow_amortized", PROGRAM),
        6: ("std::thread::Builder::spawn_unchecked_::{{closure}}", PROGRAM),
    })
    assert [(frame.own, frame.origin) for frame in frames(rust, 1, 2, 3, 4, 5, 6)] == [
        (True, ""), (False, "alloc::"), (False, "core::"), (True, ""), (False, "alloc::"), (False, "std::")]


def test_a_path_that_fits_is_shown_whole() -> None:
    assert texts(CXX, [(1, 2, 3, 6)], width=None) == [
        "main > Cache::get > std::vector<>::vector > std::__new_allocator<>::allocate"]
    # 76 characters; however narrow, nothing of it folds: the call Cache::get made and the allocating function.
    assert texts(CXX, [(1, 2, 3, 6)], width=10) == [
        "main > Cache::get > std::vector<>::vector > std::__new_allocator<>::allocate"]


def test_library_runs_between_the_outermost_and_the_allocating_function_fold_but_the_call_made() -> None:
    # 152 characters whole: of the three std:: frames between Cache::get
    # and the allocating function, the one Cache::get called stays.
    assert texts(CXX, [(1, 2, 3, 4, 5, 6)]) == [
        "main > Cache::get > std::vector<>::vector > [2 std::] > std::__new_allocator<>::allocate"]
    # Frames of two libraries fold together, both named; of three, counted.
    assert texts(CXX, [(1, 7, 8, 10, 6)], width=40) == ["main > __printf > [2 libc.so.6, libstdc++.so.6] > "
                                                         "std::__new_allocator<>::allocate"]
    assert texts(CXX, [(1, 7, 12, 8, 10, 6)], width=40) == [
        "main > __printf > [3 frames] > std::__new_allocator<>::allocate"]
    # The program's own library is own code: it stays, and so does its call.
    assert texts(CXX, [(1, 11, 3, 4, 5, 6)]) == [
        "main > Cache::load > std::vector<>::vector > [2 std::] > std::__new_allocator<>::allocate"]


def test_the_outermost_frame_stays_even_when_it_is_a_librarys() -> None:
    assert texts(CXX, [(7, 8, 9)], width=20) == ["__printf > [1 libc.so.6] > _IO_file_doallocate"]


def test_a_lone_library_frame_shorter_than_its_fold_stays() -> None:
    short = model_of({1: ("main", PROGRAM), 2: ("work", PROGRAM), 3: ("strdup", LIBC), 4: ("build", PROGRAM),
                      5: ("std::vector<int, std::allocator<int> >::vector(unsigned long)", PROGRAM),
                      6: ("std::_Vector_base<int, std::allocator<int> >::_M_create_storage(unsigned long)", PROGRAM),
                      7: ("std::__new_allocator<int>::allocate(unsigned long, void const*)", PROGRAM)})
    # strdup, called by a library function, folds alone into [1 libc.so.6]
    # only if that is shorter: it stays; _M_create_storage folds.
    assert texts(short, [(1, 2, 5, 3, 7), (1, 4, 5, 6, 7)], width=20) == [
        "main > work > std::vector<>::vector > strdup > std::__new_allocator<>::allocate",
        "main > build > std::vector<>::vector > [1 std::] > std::__new_allocator<>::allocate"]


def test_the_programs_own_frames_never_fold() -> None:
    names = {n: (f"module_function_{n:02}", PROGRAM) for n in range(1, 9)}
    deep = model_of(names | {9: ("std::__new_allocator<int>::allocate(unsigned long, void const*)", PROGRAM),
                             10: ("std::vector<int, std::allocator<int> >::push_back(int const&)", PROGRAM),
                             11: ("std::vector<int, std::allocator<int> >::_M_realloc_insert(int const&)", PROGRAM)})
    # However narrow: only the library frame below the call made folds.
    assert texts(deep, [(1, 2, 3, 4, 5, 6, 7, 8, 10, 11, 9)], width=10) == [
        "module_function_01 > module_function_02 > module_function_03 > module_function_04 > module_function_05 > "
        "module_function_06 > module_function_07 > module_function_08 > std::vector<>::push_back > [1 std::] > "
        "std::__new_allocator<>::allocate"]


def test_rows_that_would_read_the_same_show_the_frames_that_tell_them_apart() -> None:
    # 4 and 13 are where the two differ, inside the fold: that frame, and
    # only it, is shown in each.
    assert texts(CXX, [(1, 2, 3, 4, 5, 6), (1, 2, 3, 13, 5, 6)]) == [
        "main > Cache::get > std::vector<>::vector > std::_Vector_base<>::_M_create_storage > [1 std::] > "
        "std::__new_allocator<>::allocate",
        "main > Cache::get > std::vector<>::vector > std::_Vector_base<>::_M_deallocate > [1 std::] > "
        "std::__new_allocator<>::allocate"]
    # A third row that already differs stays folded.
    assert texts(CXX, [(1, 2, 3, 4, 5, 6), (1, 11, 3, 4, 5, 6)]) == [
        "main > Cache::get > std::vector<>::vector > [2 std::] > std::__new_allocator<>::allocate",
        "main > Cache::load > std::vector<>::vector > [2 std::] > std::__new_allocator<>::allocate"]


def test_a_partial_path_keeps_its_mark_and_a_path_of_no_frame_its_label() -> None:
    shown = folding.fold_paths([frames(CXX, 2, 3, 4, 5, 6), []], [True, False], 60)
    assert [path.text for path in shown] == [
        "... > Cache::get > std::vector<>::vector > [2 std::] > std::__new_allocator<>::allocate", "(no call chain)"]


def test_a_row_that_reads_as_anothers_fold_differs_where_it_has_no_frame() -> None:
    # B's third frame is named like A's fold: both read "x > lib_function_0
    # > [3 libc.so.6] > w".  They differ at A's innermost folded frame,
    # where B has none (folding.py in Python raised IndexError there): A
    # shows it.
    lib = [Frame(f"lib_function_{n}", False, "libc.so.6") for n in range(4)]
    x, w = Frame("x", True, ""), Frame("w", True, "")
    shown = folding.fold_paths([[x, *lib, w], [x, lib[0], Frame("[3 libc.so.6]", False, "libc.so.6"), w]],
                               [False] * 2, 30)
    assert [path.text for path in shown] == ["x > lib_function_0 > [2 libc.so.6] > lib_function_3 > w",
                                             "x > lib_function_0 > [3 libc.so.6] > w"]


def test_rows_read_the_same_by_their_texts_whatever_they_are_made_of() -> None:
    # A frame named like a fold, or "...", makes a row read as another
    # folds: as by their texts, the row that folds shows the frame that
    # tells them apart.
    x, y, called = Frame("x", True, ""), Frame("y", True, ""), Frame("called", False, "o")
    library = Frame("library_function", False, "o")
    shown = folding.fold_paths([[x, called, library, y], [x, called, Frame("[1 o]", True, ""), y]], [False] * 2, 10)
    assert [path.text for path in shown] == ["x > called > library_function > y", "x > called > [1 o] > y"]
    shown = folding.fold_paths([[x, called, library, y], [Frame("...", True, ""), x, called, Frame("[1 o]", True, ""),
                                                           y]], [True, False], 10)
    assert [path.text for path in shown] == ["... > x > called > library_function > y", "... > x > called > [1 o] > y"]


def test_without_a_width_or_a_path_nothing_folds() -> None:
    path = frames(CXX, 1, 2, 3, 4, 5, 6)
    assert folding.fold_paths([path], [True], None) == [folding.ShownPath(True, tuple(path))]
    assert folding.fold_paths([], [], 10) == []
    # mprof diff passes a flag for rows without a path too.
    assert [shown.text for shown in folding.fold_paths([path], [False, False], 60)] == [
        "main > Cache::get > std::vector<>::vector > [2 std::] > std::__new_allocator<>::allocate"]


# Texts that test whether rows are told apart by what they read: fold
# labels, the partial mark and the empty path's text as frame names,
# separators inside names, names that are not valid UTF-8 (surrogateescape).
AWKWARD_TEXTS = ["[1 frame]", "[2 frames]", "[1 std::]", "[2 std::]", "[3 frames]", "[2 std::, libc.so.6]", "...",
                 "(no call chain)", "a > b", " > ", ">", "a >", "> b", "", "é", "名前", "\udcff", "x\udcfe > y"]
ORIGINS = ["", "std::", "libc.so.6", "libstdc++.so.6", "core::", "[vdso]", "o", "a very long origin name.so.1"]


def random_text(rng: random.Random) -> str:
    roll = rng.random()
    if roll < 0.15:
        return rng.choice(AWKWARD_TEXTS)
    if roll < 0.25:
        return f"[{rng.randint(1, 12)} {rng.choice(ORIGINS)}]"
    return "".join(rng.choice("abcdefgh_:<>é") for _ in range(rng.choice([1, 3, 5, 8, 12, 20, 40, 90])))


def random_table(rng: random.Random) -> tuple[list[list[Frame]], list[bool], int | None]:
    """Rows drawn from a pool of frames, many of them alike: copies and
    near-copies that fold to the same text, equal frames as other objects,
    and frames of the same text but other origins."""
    pool = [Frame(random_text(rng), rng.random() < 0.4, rng.choice(ORIGINS)) for _ in range(rng.randint(1, 25))]
    pool += [Frame(frame.text, frame.own, frame.origin) for frame in rng.sample(pool, rng.randint(0, len(pool)))]
    pool += [Frame(frame.text, not frame.own, rng.choice(ORIGINS)) for frame in rng.sample(pool, len(pool) // 4)]
    deepest = rng.choice([3, 10, 40, 120])
    paths: list[list[Frame]] = []
    for _ in range(rng.randint(1, 40)):
        roll = rng.random()
        if paths and roll < 0.2:
            paths.append(list(rng.choice(paths)))  # the same row again
        elif paths and roll < 0.5:
            near = list(rng.choice(paths))
            for _ in range(rng.randint(1, 3)):
                if near:
                    near[rng.randrange(len(near))] = rng.choice(pool)
            paths.append(near)
        else:
            paths.append([rng.choice(pool) for _ in range(rng.randint(0, deepest))])
    partial = [rng.random() < 0.3 for _ in paths]
    width = rng.choice([None, rng.randint(-5, 20), rng.randint(0, 60), rng.randint(40, 300)])
    return paths, partial, width


@pytest.mark.slow
def test_the_library_folds_as_the_python_it_replaced_on_random_tables() -> None:
    rng = random.Random(31)
    compared = 0
    for _ in range(1000):
        paths, partial, width = random_table(rng)
        try:
            expected = reference_folding.fold_paths(paths, partial, width)
        except IndexError:
            continue  # a row read as another's fold where it had no frame (test above)
        shown = folding.fold_paths(paths, partial, width)
        assert shown == expected, (paths, partial, width)
        assert [path.text for path in shown] == [path.text for path in expected]
        compared += 1
    assert compared > 950


@pytest.mark.slow
def test_widths_past_64_bits_fold_as_the_widest_and_the_narrowest() -> None:
    rng = random.Random(5)
    for _ in range(50):
        paths, partial, _ = random_table(rng)
        for width in (10 ** 30, -10 ** 30, 1 << 62, -(1 << 62)):
            assert folding.fold_paths(paths, partial, width) == reference_folding.fold_paths(paths, partial, width)


def test_paths_name_functions_short_unless_two_rows_would_read_the_same() -> None:
    overloads = model_of({
        1: ("main", PROGRAM),
        2: ("Cache::get()", PROGRAM),
        3: ("Store::put()", PROGRAM),
        4: ("std::vector<int, std::allocator<int> >::vector(unsigned long)", PROGRAM),
        5: ("std::vector<int, std::allocator<int> >::vector(std::vector<int, std::allocator<int> > const&)", PROGRAM),
        6: ("operator new(unsigned long)", LIBSTDCXX),
    })
    # The call graph names the two constructors apart, by their parameters.
    assert overloads.functions[4].name == "std::vector<>::vector(unsigned long)"

    def shown(*paths: tuple[int, ...]) -> list[str]:
        return [path.text for path in tables.shown_whole_paths(
            overloads, [tables.WholePath(path, 1, 1) for path in paths], None)]

    # Their callers tell the rows apart: short names.
    assert shown((1, 2, 4, 6), (1, 3, 5, 6)) == ["main > Cache::get > std::vector<>::vector > operator new",
                                                 "main > Store::put > std::vector<>::vector > operator new"]
    # Only the constructors do: those rows name them whole, the others stay short.
    assert shown((1, 2, 4, 6), (1, 2, 5, 6), (1, 3, 4, 6)) == [
        "main > Cache::get > std::vector<>::vector(unsigned long) > operator new",
        "main > Cache::get > std::vector<>::vector(std::vector<> const&) > operator new",
        "main > Store::put > std::vector<>::vector > operator new"]
