from oi_kernel.llm import host_link

host_link.start()  # litellm's warm host starts (or is found) while the kernel itself starts
from oi_kernel.kernel.app import main  # noqa: E402

main()
