"""Short C++ names: what each demangled form reads as by default, and when
a longer form is kept so that two functions never read the same."""

from __future__ import annotations

import pytest

from mprof.report.names import readable_names, short_name


@pytest.mark.parametrize(("demangled", "short"), [
    ("ggc_internal_alloc(unsigned long, void (*)(void*), unsigned long, unsigned long)", "ggc_internal_alloc"),
    ("std::map<int, std::string>::operator[](int const&)", "std::map<>::operator[]"),
    ("std::vector<int, std::allocator<int> >::operator=(std::vector<int, std::allocator<int> > const&)",
     "std::vector<>::operator="),
    ("void std::vector<int, std::allocator<int> >::_M_realloc_insert<int const&>(__gnu_cxx::__normal_iterator<int*, "
     "std::vector<int, std::allocator<int> > >, int const&)", "std::vector<>::_M_realloc_insert<>"),
    ("std::unique_ptr<A, std::default_delete<A> > std::make_unique<A>()", "std::make_unique<>"),
    ("bool operator< <int>(foo<int> const&, foo<int> const&)", "operator< <>"),
    ("std::ostream::operator<<(int)", "std::ostream::operator<<"),
    ("x::operator>>(int&)", "x::operator>>"),
    ("x::operator->() const", "x::operator->"),
    ("x::operator<=>(x const&) const", "x::operator<=>"),
    ("foo::operator()(int) const", "foo::operator()"),
    ("std::function<void (int)>::operator()(int) const", "std::function<>::operator()"),
    ("operator new(unsigned long)", "operator new"),
    ("operator delete[](void*, unsigned long)", "operator delete[]"),
    ("A::operator unsigned long() const", "A::operator unsigned long"),
    ('operator"" _kb(unsigned long long)', 'operator"" _kb'),
    ("main::{lambda(int)#1}::operator()(int) const", "main::{lambda(int)#1}::operator()"),
    ("g(int)::{lambda()#2}::operator()() const", "g::{lambda()#2}::operator()"),
    ("(anonymous namespace)::pool::pool()", "(anonymous namespace)::pool::pool"),
    ("foo(int) [clone .cold]", "foo [clone .cold]"),
    ("foo() &&", "foo"),
    ("int foo<(char)1>(int)", "foo<>"),
    # Not C++ functions: as they were.
    ("main", "main"),
    ("libstdc++.so.6+0xa57ba", "libstdc++.so.6+0xa57ba"),
    ("a<b", "a<b"),
    ("x)(", "x)("),
])
def test_short_names(demangled: str, short: str) -> None:
    assert short_name(demangled) == short


def test_names_that_would_read_the_same_keep_what_tells_them_apart() -> None:
    assert readable_names({
        1: "shapes::Grid<double, 4>::grow()", 2: "shapes::Grid<char, 8>::grow()",  # two instances: templates
        3: "f(int)", 4: "f(char)",  # overloads: whole signatures
        5: "g(int)", 6: "g",  # a C++ g and a C g: whole signatures
        7: "std::map<int, int>::operator[](int const&)", 8: "h",  # alone: short
    }) == {1: "shapes::Grid<double, 4>::grow", 2: "shapes::Grid<char, 8>::grow", 3: "f(int)", 4: "f(char)",
           5: "g(int)", 6: "g", 7: "std::map<>::operator[]", 8: "h"}
