"""``python -m engine.cli``: the memdeck command line without the terminal app."""

from engine.cli.main import main

raise SystemExit(main())
