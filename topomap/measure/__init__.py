"""Verified copy measurements on a real GPU (worker processes, time limits)."""
