"""The default launcher: joblib's, with the sweep's runs started longest first (see local_launcher.py)."""
