"""System compiler command (command.py) and the on-disk cache (cache.py)."""
