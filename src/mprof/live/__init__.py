"""Watching a running process: mprof top and mprof run --live."""
