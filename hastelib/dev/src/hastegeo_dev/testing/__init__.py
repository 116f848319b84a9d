"""Test doubles held to the same contract as the real services; development only, never deployed."""
