"""`python -m tui.cli`: the full command line, without the hook fast path of `tui.launch`."""

from tui.cli import main

main()
