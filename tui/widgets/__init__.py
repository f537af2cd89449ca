"""Widgets the dashboard screens are built from; each renders engine models, none calls it."""
