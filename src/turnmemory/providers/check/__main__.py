"""``python -m turnmemory.providers.check PROVIDER FILE.json``."""

from turnmemory.providers.check import main

raise SystemExit(main())
