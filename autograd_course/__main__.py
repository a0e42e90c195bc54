"""Allow ``python -m autograd_course``."""

from autograd_course.cli import main

raise SystemExit(main())
