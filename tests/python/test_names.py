"""Short C++ and Rust names: what each demangled form reads as by default,
and when a longer form is kept so that two functions never read the same.
Rust names are given as mprof-resolve stores them, rustc-demangle's whole
form: legacy ones with their hash, v0 ones with crate disambiguators."""

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
    # A template operator's arguments after its name: no operator's name has a < after another character.
    ("std::__cxx11::basic_string<char, std::char_traits<char>, std::allocator<char> > std::operator+<char, "
     "std::char_traits<char>, std::allocator<char> >(char const*, std::__cxx11::basic_string<char, "
     "std::char_traits<char>, std::allocator<char> >&&)", "std::operator+<>"),
    ("bool std::operator==<char>(std::basic_string<char> const&, char const*)", "std::operator==<>"),
    ("x::operator<<=(int)", "x::operator<<="),
    ("foo::operator()(int) const", "foo::operator()"),
    ("std::function<void (int)>::operator()(int) const", "std::function<>::operator()"),
    ("operator new(unsigned long)", "operator new"),
    # No parameter list, so no return type to cut: a C symbol with a space.
    ("leaky_function free", "leaky_function free"),
    ("a b<int>", "a b<>"),
    ("operator delete[](void*, unsigned long)", "operator delete[]"),
    ("A::operator unsigned long() const", "A::operator unsigned long"),
    ('operator"" _kb(unsigned long long)', 'operator"" _kb'),
    ("main::{lambda(int)#1}::operator()(int) const", "main::{lambda(int)#1}::operator()"),
    ("g(int)::{lambda()#2}::operator()() const", "g::{lambda()#2}::operator()"),
    ("(anonymous namespace)::pool::pool()", "(anonymous namespace)::pool::pool"),
    ("foo(int) [clone .cold]", "foo [clone .cold]"),
    ("foo() &&", "foo"),
    ("int foo<(char)1>(int)", "foo<>"),
    ("f[abi:cxx11](int)", "f[abi:cxx11]"),  # an ABI tag is no crate disambiguator
    ("foo<int [16]>::bar(int (*) [4])", "foo<>::bar"),
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


# A crate disambiguator of each crate, as v0 names carry them.
ALLOC, CORE = "alloc[d500228d23c6cfcc]", "core[4e4b6e9a9c4c4a32]"
STD, MT = "std[9df11b70ee34264e]", "mt[70a8cec0dfedbb1a]"


@pytest.mark.parametrize(("demangled", "short"), [
    # Legacy mangling: the hash goes, and a path's generic parameters.
    ("mt::worker::hfac58d1d5f4a9e64", "mt::worker"),
    ("alloc::vec::Vec<T,A>::push::hb5050a2f00f6c8fe", "alloc::vec::Vec<>::push"),
    ("<alloc::vec::Vec<u8> as core::ops::drop::Drop>::drop::h0a1b2c3d4e5f6071",
     "<alloc::vec::Vec<> as core::ops::drop::Drop>::drop"),
    ("core::ptr::drop_in_place<mt::Record>::h0b5f5e3b3c1c4a62", "core::ptr::drop_in_place<>"),
    ("std::thread::Builder::spawn_unchecked_::{{closure}}::{{closure}}::hf7666a5b2c12b7c3",
     "std::thread::Builder::spawn_unchecked_::{{closure}}::{{closure}}"),
    ("core::ops::function::FnOnce::call_once{{vtable.shim}}::h2e1ec6d172a5120f",
     "core::ops::function::FnOnce::call_once{{vtable.shim}}"),
    ("<alloc::boxed::Box<F,A> as core::ops::function::FnOnce<Args>>::call_once::ha33be44d0848e316",
     "<alloc::boxed::Box<> as core::ops::function::FnOnce<>>::call_once"),
    ("core::ops::function::impls::<impl core::ops::function::FnOnce<A> for &F>::call_once::hfb9a2e938981d822",
     "core::ops::function::impls::<impl core::ops::function::FnOnce<> for &F>::call_once"),
    # v0: the crate disambiguators go, and generic arguments, turbofish too;
    # <T>::f of a plain path reads T::f, as the legacy name does.
    (f"{ALLOC}::alloc::realloc", "alloc::alloc::realloc"),
    (f"{MT}::worker", "mt::worker"),
    (f"<{ALLOC}::vec::Vec<{ALLOC}::boxed::Box<{MT}::Record>>>::push", "alloc::vec::Vec<>::push"),
    (f"{CORE}::ptr::drop_in_place::<{MT}::Record>", "core::ptr::drop_in_place::<>"),
    (f"<{ALLOC}::vec::Vec<u8> as {CORE}::ops::drop::Drop>::drop", "<alloc::vec::Vec<> as core::ops::drop::Drop>::drop"),
    (f"<{STD}::thread::Builder>::spawn_unchecked_::<{MT}::main::{{closure#0}}::{{closure#0}}, u64>::{{closure#1}}",
     "std::thread::Builder::spawn_unchecked_::<>::{closure#1}"),
    (f"<<{STD}::thread::Builder>::spawn_unchecked_<{MT}::main::{{closure#0}}, u64>::{{closure#1}} as "
     f"{CORE}::ops::function::FnOnce<()>>::call_once::{{shim:vtable#0}}",
     "<std::thread::Builder::spawn_unchecked_<>::{closure#1} as core::ops::function::FnOnce<>>::call_once"
     "::{shim:vtable#0}"),
    (f"{CORE}::iter::adapters::map::map_fold::<u64, (), fn(u8) -> u8>::{{closure#0}}",
     "core::iter::adapters::map::map_fold::<>::{closure#0}"),  # a fn type's -> closes nothing
    ("<str>::trim_start_matches::<&str>", "str::trim_start_matches::<>"),
    ("<[u8]>::to_vec", "<[u8]>::to_vec"),  # not a path: stays a qualified one
    (f"<dyn {CORE}::any::Any>::is::<u8>", "<dyn core::any::Any>::is::<>"),
    (f"<&str as {ALLOC}::ffi::c_str::CString::new::SpecNewImpl>::spec_new_impl",
     "<&str as alloc::ffi::c_str::CString::new::SpecNewImpl>::spec_new_impl"),
])
def test_short_rust_names(demangled: str, short: str) -> None:
    assert short_name(demangled) == short


