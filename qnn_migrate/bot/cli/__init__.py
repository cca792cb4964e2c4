"""Click entry points of the bot; the only readers of the environment."""
