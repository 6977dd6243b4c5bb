"""The language model: the one boundary to litellm, the embedded offline model, and the
recorded model that replay uses."""
