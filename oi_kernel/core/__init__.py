"""The engine: one instruction's turn loop and the pure pieces it is made of (prompts, code
extraction, context budget, outputs, languages, the user's namespace, small-model help)."""
