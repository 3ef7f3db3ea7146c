"""The mprof command line."""
