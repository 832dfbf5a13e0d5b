"""Models, methods, statistics and reports."""
