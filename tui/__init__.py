"""Everything a person touches in a terminal: the `pitstop` command line and the dashboard."""
