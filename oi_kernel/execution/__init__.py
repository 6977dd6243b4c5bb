"""Where approved code runs: the child kernel and its runner, the in-process shell executor
of ``%%oi``, the sandbox and the memory-limit launcher."""
