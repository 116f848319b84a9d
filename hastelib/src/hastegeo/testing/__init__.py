"""Test doubles that ship with the package, held to the same contract as the real services."""
