"""python -m learndyn.checks audit [CHAPTER]: the weakest claims and loosest bounds of the recorded chapters."""

import sys

from .records import main

sys.exit(main(sys.argv[1:]))
