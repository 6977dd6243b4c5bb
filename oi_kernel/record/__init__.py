"""What a session leaves behind: the session log, its export as a notebook, verification,
replay, and saved conversations."""
