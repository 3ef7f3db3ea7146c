"""Reading mprof data files and reducing them to the figures reports show."""
