"""`python -m bench`: build synthetic ledgers, measure, print the table, write bench/results.json."""

from bench.run import main

main()
