from airwave.cli import main

main()
