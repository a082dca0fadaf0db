"""python -m learndyn.checks audit [CHAPTER] | robust [CHAPTER ...]: the weak spots, or every chapter at other seeds."""

import sys

from . import records, robust

if sys.argv[1:2] == ["robust"]:
    sys.exit(robust.main(sys.argv[2:]))
sys.exit(records.main(sys.argv[1:]))
