import sys

from icefloe.rest._main import main

sys.exit(main())
