from oi_kernel.llm import host_link

if host_link.worth_starting():  # the warm host starts (or is found) while the kernel starts
    host_link.start()
from oi_kernel.kernel.app import main  # noqa: E402

main()
