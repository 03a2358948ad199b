"""`python -m ibsnmp`: the same as the `ibsnmp` command."""

import sys

from .cli import main

sys.exit(main())
