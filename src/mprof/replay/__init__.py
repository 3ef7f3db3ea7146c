"""mprof replay: a recorded allocation trace played back against real
allocators (build/mprof-replay does the playing), and the papers' figures
made of what each replay measured."""
