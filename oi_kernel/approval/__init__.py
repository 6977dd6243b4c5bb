"""How a decision about a proposed step is asked: stdin prompt, callback, widget card."""