def test_rust_names_never_show_their_hash_or_crate_as_rustc_demangle_prints_them() -> None:
    assert readable_names({
        # Two instances of one generic function: in legacy mangling only
        # their hashes differ, and they read the same (--full-names tells).
        1: "alloc::raw_vec::RawVec<T,A>::allocate_in::h6d27b67716dd7b11",
        2: "alloc::raw_vec::RawVec<T,A>::allocate_in::hc37f7cf71740f100",
        # Two instances whose names say their types: the types tell them apart.
        3: "core::ptr::drop_in_place<mt::Record>::h0b5f5e3b3c1c4a62",
        4: "core::ptr::drop_in_place<alloc::string::String>::h5d22f60f16d341c0",
        5: "mt::worker::hfac58d1d5f4a9e64",  # alone: short
        # A v0 instance and the legacy generic of the same function.
        6: f"<{ALLOC}::vec::Vec<{ALLOC}::boxed::Box<{MT}::Record>>>::push",
        7: "alloc::vec::Vec<T,A>::push::hb5050a2f00f6c8fe",
        # Two versions of one crate.
        8: "mt[1111111111111111]::parse", 9: "mt[2222222222222222]::parse",
    }) == {1: "alloc::raw_vec::RawVec<T,A>::allocate_in", 2: "alloc::raw_vec::RawVec<T,A>::allocate_in",
           3: "core::ptr::drop_in_place<mt::Record>", 4: "core::ptr::drop_in_place<alloc::string::String>",
           5: "mt::worker", 6: "<alloc::vec::Vec<alloc::boxed::Box<mt::Record>>>::push",
           7: "alloc::vec::Vec<T,A>::push",
           8: "mt::parse", 9: "mt::parse"}


def test_names_restore_only_what_tells_functions_apart() -> None:
    """Instances of one template differ in their arguments, shown without arguments of their own; overloads differ
    in their parameters, shown with template arguments emptied; whole signatures only where nothing shorter tells."""
    assert readable_names({
        1: "std::__new_allocator<std::__cxx11::basic_string<char, std::char_traits<char>, std::allocator<char> >*>"
           "::allocate(unsigned long, void const*)",
        2: "std::__new_allocator<double>::allocate(unsigned long, void const*)",
        3: "std::__new_allocator<std::__detail::_Hash_node<std::pair<std::__cxx11::basic_string<char, "
           "std::char_traits<char>, std::allocator<char> > const, std::vector<double, std::allocator<double> > >, "
           "true> >::allocate(unsigned long, void const*)",
        4: "std::vector<double, std::allocator<double> >::vector(unsigned long, double const&, "
           "std::allocator<double> const&)",
        5: "std::vector<double, std::allocator<double> >::vector(std::vector<double, std::allocator<double> > const&)",
        6: "std::vector<int, std::allocator<int> >::vector(std::vector<int, std::allocator<int> > const&)",
    }) == {1: "std::__new_allocator<std::__cxx11::basic_string<>*>::allocate",
           2: "std::__new_allocator<double>::allocate",
           3: "std::__new_allocator<std::__detail::_Hash_node<> >::allocate",
           4: "std::vector<>::vector(unsigned long, double const&, std::allocator<> const&)",
           5: "std::vector<double, std::allocator<> >::vector",
           6: "std::vector<int, std::allocator<> >::vector"}
