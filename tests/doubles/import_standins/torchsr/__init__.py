"""Import-only stand-in for torchsr (a test double)."""
