"""fermix: every agent tool as a CLI subcommand with JSON in and JSON out."""

__version__ = "0.1.0"
