"""mprof, the memory allocation profiler of Zorn and Hilfinger for C and C++:
the reducer of the monitor's data files, the reports, and the command line.
The monitor itself is C (monitor/ in the source tree)."""
