"""Property-based fuzz of the HTTP API, driven by its own OpenAPI document (schemathesis)."""
