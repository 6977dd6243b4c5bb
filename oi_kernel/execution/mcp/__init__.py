"""MCP servers as tools: configuration, one long-lived connection per server, the names
and size budget of what the model is offered, and the conversion of results."""
