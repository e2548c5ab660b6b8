"""A Hydra launcher that runs each job of a sweep as a Ray task (see ray_launcher.py)."""
