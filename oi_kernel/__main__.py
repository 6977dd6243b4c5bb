from oi_kernel.llm import host_link, local

if not local.expected():  # the warm host starts (or is found) while the kernel itself starts
    host_link.start()  # (the embedded model runs in the kernel: no host for it)
from oi_kernel.kernel.app import main  # noqa: E402

main()
