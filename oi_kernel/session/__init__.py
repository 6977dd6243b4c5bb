"""One session for every front door: its assembly, the command table, the rendering of a
turn, the lab extension's comm, and profiles."""
