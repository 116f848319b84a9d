"""Development-only parts of haste-compute; never installed in, nor imported by, the deployed app.

Kept free of imports so that ``python -m hastegeo_dev.package`` runs on a bare Python.
"""
