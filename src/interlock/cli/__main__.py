"""``python -m interlock.cli``: the same as the ``interlock`` command."""

from . import main

main(prog_name="interlock")
