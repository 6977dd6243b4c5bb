"""Open Interpreter inside other hosts' front ends, each loaded only by its host (through an
entry point), never by ``import oi_kernel``."""
