from oi_kernel.kernel.app import main

main()
