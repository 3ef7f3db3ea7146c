"""What a data file's call path tree adds up to (reducer/tree.py): sites,
the leak table's partial chains and the call graph's pairs, worked out by
hand from the paths below."""

from __future__ import annotations

from datafile_builder import DataFileBuilder
from mprof.reducer import datafile, tree

# Return addresses: main's call of f, f's of g, g's of f and g's of malloc;
# main's call of h, h's of malloc.
MAIN_F, F_G, G_F, G_MALLOC, MAIN_H, H_MALLOC = 0x100, 0x200, 0x300, 0x310, 0x110, 0x400

PATHS = [
    # main > f > g > f > g > malloc: 1 block of 10 bytes, kept.
    ((G_MALLOC, F_G, G_F, F_G, MAIN_F), 1, 0, (10, 0, 0, 0), (0, 0, 0, 0)),
    # main > f > g > malloc: 2 blocks of 40, one freed.
    ((G_MALLOC, F_G, MAIN_F), 2, 1, (0, 80, 0, 0), (0, 40, 0, 0)),
    # main > h > malloc: 1 block of 3000, freed.
    ((H_MALLOC, MAIN_H), 1, 1, (0, 0, 0, 3000), (0, 0, 0, 3000)),
]


def totals(**header: int) -> tree.Totals:
    return tree.totals(datafile.parse(DataFileBuilder(leak_depth=2, paths=PATHS, **header).build()))


def test_sites_are_the_paths_innermost_addresses() -> None:
    assert sorted(totals().sites, key=lambda site: site.addr) == [
        tree.Site(G_MALLOC, 3, 1, (10, 80, 0, 0), (0, 40, 0, 0)),
        tree.Site(H_MALLOC, 1, 1, (0, 0, 0, 3000), (0, 0, 0, 3000)),
    ]


def test_leak_chains_group_paths_by_their_innermost_addresses() -> None:
    # At leak depth 2 the two paths through g share (G_MALLOC, F_G).
    assert sorted(totals().leaks, key=lambda chain: chain.addrs) == [
        tree.LeakChain((G_MALLOC, F_G), 3, 1, 90, 40),
        tree.LeakChain((H_MALLOC, MAIN_H), 1, 1, 3000, 3000),
    ]


def test_each_pair_counts_once_per_occurrence_in_a_path() -> None:
    # F_G follows MAIN_F in the first two paths and G_F in the first: the
    # pair (MAIN_F, F_G) carries 3 calls and 90 bytes, (F_G, G_F) and
    # (G_F, F_G) the first path's one call; (F_G, G_MALLOC) both paths'.
    assert sorted(totals().pairs, key=lambda pair: (pair.caller, pair.callee)) == [
        tree.Pair(MAIN_F, F_G, 3, (10, 80, 0, 0)),
        tree.Pair(MAIN_H, H_MALLOC, 1, (0, 0, 0, 3000)),
        tree.Pair(F_G, G_F, 1, (10, 0, 0, 0)),
        tree.Pair(F_G, G_MALLOC, 3, (10, 80, 0, 0)),
        tree.Pair(G_F, F_G, 1, (10, 0, 0, 0)),
    ]


def test_no_pairs_in_mprof_minus_mode() -> None:
    minus = tree.totals(datafile.parse(DataFileBuilder(flags=0x2, leak_depth=5, paths=PATHS).build()))
    assert minus.pairs == () and len(minus.sites) == 2


def test_the_empty_path_has_no_site_and_an_empty_chain() -> None:
    data = datafile.parse(DataFileBuilder(paths=[((), 2, 1, (16, 0, 0, 0), (8, 0, 0, 0))]).build())
    assert tree.totals(data) == tree.Totals(sites=(), leaks=(tree.LeakChain((), 2, 1, 16, 8),), pairs=())
    assert tree.addresses(data, -1) == ()
