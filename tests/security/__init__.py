"""Security tests: hostile input, path safety, outbound-fetch policy and secret leakage."""
