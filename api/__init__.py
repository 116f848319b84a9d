"""The Functions blueprints: HTTP routes and queue triggers. Thin: the work happens in hastegeo."""
