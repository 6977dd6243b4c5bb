from oi_kernel.kernelapp import main

main()
