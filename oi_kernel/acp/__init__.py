"""``oi-kernel acp``: the engine as an Agent Client Protocol agent over stdio.

A fourth front door next to the kernel, ``%%oi`` and the Python API: Jupyter AI's chat, Zed
and any other ACP client drive the same session assembly, approval, risk review, child
kernel and session log. ``updates`` maps the engine's events to ACP updates (the one place
to change when the events change), ``agent`` answers the client's requests, ``serve`` runs
it on stdio. Importing this package imports neither the ACP SDK nor litellm.
"""
