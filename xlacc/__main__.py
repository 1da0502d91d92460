from xlacc.cli import main

main()
