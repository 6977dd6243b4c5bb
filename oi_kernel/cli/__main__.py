import sys

from oi_kernel.cli.app import main

sys.exit(main())
