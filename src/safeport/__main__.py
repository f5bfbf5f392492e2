from safeport.cli import main

main()
