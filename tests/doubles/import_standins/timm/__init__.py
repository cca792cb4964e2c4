"""Import-only stand-in for timm (a test double)."""
