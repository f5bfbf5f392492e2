from safeport.cli import main

main(["demo", "--yes"])
