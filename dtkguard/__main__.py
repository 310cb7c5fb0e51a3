"""`python -m dtkguard`."""

import sys

from dtkguard.cli import main

sys.exit(main())
