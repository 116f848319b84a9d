"""``haste doctor``: check a deployed environment and say, per check, what is wrong and the exact fix.

Layout (docs/adr/0021): :mod:`.result` is the typed outcome; :mod:`.needs` says what the app
needs (the roles the Bicep grants, the app registration's shape); ``checks_*`` modules are pure
(facts in, :class:`~hastegeo.doctor.result.CheckResult` out); ``gather_*`` modules are the only
ones that import a provider SDK, lazily, and turn its answers into plain facts; :mod:`.run`
ties them together per area; :mod:`.render` prints a table or JSON. Nothing here is imported by
the Functions app.
"""
