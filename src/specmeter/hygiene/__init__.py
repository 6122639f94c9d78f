"""Measurement hygiene: what else the machine did during a run, a verdict on it, and ``doctor``."""
