"""Pushing profiles to a continuous-profiling server (Grafana Pyroscope):
a running program's, interval by interval, and a finished run's."""
