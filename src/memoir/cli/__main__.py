from memoir.cli.app import main

main()
