from __future__ import annotations

from specsched.cli import main

raise SystemExit(main())
