"""How long call paths are folded for reading (report/folding.py), on
frames built by hand: what counts as the program's own code, what a fold
says, and that two rows never read the same."""

from __future__ import annotations

from mprof.report import folding
from mprof.report.display import for_display
from mprof.report.folding import Frame
from mprof.report.model import FunctionRow, Model, RunInfo

PROGRAM = "/home/dev/app/server"
LIBC = "/lib/x86_64-linux-gnu/libc.so.6"
LIBSTDCXX = "/usr/lib/x86_64-linux-gnu/libstdc++.so.6"
OWN_LIBRARY = "/home/dev/app/build/libcache.so"


def model_of(functions: dict[int, tuple[str, str]]) -> Model:
    """Functions by id: (whole name, module)."""
    rows = {id: FunctionRow(id, name, module, "", 0, None, 0, (0,) * 4, (0,) * 4, 0, 0, 0, 0, name)
            for id, (name, module) in functions.items()}
    # Names as the reports show them: short C++ names.
    return for_display(Model([RunInfo(1, 0, PROGRAM, PROGRAM, 1, True, True, False, 0, False, 5)], {}, rows, [], {},
                             [], []))


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
    # 76 characters: one fewer folds it.
    assert texts(CXX, [(1, 2, 3, 6)], width=76) == [
        "main > Cache::get > std::vector<>::vector > std::__new_allocator<>::allocate"]
    assert texts(CXX, [(1, 2, 3, 6)], width=75) == ["main > Cache::get > [1 std::] > std::__new_allocator<>::allocate"]


def test_library_runs_between_the_outermost_and_the_allocating_function_fold() -> None:
    # 152 characters whole: the three std:: frames between Cache::get and
    # the allocating function fold into one.
    assert texts(CXX, [(1, 2, 3, 4, 5, 6)]) == [
        "main > Cache::get > [3 std::] > std::__new_allocator<>::allocate"]
    # Frames of two libraries fold together, both named; of three, counted.
    assert texts(CXX, [(1, 7, 8, 10, 6)], width=40) == ["main > [3 libc.so.6, libstdc++.so.6] > "
                                                         "std::__new_allocator<>::allocate"]
    assert texts(CXX, [(1, 12, 8, 10, 6)], width=40) == ["main > [3 frames] > std::__new_allocator<>::allocate"]
    # The program's own library is own code: it stays.
    assert texts(CXX, [(1, 11, 3, 4, 5, 6)]) == [
        "main > Cache::load > [3 std::] > std::__new_allocator<>::allocate"]


def test_the_outermost_frame_stays_even_when_it_is_a_librarys() -> None:
    assert texts(CXX, [(7, 8, 9)], width=20) == ["__printf > [1 libc.so.6] > _IO_file_doallocate"]


def test_a_lone_library_frame_shorter_than_its_fold_stays() -> None:
    short = model_of({1: ("main", PROGRAM), 2: ("work", PROGRAM), 3: ("strdup", LIBC), 4: ("build", PROGRAM),
                      5: ("std::vector<int, std::allocator<int> >::vector(unsigned long)", PROGRAM),
                      6: ("std::_Vector_base<int, std::allocator<int> >::_M_create_storage(unsigned long)", PROGRAM),
                      7: ("std::__new_allocator<int>::allocate(unsigned long, void const*)", PROGRAM)})
    # [1 libc.so.6] would be longer than strdup: it stays, and with the
    # two std:: frames folded the path fits in 80 (75 characters).
    assert texts(short, [(1, 2, 3, 4, 5, 6, 7)], width=80) == [
        "main > work > strdup > build > [2 std::] > std::__new_allocator<>::allocate"]


def test_too_long_with_its_library_folded_a_path_folds_its_outer_own_frames_but_the_innermost() -> None:
    names = {n: (f"module_function_{n:02}", PROGRAM) for n in range(1, 9)}
    deep = model_of(names | {9: ("std::__new_allocator<int>::allocate(unsigned long, void const*)", PROGRAM),
                             10: ("std::vector<int, std::allocator<int> >::push_back(int const&)", PROGRAM)})
    path = (1, 2, 3, 4, 5, 6, 7, 8, 10, 9)
    # With k of the seven own frames after the outermost shown, the path is
    # 78 + 21k characters: 140 holds two of them.
    assert texts(deep, [path], width=140) == [
        "module_function_01 > [5 frames] > module_function_07 > module_function_08 > [1 std::] > "
        "std::__new_allocator<>::allocate"]
    # However narrow, the outermost, the innermost own frame and the
    # allocating function stay.
    assert texts(deep, [path], width=10) == [
        "module_function_01 > [6 frames] > module_function_08 > [1 std::] > std::__new_allocator<>::allocate"]


def test_rows_that_would_read_the_same_show_the_frames_that_tell_them_apart() -> None:
    # 4 and 13 are where the two differ, inside the fold: that frame, and
    # only it, is shown in each.
    assert texts(CXX, [(1, 2, 3, 4, 5, 6), (1, 2, 3, 13, 5, 6)]) == [
        "main > Cache::get > [1 std::] > std::_Vector_base<>::_M_create_storage > [1 std::] > "
        "std::__new_allocator<>::allocate",
        "main > Cache::get > [1 std::] > std::_Vector_base<>::_M_deallocate > [1 std::] > "
        "std::__new_allocator<>::allocate"]
    # A third row that already differs stays folded.
    assert texts(CXX, [(1, 2, 3, 4, 5, 6), (1, 11, 3, 4, 5, 6)]) == [
        "main > Cache::get > [3 std::] > std::__new_allocator<>::allocate",
        "main > Cache::load > [3 std::] > std::__new_allocator<>::allocate"]


def test_a_partial_path_keeps_its_mark_and_a_path_of_no_frame_its_label() -> None:
    shown = folding.fold_paths([frames(CXX, 2, 3, 4, 5, 6), []], [True, False], 60)
    assert [path.text for path in shown] == ["... > Cache::get > [3 std::] > std::__new_allocator<>::allocate",
                                             "(no call chain)"]
