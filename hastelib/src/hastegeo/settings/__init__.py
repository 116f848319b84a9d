"""Settings: every environment variable the app reads, typed and validated once at start-up.

Three modules, each above the one before it:

- :mod:`.fields` — the building blocks: a section, a backend's section, comma-separated
  lists and maps from one variable. Every section builds on it, and on nothing of each other's.
- :mod:`.app` — the app's own sections and :class:`~hastegeo.settings.app.Settings`, which
  holds them and each backend's; it names no backend.
- :mod:`.load` — where the two meet: it finds the registered backends' sections and builds
  the settings from the environment (``load_settings``).

This package's own module imports nothing, so a backend's section can build on
:mod:`.fields` without importing the backends that import it (docs/adr/0029).
"""
