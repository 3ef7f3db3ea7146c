"""Turning a data file into what a user reads: JSON now, tables later."""
