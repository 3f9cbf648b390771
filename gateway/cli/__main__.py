"""`python -m gateway.cli`."""

import sys

from gateway.cli import main

sys.exit(main())
