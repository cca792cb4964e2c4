"""``python -m qnn_migrate``: the same command as ``qnn-migrate``."""

from qnn_migrate.cli import main

if __name__ == "__main__":
    main(prog_name="qnn-migrate")
