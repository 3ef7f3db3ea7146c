"""mprof attach and detach: the monitor loaded into a running process."""
