"""mprof export: a profile in the formats other tools read (pprof's
profile.proto, collapsed stacks)."""
