"""mprof diff: two profiles compared."""
