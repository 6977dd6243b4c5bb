"""A real MCP server for tests, written with the official SDK (mcp 2.x: ``MCPServer``, the
class that was ``FastMCP`` in 1.x).

    python -m tests.mcp_server                 # stdio
    python -m tests.mcp_server --http PORT     # streamable HTTP on 127.0.0.1:PORT/mcp
    python -m tests.mcp_server --many 200      # plus 200 generated tools
    python -m tests.mcp_server --silent        # reads stdin, never answers (a hung server)

Tools: lookup_price (read-only), delete_item (destructive), add (no hints), chart (an
image), fail (an error), slow (sleeps), crash (the process exits mid-call), env (which of
its environment's names it sees).
"""



import argparse
import base64
import os
import struct
import sys
import time
import zlib


def tiny_png() -> bytes:
    """A 2x2 red PNG."""
    def chunk(kind: bytes, data: bytes) -> bytes:
        body = kind + data
        return struct.pack(">I", len(data)) + body + struct.pack(">I", zlib.crc32(body))

    raw = b"".join(b"\x00" + b"\xff\x00\x00" * 2 for _ in range(2))
    return (b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", 2, 2, 8, 2, 0, 0, 0))
            + chunk(b"IDAT", zlib.compress(raw)) + chunk(b"IEND", b""))


def build(many: int = 0):  # noqa: ANN201
    from mcp.server.mcpserver import Image, MCPServer
    from mcp.server.mcpserver.exceptions import ToolError
    from mcp.types import ToolAnnotations

    server = MCPServer("prices")
    prices = {"apple": 1.25, "pear": 2.5}

    @server.tool(annotations=ToolAnnotations(read_only_hint=True))
    def lookup_price(item: str) -> str:
        """Look up the price of an item in euros."""
        if item not in prices:
            raise ToolError(f"unknown item {item!r}; known: {', '.join(sorted(prices))}")
        return f"{item}: {prices[item]} EUR"

    @server.tool(annotations=ToolAnnotations(destructive_hint=True, read_only_hint=False))
    def delete_item(item: str) -> str:
        """Delete an item from the price list."""
        return f"deleted {item}: {prices.pop(item, None) is not None}"

    @server.tool()
    def add(a: float, b: float) -> str:
        """Add two numbers."""
        return str(a + b)

    @server.tool(annotations=ToolAnnotations(read_only_hint=True))
    def chart() -> Image:
        """A small chart (a PNG)."""
        return Image(data=tiny_png(), format="png")

    @server.tool(annotations=ToolAnnotations(read_only_hint=True))
    def slow(seconds: float) -> str:
        """Sleep, then answer."""
        time.sleep(seconds)
        return "slept"

    @server.tool(annotations=ToolAnnotations(read_only_hint=True))
    def crash() -> str:
        """Exit the server process mid-call."""
        os._exit(3)

    @server.tool(annotations=ToolAnnotations(read_only_hint=True))
    def env() -> str:
        """The names of the environment variables the server sees."""
        return " ".join(sorted(os.environ))

    for n in range(many):
        def generated(text: str, n: int = n) -> str:
            return f"tool {n}: {text}"

        server.add_tool(generated, name=f"generated_tool_{n:03d}",
                        description=f"Generated tool number {n}: transforms a text in way {n} "
                        "for the size test. " + "It has a long description. " * 4)
    return server


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--http", type=int, default=0)
    parser.add_argument("--many", type=int, default=0)
    parser.add_argument("--silent", action="store_true")
    opts = parser.parse_args()
    if opts.silent:
        for _ in sys.stdin:
            pass
        time.sleep(3600)
        return
    server = build(opts.many)
    if opts.http:
        server.run("streamable-http", host="127.0.0.1", port=opts.http)
    else:
        server.run()


if __name__ == "__main__":
    _ = base64  # (kept for readers: images travel base64-encoded)
    main()
