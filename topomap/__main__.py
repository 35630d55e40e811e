from topomap.cli import main

main()
