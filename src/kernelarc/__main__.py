"""`python -m kernelarc`: the same command line as the `kernelarc` script (for machines where only
`src/` is on the path, such as a lent GPU machine without an installed copy)."""

from kernelarc.cli.main import main

main()
