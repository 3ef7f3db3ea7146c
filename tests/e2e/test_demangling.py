"""mprof-resolve's demangling of fixed symbols, each given to a function of a
small library as its assembler name: from the ELF symbol table (built as C
without debug information) and from DWARF's linkage names (built as C++
with -g).  Rust names come back whole, as rustc-demangle prints them
without its alternate flag; the expected forms are rustc-demangle's own test
cases (src/lib.rs in rust-lang/rustc-demangle for legacy symbols,
rust-lang/rust's src/tools/rust-demangler/tests/lib.rs for v0).  C++ names
come back as __cxa_demangle gives them, as before."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from mprof.reducer.records import Module
from mprof.reducer.symbolize import Resolver, WarningSink

NAMES = {
    # Legacy: the hash kept, the $ escapes and .. decoded.
    "_ZN3foo17h05af221e174051e9E": "foo::h05af221e174051e9",
    "_ZN5alloc9allocator6Layout9for_value17h02a996811f781011E":
        "alloc::allocator::Layout::for_value::h02a996811f781011",
    "_ZN38_$LT$core..option..Option$LT$T$GT$$GT$6unwrap18_MSG_FILE_LINE_COL17haf7cb8d5824ee659E":
        "<core::option::Option<T>>::unwrap::_MSG_FILE_LINE_COL::haf7cb8d5824ee659",
    "_ZN4core5slice89_$LT$impl$u20$core..iter..traits..IntoIterator$u20$for$u20$$RF$$u27$a$u20$$u5b$T$u5d$$GT$"
    "9into_iter17h450e234d27262170E":
        "core::slice::<impl core::iter::traits::IntoIterator for &'a [T]>::into_iter::h450e234d27262170",
    "_ZN88_$LT$core..result..Result$LT$$u21$$C$$u20$E$GT$$u20$as$u20$std..process..Termination$GT$6report"
    "17hfc41d0da4a40b3e8E":
        "<core::result::Result<!, E> as std::process::Termination>::report::hfc41d0da4a40b3e8",
    # ThinLTO's suffix dropped (demangle_thinlto), the hash kept.
    "_ZN9backtrace3foo17hbb467fcdaea5d79bE.llvm.A5310EB9": "backtrace::foo::hbb467fcdaea5d79b",
    # v0: crate disambiguators kept.
    "_RNvC6_123foo3bar": "123foo[0]::bar",
    "_RNCNCNgCs6DXkGYLi8lr_2cc5spawn00B5_": "cc[4d6468d6c9fd4bb3]::spawn::{closure#0}::{closure#0}",
    "_RNCINkXs25_NgCsbmNqQUJIY6D_4core5sliceINyB9_4IterhENuNgNoBb_4iter8iterator8Iterator9rpositionNCNgNpB9_"
    "6memchr7memrchrs_0E0Bb_":
        "<core[846817f741e54dfd]::slice::Iter<u8> as core[846817f741e54dfd]::iter::iterator::Iterator>::rposition::"
        "<core[846817f741e54dfd]::slice::memchr::memrchr::{closure#1}>::{closure#0}",
    "_RINbNbCskIICzLVDPPb_5alloc5alloc8box_freeDINbNiB4_5boxed5FnBoxuEp6OutputuEL_ECs1iopQbuBiw2_3std":
        "alloc[f15a878b47eb696b]::alloc::box_free::<dyn alloc[f15a878b47eb696b]::boxed::FnBox<(), Output = ()>>",
    "_RNvC9backtrace3foo.llvm.A5310EB9": "backtrace[0]::foo",
    # C++: parameters and all; std::string stays std::string.
    "_ZNSt6vectorIiSaIiEE9push_backERKi": "std::vector<int, std::allocator<int> >::push_back(int const&)",
    "_ZNSs4_Rep9_S_createEmmRKSaIcE":
        "std::string::_Rep::_S_create(unsigned long, unsigned long, std::allocator<char> const&)",
    # Neither: as it is.
    "plain_c_function": "plain_c_function",
}


@pytest.mark.parametrize("build", [["gcc", "-x", "c"], ["g++", "-x", "c++", "-g"]], ids=["symbols", "dwarf"])
def test_the_resolver_demangles_cxx_and_both_rust_manglings(tmp_path: Path, build: list[str]) -> None:
    source = tmp_path / "names.c"
    source.write_text("".join(f'void f{n}(void) __asm__("{symbol}");\nvoid f{n}(void) {{}}\n'
                              for n, symbol in enumerate(NAMES)))
    library = tmp_path / "libnames.so"
    subprocess.run([*build, "-O0", "-shared", "-fPIC", "-o", library, source], check=True)
    offsets = {}
    for line in subprocess.run(["nm", "--defined-only", library], capture_output=True, text=True,
                               check=True).stdout.splitlines():
        address, kind, symbol = line.split(" ", 2)
        if kind == "T" and symbol in NAMES:
            offsets[symbol] = int(address, 16)
    assert sorted(offsets) == sorted(NAMES)
    bias = 0x7F00_0000_0000
    module = Module(bias, bias, bias + library.stat().st_size, False, b"", str(library))
    warnings = WarningSink()
    with Resolver([module], warnings) as resolver:
        # Return addresses one byte into each function: its first byte is looked up.
        frames = resolver.resolve([bias + offset + 1 for offset in offsets.values()])
    assert {symbol: [frame.function for frame in frames[bias + offset + 1]] for symbol, offset in offsets.items()} \
        == {symbol: [name] for symbol, name in NAMES.items()}
    assert warnings.messages == []
