"""`python -m oopav.cli`: the `oopav` command (tests and scripts run it so)."""

from oopav.cli import main

main()
