"""`python -m oopav.cli`: the `oopav` command without its console script."""

from oopav.cli import main

main()
