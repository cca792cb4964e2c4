"""GitHub access: the gateway protocol, the one PyGithub module, and settings."""
